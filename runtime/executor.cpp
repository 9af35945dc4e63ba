#include "executor.h"

#include <mutex>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include "thread_state.h"

namespace tessel::runtime {
namespace {

// One arena per thread count, so a call uses exactly the threads its plan was made for.
// The arenas live until the process ends and are never destroyed: oneTBB's workers are not
// joined at exit, and a static destructor freeing an arena raced with a worker still leaving
// it (ThreadSanitizer saw it in CI).
tbb::task_arena &arena(int threads) {
  static std::mutex mutex;
  static tbb::task_arena *arenas[256];
  std::lock_guard<std::mutex> lock(mutex);
  tbb::task_arena *&slot = arenas[threads & 255];
  if (!slot) slot = new tbb::task_arena(threads);
  return *slot;
}

// C += the copies of C that the parts of a split of k wrote (row-major, C's ldc). Tiny next to
// the parts: the search splits k only for a small C over a long reduction.
void add_copies(float *c, const float *copies, int64_t count, int64_t copy_floats,
                const KernelKey &key) {
  for (int64_t i = 0; i < key.m; ++i) {
    float *row = c + i * key.ldc;
    for (int64_t p = 0; p < count; ++p) {
      const float *from = copies + p * copy_floats + i * key.ldc;
      for (int64_t j = 0; j < key.n; ++j) row[j] += from[j];
    }
  }
}

}  // namespace

void execute_parallel(const CompiledKernel &kernel, const KernelArgs &call) {
  const JitKernel &jit = *kernel.jit;
  // Read here, on the calling thread: the tasks then only read what their caller wrote
  // before parallel_for (the hand-over ThreadSanitizer cannot see, tests/tsan.supp).
  const KernelFn fn = jit.fn();
  const int64_t iterations = jit.parallel_iterations(), bytes = jit.workspace_bytes();
  const int64_t parts = jit.reduction_parts(), copy = jit.copy_floats();
  KernelArgs args = call;
  if (parts > 1) args.copies = ThreadState::get().copies((parts - 1) * copy);
  arena(kernel.key.threads).execute([&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, iterations, 1),
                      [&](const tbb::blocked_range<int64_t> &r) {
                        KernelArgs part = args;
                        part.begin = r.begin();
                        part.end = r.end();
                        part.workspace = ThreadState::get().workspace(bytes);
                        fn(&part);
                      });
  });
  if (parts > 1) add_copies(args.c, args.copies, parts - 1, copy, kernel.key);
}

void scale_c(float *c, int64_t m, int64_t n, int64_t ldc, float beta) {
  for (int64_t i = 0; i < m; ++i) {
    float *row = c + i * ldc;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < n; ++j) row[j] = 0.0f;
    } else {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

}  // namespace tessel::runtime
