// Compilation of one kernel: key -> spec -> search -> plan -> machine code, with the
// observability hooks (verbose line, code and plan dumps, perf map).
#pragma once
#include <memory>
#include <string>

#include "jit_kernel.h"
#include "plan.h"
#include "problem.h"
#include "target.h"

namespace tessel::runtime {

struct CompiledKernel {
  KernelKey key;
  Plan plan;
  std::unique_ptr<JitKernel> jit;
  double search_seconds = 0;
  double emit_seconds = 0;
};

// The target of this host (cache sizes read once).
const Target &host_target();

// Searches and emits. On failure returns a status with the message recorded as last error.
tessel_status compile(const KernelKey &key, std::shared_ptr<const CompiledKernel> *out);

}  // namespace tessel::runtime
