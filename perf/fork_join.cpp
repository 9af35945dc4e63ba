// What a parallel loop costs beyond its work: the cost model's fork_join (search/target.h).
// Runs T iterations on tessel's team of T threads (runtime/team.h), the way
// runtime/executor.cpp runs a parallel kernel, and for comparison with oneTBB's parallel_for
// in a T-slot arena, back to back as an inference loop calls a small GEMM; each iteration
// spins for W microseconds. Prints, per W, the median call time minus W, in microseconds
// and in core cycles (the clock from the measured FMA peak: 32 flops a cycle with ymm), and
// the helper lag that the team's overhead with 2 us iterations implies.
//   fork_join [threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include "fma_peak.h"
#include "team.h"

namespace {

using Clock = std::chrono::steady_clock;

void spin(double us) {
  const auto end = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < end) {
  }
}

void spin_iteration(void *work_us, int64_t) {
  spin(*static_cast<double *>(work_us));
}

}  // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::max(2, std::atoi(argv[1])) : 2;
  const double ghz = measure_fma_peak_gflops() / 32;
  tbb::task_arena arena(threads);
  tessel::runtime::Team &team = tessel::runtime::Team::of(threads);
  std::printf("fork_join: %d threads, clock %.2f GHz\n", threads, ghz);
  double lag_cycles = 0;
  std::printf("%-22s %10s %14s %14s %12s\n", "", "work (us)", "overhead (us)", "min (us)",
              "cycles");
  for (const bool tessel : {true, false}) {
    for (double work : {0.0, 2.0, 5.0, 20.0}) {
      std::vector<double> overhead;
      for (int call = 0; call < 4000; ++call) {
        const auto t0 = Clock::now();
        if (tessel) {
          team.run(threads, &spin_iteration, &work);
        } else {
          arena.execute([&] {
            tbb::parallel_for(tbb::blocked_range<int>(0, threads, 1),
                              [&](const tbb::blocked_range<int> &r) {
                                for (int i = r.begin(); i < r.end(); ++i) spin(work);
                              });
          });
        }
        overhead.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() -
                           work);
      }
      std::sort(overhead.begin(), overhead.end());
      const double median = overhead[overhead.size() / 2];
      std::printf("%-22s %10.1f %14.2f %14.2f %12.0f\n",
                  tessel ? "tessel team" : "oneTBB parallel_for", work, median, overhead.front(),
                  median * ghz * 1e3);
      if (tessel && work == 2.0) lag_cycles = median * ghz * 1e3;
    }
  }
  // With equal iterations the caller waits for the helper, which started late and is seen
  // done late: the time beyond the work is the cost model's helper lag.
  std::printf("helper lag: %.0f cycles (search/target.h's helper_lag; TESSEL_HELPER_LAG sets it)\n",
              lag_cycles);
  return 0;
}
