#include "jit_kernel.h"

#include <algorithm>

#include "code_buffer.h"
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
  // The thread's buffer keeps the size earlier kernels needed; it grows when Xbyak reports it
  // full: plans differ a lot in how much straight-line code they unroll. 64 KiB holds every
  // benchmark plan (the largest, 1000^3, emits 44 KiB).
  CodeBuffer &buffer = thread_code_buffer();
  struct Trim {
    CodeBuffer &buffer;
    ~Trim() { buffer.trim(); }
  } trim{buffer};
  size_t capacity = std::max<size_t>(buffer.capacity(), 64 * 1024);
  for (int attempt = 0;; ++attempt) {
    // Never null into Xbyak: a null user buffer would make it allocate its own.
    uint8_t *const memory = buffer.reserve(capacity);
    if (memory == nullptr) {
      err = "emit_kernel: no memory for a code buffer of " + std::to_string(capacity) + " bytes";
      return false;
    }
    PlanEmitter emitter(req, memory, buffer.capacity());
    emitter.emit();
    if (!emitter.status(&err)) {
      if (emitter.code_too_big() && attempt < 6) {
        capacity = buffer.capacity() * 4;
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
