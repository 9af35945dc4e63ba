// The plan interpreter: executes any plan with plain scalar C++ on real arrays, following
// each leaf spec's meaning (not the kernel's tricks). It is the reference the JIT is checked
// against, and the test that the search's plans compute a matmul at all.
#pragma once
#include <cstdint>

#include "plan.h"

namespace tessel {

struct MatmulArgs {
  const float *a = nullptr;
  const float *b = nullptr;
  float *c = nullptr;
  int64_t lda = 0, ldb = 0, ldc = 0;  // in elements, of the layouts the plan's tensors name
  float alpha = 1;
};

void interpret(const Plan &plan, const MatmulArgs &args);

}  // namespace tessel
