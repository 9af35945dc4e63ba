#include "executor.h"

#include "team.h"
#include "thread_state.h"

namespace tessel::runtime {
namespace {

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

// One parallel kernel's call: what each of its iterations needs.
struct ParallelCall {
  KernelFn fn;
  KernelArgs args;
  int64_t workspace_bytes;

  static void run_iteration(void *context, int64_t i) {
    const ParallelCall &call = *static_cast<const ParallelCall *>(context);
    KernelArgs part = call.args;
    part.begin = i;
    part.end = i + 1;
    part.workspace = ThreadState::get().workspace(call.workspace_bytes);
    call.fn(&part);
  }
};

}  // namespace

void execute_parallel(const CompiledKernel &kernel, const float *a, const float *b, float *c,
                      float alpha) {
  const JitKernel &jit = *kernel.jit;
  ParallelCall call{jit.fn(), {.a = a, .b = b, .c = c, .alpha = alpha}, jit.workspace_bytes()};
  const int64_t parts = jit.reduction_parts(), copy = jit.copy_floats();
  if (parts > 1) call.args.copies = ThreadState::get().copies((parts - 1) * copy);
  Team::of(kernel.key.threads).run(jit.parallel_iterations(), &ParallelCall::run_iteration, &call);
  if (parts > 1) add_copies(call.args.c, call.args.copies, parts - 1, copy, kernel.key);
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
