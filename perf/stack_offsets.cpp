// A tiny call's time at every 16-byte depth of the stack within a page: how a store that
// straddles a 4 KiB page (or a load 4 KiB-aliased with a recent store) shows up. Each depth
// keeps its fastest of several passes, so the host's slow moments drop out and what is
// left slow depends on the depth.
//   stack_offsets [M K N]      (default 4 4 4; the memo database is off)
#include <alloca.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tessel/tessel.h"

namespace {

constexpr int kDepths = 4096 / 16;
constexpr int kPasses = 8;
constexpr int kCallsPerTiming = 5000;
// A depth is slow when its fastest time is this far above the median depth's.
constexpr double kSlow = 1.3;

int64_t m = 4, k = 4, n = 4;
std::vector<float> a, b, c;

[[gnu::noinline]] double ns_per_call() {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCallsPerTiming; ++i)
    tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1.0f, a.data(), k,
                 b.data(), n, 0.0f, c.data(), n);
  const auto ns = std::chrono::steady_clock::now() - start;
  return std::chrono::duration<double, std::nano>(ns).count() / kCallsPerTiming;
}

// ns_per_call() with the stack `bytes` deeper.
[[gnu::noinline]] double ns_per_call_deeper(int bytes) {
  volatile char *pad = static_cast<volatile char *>(alloca(bytes + 16));
  pad[0] = 0;
  return ns_per_call();
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 4) {
    m = std::atoll(argv[1]);
    k = std::atoll(argv[2]);
    n = std::atoll(argv[3]);
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: stack_offsets [M K N]\n");
    return 2;
  }
  if (m <= 0 || k <= 0 || n <= 0) {
    std::fprintf(stderr, "stack_offsets: M, K and N must be positive\n");
    return 2;
  }
  setenv("TESSEL_DB", "off", 1);
  a.assign(m * k, 1.0f);
  b.assign(k * n, 1.0f);
  c.assign(m * n, 0.0f);
  // A failed or wrong call is never timed as if it had worked: with all-ones operands every
  // element of C is k.
  const tessel_status status =
      tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1.0f, a.data(), k,
                   b.data(), n, 0.0f, c.data(), n);
  if (status != TESSEL_OK || std::any_of(c.begin(), c.end(), [](float x) { return x != k; })) {
    std::fprintf(stderr, "stack_offsets: the first call failed or was wrong (status %d)\n",
                 static_cast<int>(status));
    return 1;
  }
  for (int i = 0; i < 20; ++i) ns_per_call();
  std::vector<double> fastest(kDepths, 1e30);
  for (int pass = 0; pass < kPasses; ++pass)
    for (int depth = 0; depth < kDepths; ++depth)
      fastest[depth] = std::min(fastest[depth], ns_per_call_deeper(16 * depth));
  std::vector<double> sorted = fastest;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[kDepths / 2];
  int slow = 0;
  for (int depth = 0; depth < kDepths; ++depth) {
    if (fastest[depth] <= kSlow * median) continue;
    ++slow;
    std::printf("%d bytes deeper: %.1f ns a call\n", 16 * depth, fastest[depth]);
  }
  std::printf(
      "%lldx%lldx%lld: median depth %.1f ns a call; %d of %d depths %.0f%% slower or more\n",
      static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(n), median, slow,
      kDepths, (kSlow - 1) * 100);
}
