// The C API (include/tessel/tessel.h). Nothing throws past this file.
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "compiler.h"
#include "config.h"
#include "cpu.h"
#include "errors.h"
#include "executor.h"
#include "problem.h"
#include "registry.h"
#include "tessel/tessel.h"
#include "thread_state.h"

using namespace tessel::runtime;

struct tessel_sgemm_kernel_s {
  Problem shape;
  // The kernel each kind of run (overwrite: beta == 0, accumulate) ran last, which the next
  // run of that kind with as many threads runs without a lookup. Each is one of `held`,
  // which keeps every kernel this handle ran alive until the handle is destroyed: another
  // thread may still be running one that a run with another thread count replaced here.
  std::atomic<const CompiledKernel *> last[2] = {};
  std::mutex mutex;                                         // guards `held`
  std::vector<std::shared_ptr<const CompiledKernel>> held;  // at most one per key

  // Keeps `k` (or the kernel of its key held already) for the later runs; returns it.
  const CompiledKernel &hold(std::shared_ptr<const CompiledKernel> k) {
    std::lock_guard<std::mutex> lock(mutex);
    auto same_key = [&](const auto &h) { return h->key == k->key; };
    auto it = std::find_if(held.begin(), held.end(), same_key);
    if (it == held.end()) it = held.insert(held.end(), std::move(k));
    last[(*it)->key.accumulate].store(it->get(), std::memory_order_release);
    return **it;
  }
};

namespace {

// Runs a validated, bound problem with `threads` threads. `handle` (may be null) keeps the
// kernel for its later runs. `ran` (may be null) is set to the kernel that ran, if one did
// and it is among this thread's recent kernels (so the caller may keep it for a repeat).
tessel_status run(const Problem &p, float alpha, float beta, int threads,
                  tessel_sgemm_kernel handle, const CompiledKernel **ran) {
  if (p.m == 0 || p.n == 0) return TESSEL_OK;
  if (alpha == 0.0f || p.k == 0) {
    if (beta != 1.0f) scale_c(p.c, p.m, p.n, p.ldc, beta);
    return TESSEL_OK;
  }
  if (!host_has_avx2_fma())
    return fail(TESSEL_UNSUPPORTED_CPU,
                "tessel's kernels need AVX2 and FMA, which this CPU or "
                "OS does not provide");
  const bool accumulate = beta != 0.0f;
  if (accumulate && beta != 1.0f) scale_c(p.c, p.m, p.n, p.ldc, beta);
  const KernelKey key = kernel_key(p, accumulate, threads);
  Registry &registry = Registry::instance();
  if (!handle) {
    if (const CompiledKernel *recent = registry.recent(key)) {
      execute(*recent, p.a, p.b, p.c, alpha);
      if (ran) *ran = recent;
      return TESSEL_OK;
    }
  }
  std::shared_ptr<const CompiledKernel> kernel;
  const tessel_status st = registry.get(key, &kernel);
  if (st != TESSEL_OK) return st;
  if (ran) *ran = kernel.get();  // get() made it the most recent
  execute(handle ? handle->hold(std::move(kernel)) : *kernel, p.a, p.b, p.c, alpha);
  return TESSEL_OK;
}

// The whole call, checks first; remembers a call that ran a kernel for its repeats. Kept out
// of line so that tessel_sgemm's repeat path needs no stack frame of its size.
[[gnu::noinline]] tessel_status sgemm(int layout, int trans_a, int trans_b, int64_t m, int64_t n,
                                      int64_t k, float alpha, const float *a, int64_t lda,
                                      const float *b, int64_t ldb, float beta, float *c,
                                      int64_t ldc) {
  Problem p;
  tessel_status st = normalize_shape(layout, trans_a, trans_b, m, n, k, lda, ldb, ldc, &p);
  if (st != TESSEL_OK) return st;
  st = bind_operands(p, alpha, a, b, c);
  if (st != TESSEL_OK) return st;
  const int threads = current_threads();
  const CompiledKernel *ran = nullptr;
  st = run(p, alpha, beta, threads, nullptr, &ran);
  if (st == TESSEL_OK && ran) {
    RecentCall call;
    call.m = m, call.n = n, call.k = k;
    call.lda = lda, call.ldb = ldb, call.ldc = ldc;
    call.kernel = ran;
    call.layout = static_cast<uint16_t>(layout);  // values that passed the checks
    call.trans_a = static_cast<uint16_t>(trans_a);
    call.trans_b = static_cast<uint16_t>(trans_b);
    call.threads = static_cast<uint8_t>(threads);
    call.accumulate = beta != 0.0f;
    ThreadState::get().recent_calls.slot(m, n, k) = call;
  }
  return st;
}

template <class F>
tessel_status guarded(F &&f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return fail(TESSEL_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(TESSEL_INTERNAL_ERROR, e.what());
  } catch (...) {
    return fail(TESSEL_INTERNAL_ERROR, "unknown exception");
  }
}

}  // namespace

