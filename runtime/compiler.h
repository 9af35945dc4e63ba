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

// A kernel keeps its code, not its plan: a plan is ~160 bytes a node (64 KB at 1000^3), and
// only `tessel run` and the dumps show one (plan_of rebuilds it).
struct CompiledKernel {
  KernelKey key;
  std::unique_ptr<JitKernel> jit;
  double search_seconds = 0;
  double emit_seconds = 0;
};

// The target of this host (cache sizes read once).
const Target &host_target();

// Each compiling thread keeps the memo of its searches for the next ones, until it holds
// more than this many entries: then the next search starts it over (compiler.cpp).
constexpr size_t kMaxThreadMemoEntries = size_t{1} << 19;
// The entries the calling thread's memo holds now.
size_t thread_memo_entries();

// Searches and emits. On failure returns a status with the message recorded as last error.
tessel_status compile(const KernelKey &key, std::shared_ptr<const CompiledKernel> *out);

// The plan compile() emits for `key` (replayed from the memo database when it holds the
// plan, as after a compile). On failure returns a status with the message recorded.
tessel_status plan_of(const KernelKey &key, Plan *out);

}  // namespace tessel::runtime
