// Times one library on a list of shapes: `peer_<lib> --isa` prints what ISA the library runs;
// `peer_<lib> --first-call M K N` prints the microseconds from before the library's setup to
// the end of its first call (initialization, code generation, the call itself);
// `peer_<lib> --threads T M K N [M K N ...]` prints one CSV line per shape:
//   library,threads,M,K,N,median GFLOP/s,min,max,max relative error
// and exits with status 1, printing why, when a first call's result is wrong.
// Each shape gets a first call (which also checks the result) and 20 ms of warm-up calls, then
// samples for at least 0.3 s (at least 5, at most 200), each timing back-to-back calls that
// last ~100 us; the median sample is what the tables report.
//
// `peer_<lib> --against LIBTESSEL.so M K N [M K N ...]` times the library and tessel (loaded
// from LIBTESSEL.so) in this one process, one thread each, on the same operands: each sample
// is a batch of one then a batch of the other (the order alternates), so the pair shares the
// machine's state of that moment, which separate processes minutes apart do not; pairs for at
// least 1 s (at least 15, at most 200: over eight pairs of ~20 ms calls, 1024^3's median ratio
// still moved by 5% from run to run). Prints:
//   library,1,M,K,N,library median GFLOP/s,tessel median GFLOP/s,median tessel/library,q1,q3
// One thread only: two libraries' worker threads would wait for work on the same two cores
// (OpenMP's spin before they sleep), each slowing the other.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "peer.h"
#include "tessel/tessel.h"

namespace {

using Clock = std::chrono::steady_clock;
using Sgemm = decltype(&tessel_sgemm);

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Largest |C - A*B| over a few sampled entries, relative to the tolerance of a k-term sum.
double sampled_error(int64_t m, int64_t n, int64_t k, const std::vector<float> &a,
                     const std::vector<float> &b, const std::vector<float> &c) {
  std::mt19937_64 rng(7);
  double worst = 0;
  for (int s = 0; s < 64; ++s) {
    const int64_t i = static_cast<int64_t>(rng() % m), j = static_cast<int64_t>(rng() % n);
    double want = 0;
    for (int64_t p = 0; p < k; ++p) want += double(a[i * k + p]) * double(b[p * n + j]);
    worst = std::max(worst, std::abs(want - c[i * n + j]) / (1e-5 * double(k + 8)));
  }
  return worst;
}

struct Shape {
  int64_t m, k, n;
  std::vector<float> a, b, c;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

// The library this executable was linked with.
struct Peer {
  void operator()(Shape &s) const { peer_sgemm(s.m, s.n, s.k, s.a.data(), s.b.data(), s.c.data()); }
};

// tessel's C API from a library loaded apart (RTLD_LOCAL).
struct Tessel {
  Sgemm sgemm;
  void operator()(Shape &s) const {
    sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, s.m, s.n, s.k, 1.0f, s.a.data(), s.k,
          s.b.data(), s.n, 0.0f, s.c.data(), s.n);
  }
};

Shape make_shape(int64_t m, int64_t k, int64_t n) {
  Shape s{m,
          k,
          n,
          std::vector<float>(m * k),
          std::vector<float>(k * n),
          std::vector<float>(m * n, 0.0f)};
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float &x : s.a) x = dist(rng);
  for (float &x : s.b) x = dist(rng);
  return s;
}

// A first call, checked: a failed or wrong call is never timed as if it had worked. Returns
// the error (in tolerances), negative after printing why when it is too large.
template <class Gemm>
double checked_first_call(Shape &s, const Gemm &gemm, const char *name) {
  gemm(s);
  const double error = sampled_error(s.m, s.n, s.k, s.a, s.b, s.c);
  if (error <= 1) return error;
  std::fprintf(stderr, "%s: wrong result for %lldx%lldx%lld (%.3g of the tolerance)\n", name,
               (long long)s.m, (long long)s.k, (long long)s.n, error);
  return -1;
}

// Warm-up: calls for at least 20 ms (on the VMs measured, every library's first ~1 ms of calls
// ran up to 30% slower than the rest). Returns how many back-to-back calls last ~100 us: a
// single call of a small shape is shorter than a VM clock's jitter.
template <class Gemm>
int64_t warm_up(Shape &s, const Gemm &gemm) {
  const auto warm = Clock::now();
  int64_t calls = 0;
  do {
    gemm(s);
    ++calls;
  } while (seconds_since(warm) < 0.02);
  return std::max<int64_t>(1, std::llround(1e-4 / (seconds_since(warm) / double(calls))));
}

