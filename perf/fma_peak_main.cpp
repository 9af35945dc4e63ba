// Prints the machine's AVX2 FMA throughput in GFLOP/s (fma_peak.cpp):
//   fma_peak                            the best of several single-core runs (the quiet peak)
//   fma_peak --once SECONDS [THREADS]   one run of the loop on THREADS cores at once, summed
//                                       (what the cores deliver right now, timed beside a
//                                       benchmark on a machine whose speed drifts)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "fma_peak.h"

int main(int argc, char **argv) {
  if (argc == 1) {
    std::printf("%.2f\n", measure_fma_peak_gflops());
    return 0;
  }
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  if (std::strcmp(argv[1], "--once") != 0 || argc > 4 || !(seconds > 0 && seconds <= 10) ||
      threads < 1 || threads > 256) {
    std::fprintf(stderr, "usage: fma_peak [--once SECONDS [THREADS]]\n");
    return 2;
  }
  std::vector<double> gflops(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&gflops, seconds, t] { gflops[t] = fma_loop_gflops(seconds); });
  double sum = 0;
  for (int t = 0; t < threads; ++t) {
    pool[t].join();
    sum += gflops[t];
  }
  std::printf("%.2f\n", sum);
  return 0;
}
