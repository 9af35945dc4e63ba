// Measures what the cost model's memory coefficients stand for (search/target.h,
// CostCoefficients), in core cycles on this host:
//   line cycles   the time to stream one 64-byte line from a level, with s rows read at once
//                 (a loop over columns reading s rows side by side, as a register tile does);
//   segment cycles the extra time of starting a new run of consecutive lines (a tile row that
//                 is not the continuation of the previous one), from the time of reading the
//                 same lines as short runs in a random order;
//   working set   the cycles per line of reading one working set over and over, from 2 to 64
//                 MiB: where it leaves the L3's speed, a call's operands stop being found in
//                 L3 by the next call (Target::usable_l3_share).
// The clock comes from the FMA peak (2 FMA pipes x 8 lanes x 2 flops per cycle).
//   memory_costs
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include <immintrin.h>

#include "fma_peak.h"

namespace {

double g_hz = 0;
volatile float g_sink = 0;

double cycles_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * g_hz;
}

// Reads `rows` rows of `cols` floats (row stride `ld`) side by side, 64 floats (4 lines) of
// each row at a time: `streams` runs of consecutive lines in flight at once.
__attribute__((target("avx2,fma"))) float read_side_by_side(const float *p, int64_t rows,
                                                            int64_t cols, int64_t ld,
                                                            int64_t streams) {
  // Eight add chains: enough to cover the add latency, so the loads set the pace.
  __m256 acc[8];
  for (__m256 &a : acc) a = _mm256_setzero_ps();
  for (int64_t r0 = 0; r0 < rows; r0 += streams)
    for (int64_t j = 0; j < cols; j += 64)
      for (int64_t r = r0; r < r0 + streams; ++r)
        for (int u = 0; u < 8; ++u)
          acc[u] = _mm256_add_ps(acc[u], _mm256_load_ps(p + r * ld + j + 8 * u));
  for (int i = 1; i < 8; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  return _mm256_cvtss_f32(acc[0]);
}

// Reads the runs listed in `starts` (each `run` floats), in that order.
__attribute__((target("avx2,fma"))) float read_runs(const float *p,
                                                    const std::vector<int64_t> &starts,
                                                    int64_t run) {
  __m256 acc[8];
  for (__m256 &a : acc) a = _mm256_setzero_ps();
  for (int64_t s : starts)
    for (int64_t j = 0; j < run; j += 64)
      for (int u = 0; u < 8; ++u) acc[u] = _mm256_add_ps(acc[u], _mm256_load_ps(p + s + j + 8 * u));
  for (int i = 1; i < 8; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  return _mm256_cvtss_f32(acc[0]);
}

template <class F>
double median_cycles(int repeats, F &&f) {
  std::vector<double> c;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    c.push_back(cycles_since(t0));
  }
  std::sort(c.begin(), c.end());
  return c[c.size() / 2];
}

void measure_level(const char *name, float *data, int64_t bytes, int repeats) {
  const int64_t ld = 16384;  // 64 KiB rows: every row starts a new page
  const int64_t rows = bytes / 4 / ld;
  const double lines = double(rows) * ld * 4 / 64;
  std::printf("%s (%lld KiB): cycles per line, s rows side by side:", name,
              static_cast<long long>(bytes >> 10));
  for (int64_t s : {1, 2, 4, 8, 16, 32}) {
    if (s > rows) break;
    const double c = median_cycles(
        repeats, [&] { g_sink = g_sink + read_side_by_side(data, rows / s * s, ld, ld, s); });
    std::printf("  s=%lld %.2f", static_cast<long long>(s),
                c / (double(rows / s * s) * ld * 4 / 64));
  }
  std::printf("\n");
  // Short runs in a random order against the same lines read as long runs.
  std::mt19937_64 rng(1);
  for (int64_t run_bytes : {256, 1024, 4096}) {
    const int64_t run = run_bytes / 4;
    std::vector<int64_t> starts(static_cast<size_t>(rows * ld / run));
    for (size_t i = 0; i < starts.size(); ++i) starts[i] = static_cast<int64_t>(i) * run;
    const double sequential =
        median_cycles(repeats, [&] { g_sink = g_sink + read_runs(data, starts, run); });
    std::shuffle(starts.begin(), starts.end(), rng);
    const double shuffled =
        median_cycles(repeats, [&] { g_sink = g_sink + read_runs(data, starts, run); });
    std::printf(
        "  runs of %5lld B: %.2f cycles per line in order, %.2f shuffled: %.0f cycles per run "
        "start\n",
        static_cast<long long>(run_bytes), sequential / lines, shuffled / lines,
        (shuffled - sequential) / double(starts.size()));
  }
}

void measure_working_sets(float *data, int64_t max_bytes) {
  std::printf("working set read over and over: cycles per line");
  for (int64_t mib : {2, 4, 8, 12, 14, 16, 20, 24, 32, 64}) {
    const int64_t bytes = mib << 20;
    if (bytes > max_bytes) break;
    const double c = median_cycles(
        9, [&] { g_sink = g_sink + read_side_by_side(data, 1, bytes / 4, bytes / 4, 1); });
    std::printf("  %lld MiB %.2f", static_cast<long long>(mib), c / (double(bytes) / 64));
  }
  std::printf("\n");
}

}  // namespace

int main() {
  const double peak = measure_fma_peak_gflops();
  g_hz = peak * 1e9 / 32;
  std::printf("FMA peak %.1f GFLOP/s: %.2f GHz\n", peak, g_hz * 1e-9);
  const int64_t dram = int64_t{256} << 20, l3 = int64_t{8} << 20, l2 = int64_t{256} << 10;
  float *data = static_cast<float *>(std::aligned_alloc(64, static_cast<size_t>(dram)));
  for (int64_t i = 0; i < dram / 4; ++i) data[i] = 1.0f;
  measure_level("DRAM", data, dram, 3);
  measure_level("L3", data, l3, 15);
  measure_level("L2", data, l2, 101);
  measure_working_sets(data, dram);
  std::free(data);
  return 0;
}
