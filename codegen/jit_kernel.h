// A kernel emitted as machine code, and the one call that makes it from a plan.
//
// ABI of every emitted kernel (System V x86-64): void fn(const KernelArgs *args).
// Leading dimensions are baked into the code as constants (see the DESIGN NOTE in spec.h);
// alpha is read at run time. A kernel whose plan's root is a parallel loop runs iterations
// [begin, end) of that loop (iteration `trips` is the remainder tile, if any); any other
// kernel ignores begin/end and runs everything.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plan.h"

namespace tessel {

// The fields a serial call leaves at their defaults (begin, end, copies) make one run from a
// 16-byte boundary: compilers zero-fill such a run with 16-byte stores, and one starting
// elsewhere straddles a 4 KiB page at some stack depths (a 4^3 call then ran 45% slower at 2
// of the 256 16-byte depths of the stack in a page: perf/stack_offsets).
struct alignas(16) KernelArgs {
  const float *a = nullptr;   // offset 0
  const float *b = nullptr;   // offset 8
  float *c = nullptr;         // offset 16
  void *workspace = nullptr;  // offset 24: >= JitKernel::workspace_bytes, 64-byte aligned
  int64_t begin = 0;          // offset 32
  int64_t end = 0;            // offset 40
  // offset 48: a split of k (Plan::reduction_parts) writes part i > 0 into copies + (i - 1)
  // * JitKernel::copy_floats, to be added into C by the caller once every part has run.
  float *copies = nullptr;
  float alpha = 1;  // offset 56
};
static_assert(offsetof(KernelArgs, workspace) == 24 && offsetof(KernelArgs, begin) == 32 &&
              offsetof(KernelArgs, end) == 40 && offsetof(KernelArgs, copies) == 48 &&
              offsetof(KernelArgs, alpha) == 56 && sizeof(KernelArgs) == 64);

using KernelFn = void (*)(const KernelArgs *);

// Emission request: the plan and the leading dimensions (in elements) of the user's A, B, C
// as the plan's tensors 0, 1, 2 are laid out (row-major C; A and B row- or column-major).
struct EmitRequest {
  const Plan *plan = nullptr;
  int64_t lda = 0, ldb = 0, ldc = 0;
  std::string name;  // for dumps and perf maps
  // The host's L2 per core: look-ahead that must stay there is sized to it (0: none).
  int64_t l2_bytes = 0;
};

// Executable code. The pages are written, then made read+execute; never both at once.
class JitKernel {
 public:
  JitKernel() = default;
  ~JitKernel();
  JitKernel(const JitKernel &) = delete;
  JitKernel &operator=(const JitKernel &) = delete;

  KernelFn fn() const { return fn_; }
  const uint8_t *code() const { return code_; }
  size_t code_size() const { return code_size_; }
  int64_t workspace_bytes() const { return workspace_bytes_; }
  // Parallel root: the iteration count of the outermost loop (tiles incl. remainder); 0 when
  // the kernel is serial.
  int64_t parallel_iterations() const { return parallel_iterations_; }
  // A split of k: its parts (0 when the kernel splits C or is serial), and the floats of each
  // copy of C that parts 1.. write (C's rows times ldc, rounded up to 64 bytes).
  int64_t reduction_parts() const { return reduction_parts_; }
  int64_t copy_floats() const { return copy_floats_; }
  const std::string &name() const { return name_; }
  // Register tiles emitted once as subroutines, and the call sites that run them (0 and 0
  // when no tile recurs; see plan_emitter.h).
  int outlined_tiles() const { return outlined_tiles_; }
  int tile_calls() const { return tile_calls_; }
  // Pipelined pack loops that copy the next loop's first tile ahead (see pack_ahead.cpp).
  int carried_packs() const { return carried_packs_; }

 private:
  friend bool emit_kernel(const EmitRequest &, std::unique_ptr<JitKernel> *, std::string *);
  KernelFn fn_ = nullptr;
  uint8_t *code_ = nullptr;  // from the executable pool, read+execute
  size_t code_size_ = 0;
  size_t mapped_size_ = 0;
  int64_t workspace_bytes_ = 0;
  int64_t parallel_iterations_ = 0;
  int64_t reduction_parts_ = 0, copy_floats_ = 0;
  int outlined_tiles_ = 0, tile_calls_ = 0, carried_packs_ = 0;
  std::string name_;
};

// Emits `req.plan` as AVX2+FMA machine code. On failure returns false with a message (an
// Xbyak error, or a plan the emitter cannot lower); never throws.
bool emit_kernel(const EmitRequest &req, std::unique_ptr<JitKernel> *out, std::string *error);

}  // namespace tessel
