#include "executor.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

namespace tessel::runtime {
namespace {

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

// Packing buffers: one per thread, grown on demand and kept (a kernel's workspace is at
// most a few MiB: the search sizes packed blocks to the caches).
void *thread_workspace(int64_t bytes) {
  static thread_local std::unique_ptr<void, FreeDeleter> buffer;
  static thread_local int64_t capacity = 0;
  if (bytes <= capacity) return buffer.get();
  const int64_t rounded = (bytes + 4095) / 4096 * 4096;
  void *p = std::aligned_alloc(64, static_cast<size_t>(rounded));
  if (!p) throw std::bad_alloc();
  buffer.reset(p);
  capacity = rounded;
  return p;
}

// One arena per thread count, so a call uses exactly the threads its plan was made for.
tbb::task_arena &arena(int threads) {
  static std::mutex mutex;
  static std::unique_ptr<tbb::task_arena> arenas[256];
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = arenas[threads & 255];
  if (!slot) slot = std::make_unique<tbb::task_arena>(threads);
  return *slot;
}

}  // namespace

void execute(const CompiledKernel &kernel, const float *a, const float *b, float *c, float alpha) {
  const JitKernel &jit = *kernel.jit;
  KernelArgs args;
  args.a = a;
  args.b = b;
  args.c = c;
  args.alpha = alpha;
  const int64_t iterations = jit.parallel_iterations();
  if (iterations == 0) {
    args.workspace = thread_workspace(jit.workspace_bytes());
    jit.fn()(&args);
    return;
  }
  arena(kernel.key.threads).execute([&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, iterations, 1),
                      [&](const tbb::blocked_range<int64_t> &r) {
                        KernelArgs part = args;
                        part.begin = r.begin();
                        part.end = r.end();
                        part.workspace = thread_workspace(jit.workspace_bytes());
                        jit.fn()(&part);
                      });
  });
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
