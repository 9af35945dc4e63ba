#include "jit_kernel.h"

#include "executable_memory.h"
#include "plan_emitter.h"

namespace tessel {

JitKernel::~JitKernel() {
  release_executable(code_, mapped_size_);
}

bool emit_kernel(const EmitRequest &req, std::unique_ptr<JitKernel> *out, std::string *error) {
  std::string ignored;
  std::string &err = error != nullptr ? *error : ignored;
  if (out == nullptr || req.plan == nullptr) {
    err = "emit_kernel: null plan or output";
    return false;
  }
  // Start from ~4 KiB per plan node (an unrolled 6x16 k loop is ~2 KiB) and grow when Xbyak
  // reports the buffer full: plans differ a lot in how much straight-line code they unroll.
  size_t capacity = 64 * 1024 + req.plan->nodes.size() * 4096;
  for (int attempt = 0;; ++attempt) {
    PlanEmitter emitter(req, capacity);
    emitter.emit();
    if (!emitter.status(&err)) {
      if (emitter.code_too_big() && attempt < 6) {
        capacity *= 4;
        continue;
      }
      return false;
    }
    ExecutableCode code;
    if (!make_executable(emitter.getCode(), emitter.getSize(), &code, &err)) return false;
    auto kernel = std::make_unique<JitKernel>();
    kernel->code_ = code.code;
    kernel->code_size_ = code.size;
    kernel->mapped_size_ = code.mapped;
    kernel->fn_ = reinterpret_cast<KernelFn>(code.code);
    kernel->workspace_bytes_ = req.plan->workspace_bytes;
    kernel->parallel_iterations_ = req.plan->grid_iterations();
    kernel->name_ = req.name;
    *out = std::move(kernel);
    return true;
  }
}

}  // namespace tessel
