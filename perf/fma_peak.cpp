// The machine's single-core AVX2 FMA peak: 12 independent FMA chains (enough to cover
// latency x throughput on every x86 core we target), compiled ahead with -mavx2 -mfma.
#include "fma_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

__attribute__((target("avx2,fma"))) double fma_loop_gflops(double seconds) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  // An iteration is 12 FMAs, 6 cycles at two FMAs a cycle: ~5e8 a second at 3 GHz.
  const long iters = std::max(1000L, static_cast<long>(seconds * 5e8));
  const auto t0 = std::chrono::steady_clock::now();
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  float sink = 0;
  for (int i = 0; i < 12; ++i) sink += _mm256_cvtss_f32(acc[i]);
  if (sink == 12345.0f) return 0;  // keep the chains alive
  return double(iters) * 12 * 16 / s * 1e-9;
}

double measure_fma_peak_gflops() {
  double best = 0;
  for (int rep = 0; rep < 7; ++rep) best = std::max(best, fma_loop_gflops(0.04));
  return best;
}