extern "C" {

tessel_status tessel_sgemm(tessel_layout layout, tessel_transpose trans_a, tessel_transpose trans_b,
                           int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                           int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                           int64_t ldc) {
  const int layout_bits = enum_bits(layout), ta = enum_bits(trans_a), tb = enum_bits(trans_b);
  // A repeat of one of this thread's recent calls (tiny GEMMs in a loop spend more in the
  // checks and the lookup than in the kernel): the shape arguments passed the same checks
  // then, so only what may differ is checked here, the operands; anything unusual (a NULL
  // pointer, alpha == 0) takes the full path, which reports or handles it exactly as always.
  if (ThreadState *state = t_thread_state) {
    const RecentCall &call = state->recent_calls.slot(m, n, k);
    const bool accumulate = beta != 0.0f;
    if (call.kernel && alpha != 0.0f && a && b && c &&
        call.repeats(layout_bits, ta, tb, m, n, k, lda, ldb, ldc, accumulate, current_threads())) {
      return guarded([&] {
        if (accumulate && beta != 1.0f) {
          if (call.swapped())
            scale_c(c, n, m, ldc, beta);
          else
            scale_c(c, m, n, ldc, beta);
        }
        state->count_hit();
        if (call.swapped())
          execute(*call.kernel, b, a, c, alpha, *state);
        else
          execute(*call.kernel, a, b, c, alpha, *state);
        return TESSEL_OK;
      });
    }
  }
  return guarded(
      [&] { return sgemm(layout_bits, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
}

const char *tessel_status_string(tessel_status status) {
  switch (enum_bits(status)) {
    case TESSEL_OK:
      return "success";
    case TESSEL_INVALID_ARGUMENT:
      return "invalid argument";
    case TESSEL_UNSUPPORTED_CPU:
      return "unsupported CPU (AVX2 and FMA required)";
    case TESSEL_OUT_OF_MEMORY:
      return "out of memory";
    case TESSEL_NO_PLAN:
      return "no plan found (internal error)";
    case TESSEL_CODEGEN_ERROR:
      return "code generation failed (internal error)";
    case TESSEL_INTERNAL_ERROR:
      return "internal error";
  }
  return "unknown status";
}

const char *tessel_last_error(void) {
  return last_error();
}

tessel_status tessel_set_num_threads(int threads) {
  if (threads < 0 || threads > 255)
    return fail(TESSEL_INVALID_ARGUMENT, "threads must be from 0 (default) to 255");
  set_threads(threads);
  return TESSEL_OK;
}

int tessel_get_num_threads(void) {
  return current_threads();
}

tessel_status tessel_sgemm_kernel_create(tessel_layout layout, tessel_transpose trans_a,
                                         tessel_transpose trans_b, int64_t m, int64_t n, int64_t k,
                                         int64_t lda, int64_t ldb, int64_t ldc,
                                         tessel_sgemm_kernel *out) {
  return guarded([&] {
    if (!out) return fail(TESSEL_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    Problem p;
    const tessel_status st = normalize_shape(enum_bits(layout), enum_bits(trans_a),
                                             enum_bits(trans_b), m, n, k, lda, ldb, ldc, &p);
    if (st != TESSEL_OK) return st;
    auto *kernel = new tessel_sgemm_kernel_s;  // owned by the caller
    kernel->shape = p;
    *out = kernel;
    return TESSEL_OK;
  });
}

tessel_status tessel_sgemm_kernel_run(tessel_sgemm_kernel kernel, float alpha, const float *a,
                                      const float *b, float beta, float *c) {
  // A run like one before it: the kernel that ran then. Anything unusual (a NULL pointer,
  // alpha == 0, another thread count) takes the full path below.
  if (kernel && alpha != 0.0f && a && b && c) {
    const bool accumulate = beta != 0.0f;
    const CompiledKernel *last = kernel->last[accumulate].load(std::memory_order_acquire);
    if (last && last->key.threads == current_threads()) {
      return guarded([&] {
        const Problem &p = kernel->shape;
        if (accumulate && beta != 1.0f) scale_c(c, p.m, p.n, p.ldc, beta);
        ThreadState &state = ThreadState::get();
        state.count_hit();
        if (p.swapped)
          execute(*last, b, a, c, alpha, state);
        else
          execute(*last, a, b, c, alpha, state);
        return TESSEL_OK;
      });
    }
  }
  return guarded([&] {
    if (!kernel) return fail(TESSEL_INVALID_ARGUMENT, "kernel is NULL");
    Problem p = kernel->shape;
    const tessel_status st = bind_operands(p, alpha, a, b, c);
    if (st != TESSEL_OK) return st;
    return run(p, alpha, beta, current_threads(), kernel, nullptr);
  });
}

void tessel_sgemm_kernel_destroy(tessel_sgemm_kernel kernel) {
  delete kernel;
}

tessel_status tessel_get_stats(tessel_stats *out) {
  if (!out) return fail(TESSEL_INVALID_ARGUMENT, "out is NULL");
  const Registry::Stats s = Registry::instance().stats();
  *out = tessel_stats{s.kernels, s.hits, s.misses, s.evictions, s.search_seconds, s.emit_seconds};
  return TESSEL_OK;
}

}  // extern "C"
