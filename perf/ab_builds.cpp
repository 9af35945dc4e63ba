// Two builds of libtessel in one process, timed in alternation: the way to see a change of a
// few percent on a machine whose speed drifts by more than that from minute to minute.
//
//   ab_builds OLD.so NEW.so [--threads T] [--aligned] [--trans-b] [--alpha A] [--beta B]
//             [--b-copies N] M K N [M K N ...]
//
// Each library is loaded with dlopen(RTLD_LOCAL), so each keeps its own registry and
// statics. Per shape: 201 rounds, each timing a batch of calls with one build then the
// other (the order alternates), after a warm-up. Prints the median time per call of each and
// the median of the per-round ratios old/new with its quartiles: above 1 means the new
// build is faster. Operands sit 16 bytes past a page boundary, as big mallocs place them
// (and the peer benchmark's std::vectors of 128 KiB or more: smaller ones sit wherever the
// heap has room), unless --aligned. --trans-b stores B as n x k (a Linear layer's weight,
// C = A W^T). --b-copies N makes calls take N copies of B in turn: a B that fits in L3 then
// comes from memory, as a model's weights do layer after layer. The memo database is off
// (TESSEL_DB=off): this times kernels, not first calls. For an A/A check of the machine's
// noise, give two copies of one library: dlopen loads one path only once. With --threads
// above 1 the two builds share oneTBB's workers and the one loaded first is favoured (A/A at
// 64^3: 0.84), so parallel plans are compared in separate processes instead.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tessel/tessel.h"

namespace {

using Sgemm = tessel_status (*)(tessel_layout, tessel_transpose, tessel_transpose, int64_t, int64_t,
                                int64_t, float, const float *, int64_t, const float *, int64_t,
                                float, float *, int64_t);
using SetThreads = tessel_status (*)(int);

struct Build {
  void *handle = nullptr;
  Sgemm sgemm = nullptr;
};

bool load(const char *path, int threads, Build *out) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "ab_builds: %s\n", dlerror());
    return false;
  }
  out->handle = handle;
  out->sgemm = reinterpret_cast<Sgemm>(dlsym(handle, "tessel_sgemm"));
  auto set_threads = reinterpret_cast<SetThreads>(dlsym(handle, "tessel_set_num_threads"));
  if (!out->sgemm || !set_threads) {
    std::fprintf(stderr, "ab_builds: %s does not export the tessel C API\n", path);
    return false;
  }
  set_threads(threads);
  return true;
}

// A buffer of `count` floats starting 16 bytes past a page boundary (or at one).
struct Placed {
  explicit Placed(size_t count, bool aligned) {
    const size_t bytes = (count * 4 + 16 + 4095) / 4096 * 4096;
    base = static_cast<float *>(std::aligned_alloc(4096, bytes));
    data = base + (aligned ? 0 : 4);
  }
  ~Placed() { std::free(base); }
  Placed(const Placed &) = delete;
  Placed &operator=(const Placed &) = delete;
  float *base, *data;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  int threads = 1, b_copies = 1;
  bool aligned = false, trans_b = false;
  float alpha = 1.0f, beta = 0.0f;
  std::vector<int64_t> dims;
  std::vector<const char *> libraries;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--alpha") && i + 1 < argc) {
      alpha = std::strtof(argv[++i], nullptr);
    } else if (!std::strcmp(argv[i], "--beta") && i + 1 < argc) {
      beta = std::strtof(argv[++i], nullptr);
    } else if (!std::strcmp(argv[i], "--b-copies") && i + 1 < argc) {
      b_copies = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--aligned")) {
      aligned = true;
    } else if (!std::strcmp(argv[i], "--trans-b")) {
      trans_b = true;
    } else if (libraries.size() < 2) {
      libraries.push_back(argv[i]);
    } else {
      dims.push_back(std::atoll(argv[i]));
    }
  }
  if (libraries.size() != 2 || dims.empty() || dims.size() % 3 != 0 || threads < 1 ||
      b_copies < 1) {
    std::fprintf(stderr,
                 "usage: %s OLD.so NEW.so [--threads T] [--aligned] [--trans-b] [--alpha A] "
                 "[--beta B] [--b-copies N] M K N [M K N ...]\n",
                 argv[0]);
    return 2;
  }
  setenv("TESSEL_DB", "off", 1);
  Build builds[2];
  for (int b = 0; b < 2; ++b)
    if (!load(libraries[b], threads, &builds[b])) return 1;
  if (builds[0].handle == builds[1].handle) {
    std::fprintf(stderr, "ab_builds: both paths load the same file; compare two copies\n");
    return 2;
  }
  std::printf("| M | K | N | old ns/call | new ns/call | old/new (median of rounds) | q1 | q3 |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (size_t s = 0; s < dims.size(); s += 3) {
    const int64_t m = dims[s], k = dims[s + 1], n = dims[s + 2];
    if (m < 1 || k < 1 || n < 1) {
      std::fprintf(stderr, "ab_builds: bad shape %lld %lld %lld\n", (long long)m, (long long)k,
                   (long long)n);
      return 2;
    }
    Placed a(size_t(m * k), aligned), c(size_t(m * n), aligned);
    std::vector<std::unique_ptr<Placed>> bs;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (int64_t i = 0; i < m * k; ++i) a.data[i] = dist(rng);
    for (int copy = 0; copy < b_copies; ++copy) {
      bs.push_back(std::make_unique<Placed>(size_t(k * n), aligned));
      for (int64_t i = 0; i < k * n; ++i) bs.back()->data[i] = dist(rng);
    }
    // A batch lasts ~100 us at 100 GFLOP/s: long against the clock, short against drift.
    const double flops = 2.0 * double(m) * double(n) * double(k);
    const int64_t calls = std::clamp<int64_t>(int64_t(1e7 / flops), 1, 2000);
    size_t next_b = 0;  // the copy of B the next call takes
    auto batch = [&](const Build &build) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < calls; ++i, next_b = (next_b + 1) % bs.size())
        build.sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, trans_b ? TESSEL_TRANS : TESSEL_NO_TRANS, m,
                    n, k, alpha, a.data, k, bs[next_b]->data, trans_b ? k : n, beta, c.data, n);
      return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
                 .count() /
             double(calls);
    };
    for (int w = 0; w < 10; ++w) batch(builds[w % 2]);
    constexpr int kRounds = 201;
    std::vector<double> times[2], ratios;
    for (int r = 0; r < kRounds; ++r) {
      double t[2];
      const int first = r % 2;
      t[first] = batch(builds[first]);
      t[1 - first] = batch(builds[1 - first]);
      times[0].push_back(t[0]);
      times[1].push_back(t[1]);
      ratios.push_back(t[0] / t[1]);
    }
    std::sort(ratios.begin(), ratios.end());
    std::printf("| %lld | %lld | %lld | %.1f | %.1f | %.3f | %.3f | %.3f |\n", (long long)m,
                (long long)k, (long long)n, median(times[0]), median(times[1]), ratios[kRounds / 2],
                ratios[kRounds / 4], ratios[3 * kRounds / 4]);
    std::fflush(stdout);
  }
  return 0;
}
