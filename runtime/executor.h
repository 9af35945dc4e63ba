// Running a compiled kernel: the per-thread workspace, and the parallel root loop on oneTBB.
#pragma once

#include "compiler.h"
#include "thread_state.h"

namespace tessel::runtime {

void execute_parallel(const CompiledKernel &kernel, const float *a, const float *b, float *c,
                      float alpha);

// Inline, so that a tiny serial kernel costs a few stores and a call on top of its own code.
// `state` is the calling thread's (ThreadState::get()), for a caller that has it already.
inline void execute(const CompiledKernel &kernel, const float *a, const float *b, float *c,
                    float alpha, ThreadState &state) {
  const JitKernel &jit = *kernel.jit;
  if (jit.parallel_iterations() != 0) return execute_parallel(kernel, a, b, c, alpha);
  // The workspace first: set as args is built, it leaves begin, end and copies as the only
  // defaults (see KernelArgs).
  void *workspace = state.workspace(jit.workspace_bytes());
  const KernelArgs args{.a = a, .b = b, .c = c, .workspace = workspace, .alpha = alpha};
  jit.fn()(&args);
}

inline void execute(const CompiledKernel &kernel, const float *a, const float *b, float *c,
                    float alpha) {
  execute(kernel, a, b, c, alpha, ThreadState::get());
}

// C = beta * C over an m x n row-major tile (beta == 0 writes zeros without reading C).
void scale_c(float *c, int64_t m, int64_t n, int64_t ldc, float beta);

}  // namespace tessel::runtime
