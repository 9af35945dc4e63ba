#include "jit_kernel.h"

#include <algorithm>

#include "code_buffer.h"
#include "executable_memory.h"
#include "plan_emitter.h"
#include "thread_heap.h"

namespace tessel {
namespace {

// What a thread keeps between kernels (emission never nests on a thread): its code buffer and
// one emitter writing into it.
struct ThreadEmitter {
  CodeBuffer buffer;
  std::unique_ptr<PlanEmitter> emitter;  // destroyed first: it points into `buffer`
};

ThreadEmitter &thread_emitter() {
  static thread_local ThreadHeap<ThreadEmitter> thread;
  return thread.get();
}

}  // namespace

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
  // benchmark plan (the largest, 1000^3, emits 23 KiB).
  ThreadEmitter &thread = thread_emitter();
  struct Trim {
    CodeBuffer &buffer;
    ~Trim() { buffer.trim(); }
  } trim{thread.buffer};
  size_t capacity = std::max<size_t>(thread.buffer.capacity(), 64 * 1024);
  for (int attempt = 0;; ++attempt) {
    // Never null into Xbyak: a null user buffer would make it allocate its own.
    uint8_t *const memory = thread.buffer.reserve(capacity);
    if (memory == nullptr) {
      err = "emit_kernel: no memory for a code buffer of " + std::to_string(capacity) + " bytes";
      return false;
    }
    if (!thread.emitter)
      thread.emitter = std::make_unique<PlanEmitter>(memory, thread.buffer.capacity());
    PlanEmitter &emitter = *thread.emitter;
    emitter.emit(req, memory, thread.buffer.capacity());
    if (!emitter.status(&err)) {
      if (emitter.code_too_big() && attempt < 6) {
        capacity = thread.buffer.capacity() * 4;
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
    kernel->workspace_bytes_ = emitter.workspace_bytes();
    kernel->parallel_iterations_ = req.plan->grid_iterations();
    kernel->reduction_parts_ = req.plan->reduction_parts();
    kernel->copy_floats_ = emitter.copy_floats();
    kernel->outlined_tiles_ = emitter.outlined_tiles();
    kernel->tile_calls_ = emitter.tile_calls();
    kernel->carried_packs_ = emitter.carried_packs();
    kernel->name_ = req.name;
    *out = std::move(kernel);
    return true;
  }
}

}  // namespace tessel
