// Configuration from the environment, read once:
//   TESSEL_NUM_THREADS  threads per call (default: hardware concurrency)
//   TESSEL_VERBOSE=1    one line per new kernel on stderr, and a summary at exit
//   TESSEL_DUMP_DIR=dir each new kernel's machine code (<name>.bin) and plan (<name>.txt)
//   TESSEL_PERF_MAP=1   kernel names in /tmp/perf-<pid>.map for `perf report`
//   TESSEL_REGISTRY_CAPACITY  kernels kept in memory (default 4096)
//   TESSEL_DB=off|ro|rw       the memo database: not used, only read, or read and written
//                             (default rw)
//   TESSEL_CACHE_DIR=dir      where it lives (default $XDG_CACHE_HOME/tessel, else
//                             $HOME/.cache/tessel)
//   TESSEL_DB_MAX_MB          stop adding to it past this size (default 256)
//   TESSEL_SEARCH_THREADS=1|2 threads for one long search (default 2 with 2+ cores)
//   TESSEL_HELPER_LAG=cycles  the cost model's helper lag (search/target.h; perf/fork_join
//                             measures it)
#pragma once
#include <atomic>
#include <cstddef>
#include <string>

namespace tessel::runtime {

enum class DbMode { Off, ReadOnly, ReadWrite };

struct Config {
  int threads = 1;
  bool verbose = false;
  std::string dump_dir;
  bool perf_map = false;
  size_t registry_capacity = 4096;
  DbMode db_mode = DbMode::ReadWrite;
  std::string cache_dir;  // empty: no usable location (no HOME), the reason in cache_dir_problem
  std::string cache_dir_problem;
  long db_max_mb = 256;
  bool search_helper = false;  // a SearchHelper thread joins long searches
  int helper_lag = 0;          // cycles; 0: the cost model's own
};

const Config &config();

namespace detail {
// The thread count calls use; 0 until the first call resolves the configured default.
extern std::atomic<int> g_call_threads;
int resolve_threads();
}  // namespace detail

// Threads for the next call: tessel_set_num_threads() if set, else the configured default.
// One load: a repeated call checks it every time.
inline int current_threads() {
  const int t = detail::g_call_threads.load(std::memory_order_relaxed);
  return t > 0 ? t : detail::resolve_threads();
}
void set_threads(int threads);  // 0 = back to the default

}  // namespace tessel::runtime
