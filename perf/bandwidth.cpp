// Sustained read bandwidth, STREAM-style: the bound for memory-bound shapes (M = 1 reads all
// of B once). Sums a 512 MiB array with T threads; prints the best of 5 passes in GB/s.
//   bandwidth [threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <immintrin.h>

__attribute__((target("avx2"))) static float sum(const float *p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  float out[8];
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  return out[0] + out[7];
}

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  const size_t n = (size_t{512} << 20) / sizeof(float);
  float *data = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  for (size_t i = 0; i < n; ++i) data[i] = 1.0f;
  double best = 0;
  volatile float sink = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    std::vector<float> parts(threads);
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { parts[t] = sum(data + n / threads * t, n / threads); });
    for (auto &th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sink = sink + parts[0];
    best = std::max(best, n * sizeof(float) / s * 1e-9);
  }
  std::printf("%.2f\n", best);
  std::free(data);
  return 0;
}
