// Times one library on a list of shapes: `peer_<lib> --isa` prints what ISA the library runs;
// `peer_<lib> --first-call M K N` prints the microseconds from before the library's setup to
// the end of its first call (initialization, code generation, the call itself);
// `peer_<lib> --threads T M K N [M K N ...]` prints one CSV line per shape:
//   library,threads,M,K,N,median GFLOP/s,min,max,max relative error
// and exits with status 1, printing why, when a first call's result is wrong.
// Each shape gets a first call (which also checks the result) and 20 ms of warm-up calls, then
// samples for at least 0.3 s (at least 5, at most 200), each timing back-to-back calls that
// last ~100 us; the median sample is what the tables report.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "peer.h"

namespace {

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
    const auto t0 = std::chrono::steady_clock::now();
    peer_setup(1);
    peer_sgemm(m, n, k, a.data(), b.data(), c.data());
    std::printf(
        "%.1f\n",
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    return 0;
  }
  if (argc < 6 || std::strcmp(argv[1], "--threads") || (argc - 3) % 3) {
    std::fprintf(stderr, "usage: %s --isa | --first-call M K N | --threads T M K N [M K N ...]\n",
                 argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[2]);
  peer_setup(threads);
  for (int i = 3; i + 2 < argc; i += 3) {
    const int64_t m = std::atoll(argv[i]), k = std::atoll(argv[i + 1]), n = std::atoll(argv[i + 2]);
    std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f);
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float &x : a) x = dist(rng);
    for (float &x : b) x = dist(rng);
    peer_sgemm(m, n, k, a.data(), b.data(), c.data());
    const double error = sampled_error(m, n, k, a, b, c);
    if (!(error <= 1)) {  // a failed or wrong call is never timed as if it had worked
      std::fprintf(stderr, "%s: wrong result for %lldx%lldx%lld (%.3g of the tolerance)\n",
                   peer_name(), (long long)m, (long long)k, (long long)n, error);
      return 1;
    }
    const double flops = 2.0 * double(m) * double(n) * double(k);
    using Clock = std::chrono::steady_clock;
    const auto seconds_since = [](Clock::time_point t) {
      return std::chrono::duration<double>(Clock::now() - t).count();
    };
    // Warm-up: calls for at least 20 ms. On the VMs measured, every library's first ~1 ms of
    // calls ran up to 30% slower than the rest.
    const auto warm = Clock::now();
    int64_t warm_calls = 0;
    do {
      peer_sgemm(m, n, k, a.data(), b.data(), c.data());
      ++warm_calls;
    } while (seconds_since(warm) < 0.02);
    // Each sample times back-to-back calls lasting ~100 us: a single call of a small shape is
    // shorter than a VM clock's jitter.
    const int64_t reps =
        std::max<int64_t>(1, std::llround(1e-4 / (seconds_since(warm) / double(warm_calls))));
    std::vector<double> rates;
    const auto start = Clock::now();
    while (rates.size() < 5 || (seconds_since(start) < 0.3 && rates.size() < 200)) {
      const auto t0 = Clock::now();
      for (int64_t r = 0; r < reps; ++r) peer_sgemm(m, n, k, a.data(), b.data(), c.data());
      rates.push_back(flops * double(reps) / seconds_since(t0) * 1e-9);
    }
    std::sort(rates.begin(), rates.end());
    std::printf("%s,%d,%lld,%lld,%lld,%.2f,%.2f,%.2f,%.3g\n", peer_name(), threads, (long long)m,
                (long long)k, (long long)n, rates[rates.size() / 2], rates.front(), rates.back(),
                error);
    std::fflush(stdout);
  }
  return 0;
}
