// Single-thread GFLOP/s of tessel beside OpenBLAS (forced to its Haswell AVX2 kernels) for
// every shape of shapes.txt, in one run, as ratios and as percent of the measured FMA peak.
// Also the first-call split (search, emit, first run) of each tessel kernel.
//   gemm_bench [shapes.txt] [--threads T] [--reps R]
//
// The machine's speed drifts by 10-30% from minute to minute (shared VMs), so each shape is
// timed in R rounds of three ~20 ms batches: tessel, OpenBLAS (in alternating order) and the
// FMA loop of fma_peak.cpp. Each column is a median over the rounds, and percent of peak is
// given both of the FMA loop timed alongside (what the core delivered meanwhile) and of the
// best FMA loop at start-up (the quiet machine).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fma_peak.h"
#include "tessel/tessel.h"

namespace {

double seconds_of(const std::function<void()> &f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Calls of `f` in one batch lasting about 20 ms, after a warm-up call.
int batch_size(const std::function<void()> &f) {
  f();
  return std::max(1, int(0.02 / std::max(seconds_of(f), 1e-7)));
}

double seconds_per_call(const std::function<void()> &f, int batch) {
  return seconds_of([&] {
           for (int i = 0; i < batch; ++i) f();
         }) /
         batch;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  std::string path = "../shared/bench/shapes.txt";
  int threads = 1, reps = 11;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else
      path = argv[i];
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "gemm_bench: cannot read %s\n", path.c_str());
    return 2;
  }
  tessel_set_num_threads(threads);
  openblas_set_num_threads(threads);
  const double peak = measure_fma_peak_gflops() * threads;
  std::printf("OpenBLAS core: %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_corename(),
              std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "unset");
  std::printf("measured AVX2 FMA peak: %.1f GFLOP/s (%d thread%s)\n\n", peak, threads,
              threads > 1 ? "s" : "");
  std::printf(
      "| M | K | N | tessel GFLOP/s | OpenBLAS GFLOP/s | tessel/OpenBLAS | FMA loop alongside "
      "| tessel %% of it | tessel %% of quiet peak | first call: search ms | emit ms "
      "| first run ms |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::string line;
  std::vector<double> ratios;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    long long m, k, n;
    if (!(fields >> m >> k >> n)) continue;
    std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n));
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float &v : a) v = dist(rng);
    for (float &v : b) v = dist(rng);
    tessel_stats s0{}, s1{};
    tessel_get_stats(&s0);
    double first = seconds_of([&] {
      tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1, a.data(), k,
                   b.data(), n, 0, c.data(), n);
    });
    tessel_get_stats(&s1);
    const double search_ms = (s1.search_seconds - s0.search_seconds) * 1e3;
    const double emit_ms = (s1.emit_seconds - s0.emit_seconds) * 1e3;
    const double run_ms = first * 1e3 - search_ms - emit_ms;
    const double flops = 2.0 * m * n * k;
    const std::function<void()> run_tessel = [&] {
      tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1, a.data(), k,
                   b.data(), n, 0, c.data(), n);
    };
    const std::function<void()> run_blas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1, a.data(),
                  int(k), b.data(), int(n), 0, c.data(), int(n));
    };
    const int batch_tessel = batch_size(run_tessel), batch_blas = batch_size(run_blas);
    std::vector<double> g_tessel, g_blas, ratio, g_loop;
    for (int r = 0; r < reps; ++r) {
      double t_tessel, t_blas;
      if (r % 2 == 0) {
        t_tessel = seconds_per_call(run_tessel, batch_tessel);
        t_blas = seconds_per_call(run_blas, batch_blas);
      } else {
        t_blas = seconds_per_call(run_blas, batch_blas);
        t_tessel = seconds_per_call(run_tessel, batch_tessel);
      }
      g_tessel.push_back(flops / t_tessel * 1e-9);
      g_blas.push_back(flops / t_blas * 1e-9);
      ratio.push_back(t_blas / t_tessel);
      g_loop.push_back(fma_loop_gflops(0.02) * threads);
    }
    const double gt = median(g_tessel), gb = median(g_blas), loop = median(g_loop);
    ratios.push_back(median(ratio));
    std::printf(
        "| %lld | %lld | %lld | %.1f | %.1f | %.2f | %.1f | %.0f%% | %.0f%% | %.2f | %.2f | %.3f "
        "|\n",
        m, k, n, gt, gb, median(ratio), loop, 100 * gt / loop, 100 * gt / peak, search_ms, emit_ms,
        run_ms);
    std::fflush(stdout);
  }
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  std::printf("\ngeometric mean tessel/OpenBLAS: %.2f over %zu shapes\n",
              std::exp(log_sum / double(ratios.size())), ratios.size());
  return 0;
}
