// Sustained read bandwidth: the bound for memory-bound shapes (M = 1 reads all of B once).
// Each of T threads sums its share of a 512 MiB array as s runs read side by side (s = 1, 2,
// 4, 8: one run alone cannot keep enough misses in flight, so a kernel that reads a few rows
// of B at once beats a plain sequential sum); prints the best pass, in GB/s.
//   bandwidth [threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <immintrin.h>

// Sums n floats as `streams` equal runs read side by side, 64 floats of each at a time.
__attribute__((target("avx2"))) static float sum(const float *p, size_t n, size_t streams) {
  __m256 acc[8];
  for (__m256 &a : acc) a = _mm256_setzero_ps();
  const size_t run = n / streams / 64 * 64;
  for (size_t j = 0; j < run; j += 64)
    for (size_t s = 0; s < streams; ++s)
      for (int u = 0; u < 8; ++u)
        acc[u] = _mm256_add_ps(acc[u], _mm256_load_ps(p + s * run + j + 8 * u));
  for (int u = 1; u < 8; ++u) acc[0] = _mm256_add_ps(acc[0], acc[u]);
  return _mm256_cvtss_f32(acc[0]);
}

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  const size_t n = (size_t{512} << 20) / sizeof(float);
  float *data = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  for (size_t i = 0; i < n; ++i) data[i] = 1.0f;
  double best = 0;
  volatile float sink = 0;
  for (size_t streams : {1, 2, 4, 8})
    for (int pass = 0; pass < 3; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      std::vector<float> parts(threads);
      const size_t share = n / threads / (64 * streams) * (64 * streams);
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] { parts[t] = sum(data + share * t, share, streams); });
      for (auto &th : pool) th.join();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      sink = sink + parts[0];
      best = std::max(best, share * threads * sizeof(float) / s * 1e-9);
    }
  std::printf("%.2f\n", best);
  std::free(data);
  return 0;
}
