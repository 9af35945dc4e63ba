// tessel_warm: kernels prepared ahead of time, in parallel.
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config.h"
#include "cpu.h"
#include "errors.h"
#include "problem.h"
#include "registry.h"
#include "tessel/tessel.h"

using namespace tessel::runtime;

extern "C" tessel_status tessel_warm(const tessel_sgemm_shape *shapes, size_t count,
                                     tessel_warm_progress progress, void *user) {
  try {
    if (count == 0) return TESSEL_OK;
    if (!shapes) return fail(TESSEL_INVALID_ARGUMENT, "shapes is NULL");
    if (!host_has_avx2_fma())
      return fail(TESSEL_UNSUPPORTED_CPU,
                  "tessel's kernels need AVX2 and FMA, which this CPU or "
                  "OS does not provide");
    const int threads = current_threads();
    std::vector<KernelKey> keys;
    for (size_t i = 0; i < count; ++i) {
      const tessel_sgemm_shape &s = shapes[i];
      const int layout = enum_bits(s.layout), ta = enum_bits(s.trans_a), tb = enum_bits(s.trans_b);
      int64_t ld[3] = {s.lda, s.ldb, s.ldc};
      if (s.m >= 0 && s.n >= 0 && s.k >= 0) {
        const auto tight = min_leading_dimensions(layout, ta, tb, s.m, s.n, s.k);
        for (int j = 0; j < 3; ++j)
          if (ld[j] == 0) ld[j] = tight[j];
      }
      Problem p;
      if (normalize_shape(layout, ta, tb, s.m, s.n, s.k, ld[0], ld[1], ld[2], &p) != TESSEL_OK)
        return fail(TESSEL_INVALID_ARGUMENT,
                    "shape " + std::to_string(i) + ": " + std::string(last_error()));
      // Empty problems never reach a kernel.
      keys.push_back(p.m && p.n && p.k ? kernel_key(p, s.beta != 0.0f, threads) : KernelKey{});
    }
    std::mutex mutex;
    size_t done = 0;
    tessel_status first = TESSEL_OK;
    std::string first_error;
    auto prepare = [&](size_t i) {
      tessel_status st = TESSEL_OK;
      if (keys[i].m) {
        std::shared_ptr<const CompiledKernel> kernel;
        st = Registry::instance().get(keys[i], &kernel);
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (st != TESSEL_OK && first == TESSEL_OK) {
        first = st;
        first_error = "shape " + std::to_string(i) + ": " + last_error();
      }
      ++done;
      if (progress) progress(done, count, i, st, user);
    };
    // Every core searches (the kernels themselves are made for `threads`); one shape needs
    // no worker threads started, nor the core count (glibc reads it from sysfs on each call:
    // 20 us of a warm first call on a 2-core VM).
    const unsigned hw = count == 1 ? 1 : std::thread::hardware_concurrency();
    if (hw <= 1) {
      for (size_t i = 0; i < count; ++i) prepare(i);
    } else {
      tbb::task_arena arena(static_cast<int>(hw));
      arena.execute([&] { tbb::parallel_for(size_t{0}, count, prepare); });
    }
    // Taking the lock orders every task's work before this thread's (oneTBB joins its tasks
    // inside libtbb, where ThreadSanitizer cannot see).
    std::lock_guard<std::mutex> lock(mutex);
    return first == TESSEL_OK ? TESSEL_OK : fail(first, first_error);
  } catch (const std::bad_alloc &) {
    return fail(TESSEL_OUT_OF_MEMORY, "out of memory");
  } catch (...) {
    return fail(TESSEL_INTERNAL_ERROR, "unexpected exception while warming");
  }
}
