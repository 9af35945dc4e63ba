// Running a compiled kernel: the per-thread workspace, and the parallel root loop on oneTBB.
#pragma once

#include "compiler.h"

namespace tessel::runtime {

void execute(const CompiledKernel &kernel, const float *a, const float *b, float *c, float alpha);

// C = beta * C over an m x n row-major tile (beta == 0 writes zeros without reading C).
void scale_c(float *c, int64_t m, int64_t n, int64_t ldc, float beta);

}  // namespace tessel::runtime