// GFLOP/s of `reps` back-to-back calls.
template <class Gemm>
double batch(Shape &s, const Gemm &gemm, int64_t reps) {
  const auto t0 = Clock::now();
  for (int64_t r = 0; r < reps; ++r) gemm(s);
  return s.flops() * double(reps) / seconds_since(t0) * 1e-9;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * double(v.size() - 1) + 0.5)];
}

// Loads tessel's C API, set to one thread; nullptr after printing why it could not.
Sgemm load_tessel(const char *path) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "%s\n", dlerror());
    return nullptr;
  }
  const auto sgemm = reinterpret_cast<Sgemm>(dlsym(handle, "tessel_sgemm"));
  const auto set_threads =
      reinterpret_cast<decltype(&tessel_set_num_threads)>(dlsym(handle, "tessel_set_num_threads"));
  if (!sgemm || !set_threads || set_threads(1) != TESSEL_OK) {
    std::fprintf(stderr, "%s does not export the tessel C API\n", path);
    return nullptr;
  }
  return sgemm;
}

int usage(const char *self) {
  std::fprintf(stderr,
               "usage: %s --isa | --first-call M K N | --threads T M K N [M K N ...] |\n"
               "       --against LIBTESSEL.so M K N [M K N ...]\n",
               self);
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 2 && !std::strcmp(argv[1], "--isa")) {
    peer_setup(1);
    std::printf("%s: %s\n", peer_name(), peer_isa().c_str());
    return 0;
  }
  if (argc == 5 && !std::strcmp(argv[1], "--first-call")) {
    const int64_t m = std::atoll(argv[2]), k = std::atoll(argv[3]), n = std::atoll(argv[4]);
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
    const auto t0 = Clock::now();
    peer_setup(1);
    peer_sgemm(m, n, k, a.data(), b.data(), c.data());
    std::printf("%.1f\n", seconds_since(t0) * 1e6);
    return 0;
  }
  const bool against = argc >= 6 && !std::strcmp(argv[1], "--against");
  if (argc < 6 || (!against && std::strcmp(argv[1], "--threads")) || (argc - 3) % 3)
    return usage(argv[0]);
  const int threads = against ? 1 : std::atoi(argv[2]);
  peer_setup(threads);
  const Peer peer;
  const Tessel tessel{against ? load_tessel(argv[2]) : nullptr};
  if (against && !tessel.sgemm) return 1;
  for (int i = 3; i + 2 < argc; i += 3) {
    Shape s = make_shape(std::atoll(argv[i]), std::atoll(argv[i + 1]), std::atoll(argv[i + 2]));
    const double error = checked_first_call(s, peer, peer_name());
    if (error < 0 || (against && checked_first_call(s, tessel, "tessel") < 0)) return 1;
    const int64_t reps = warm_up(s, peer);
    const int64_t tessel_reps = against ? warm_up(s, tessel) : 0;
    std::vector<double> rates, tessel_rates;
    const auto start = Clock::now();
    const size_t at_least = against ? 15 : 5;
    const double seconds = against ? 1.0 : 0.3;
    while (rates.size() < at_least || (seconds_since(start) < seconds && rates.size() < 200)) {
      // A pair is a batch of each, tessel first in every other pair.
      const bool tessel_first = against && rates.size() % 2;
      if (tessel_first) tessel_rates.push_back(batch(s, tessel, tessel_reps));
      rates.push_back(batch(s, peer, reps));
      if (against && !tessel_first) tessel_rates.push_back(batch(s, tessel, tessel_reps));
    }
    if (against) {
      std::vector<double> ratios(rates.size());
      for (size_t j = 0; j < rates.size(); ++j) ratios[j] = tessel_rates[j] / rates[j];
      std::printf("%s,1,%lld,%lld,%lld,%.2f,%.2f,%.4f,%.4f,%.4f\n", peer_name(), (long long)s.m,
                  (long long)s.k, (long long)s.n, quantile(rates, 0.5), quantile(tessel_rates, 0.5),
                  quantile(ratios, 0.5), quantile(ratios, 0.25), quantile(ratios, 0.75));
    } else {
      std::printf("%s,%d,%lld,%lld,%lld,%.2f,%.2f,%.2f,%.3g\n", peer_name(), threads,
                  (long long)s.m, (long long)s.k, (long long)s.n, quantile(rates, 0.5),
                  quantile(rates, 0), quantile(rates, 1), error);
    }
    std::fflush(stdout);
  }
  return 0;
}
