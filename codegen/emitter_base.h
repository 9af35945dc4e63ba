// The base of every tessel emitter: the System V ABI (preamble, postamble, callee-saved
// registers, vzeroupper), the general-purpose registers by role, the stack frame, addressing
// helpers that survive any displacement, and the ONE place where Xbyak's error code and the
// emitter's own failures become a status.
//
// Code is generated into a plain read+write buffer the caller owns (Xbyak's user-buffer mode:
// it never allocates or mprotects it); executable_memory.cpp later copies it into pages that
// are only read+execute.
#pragma once
#include <cstdint>
#include <string>

#include <xbyak/xbyak.h>

namespace tessel {

// Xbyak's error code is thread-local and sticky (the first error wins): it must be cleared
// before Xbyak::CodeGenerator is constructed, hence a base that comes first.
struct XbyakErrorReset {
  XbyakErrorReset() { Xbyak::ClearError(); }
};

class EmitterBase : private XbyakErrorReset, public Xbyak::CodeGenerator {
 public:
  // Emits into `buffer` (page-aligned, `capacity` bytes, read+write); a kernel that does not
  // fit stops with code_too_big().
  EmitterBase(uint8_t *buffer, size_t capacity);
  EmitterBase(const EmitterBase &) = delete;
  EmitterBase &operator=(const EmitterBase &) = delete;

  // The one place errors become a status: Xbyak's (thread-local, cleared at construction)
  // error code, else the first emitter failure. Returns true when the code is complete.
  bool status(std::string *error) const;
  // Whether emission failed only because the code buffer was too small (retry bigger).
  bool code_too_big() const;

  // Records an emitter failure (the first one wins); emission may go on harmlessly.
  void fail(const std::string &why);
  bool failed() const { return !failure_.empty(); }

  // General-purpose registers, each with exactly one role and one name. reg_a is rdi because
  // rdi carries the KernelArgs pointer on entry (System V first argument): the preamble reads
  // every other field through it and loads A's pointer over it last.
  const Xbyak::Reg64 reg_a{Xbyak::Operand::RDI};       // tile origin of A
  const Xbyak::Reg64 reg_b{Xbyak::Operand::RSI};       // tile origin of B
  const Xbyak::Reg64 reg_c{Xbyak::Operand::RDX};       // tile origin of C
  const Xbyak::Reg64 reg_a_panel{Xbyak::Operand::R8};  // packed A buffer
  const Xbyak::Reg64 reg_b_panel{Xbyak::Operand::R9};  // packed B buffer
  // Loop trip counters, by loop height (1 = innermost). Loops of the same height never nest,
  // so they can share a counter; loops higher than this count live in stack slots.
  static constexpr int kCounterRegisters = 5;
  const Xbyak::Reg64 reg_loop[kCounterRegisters] = {
      Xbyak::Reg64(Xbyak::Operand::R10), Xbyak::Reg64(Xbyak::Operand::R11),
      Xbyak::Reg64(Xbyak::Operand::RBX), Xbyak::Reg64(Xbyak::Operand::RBP),
      Xbyak::Reg64(Xbyak::Operand::R12)};
  // Kernel temporaries: a leaf kernel owns them while it runs.
  const Xbyak::Reg64 reg_src{Xbyak::Operand::R13};
  const Xbyak::Reg64 reg_dst{Xbyak::Operand::R14};
  const Xbyak::Reg64 reg_count{Xbyak::Operand::RCX};
  const Xbyak::Reg64 reg_count_outer{Xbyak::Operand::R15};
  // Materializes immediates and displacements that do not fit 32 bits; never holds a value
  // across instructions that call mem() or add_imm().
  const Xbyak::Reg64 reg_scratch{Xbyak::Operand::RAX};

  // [base + disp] for any 64-bit displacement (through reg_scratch beyond 32 bits).
  Xbyak::Address mem(const Xbyak::Reg64 &base, int64_t disp);
  // r += v (any 64-bit v; nothing emitted for 0).
  void add_imm(const Xbyak::Reg64 &r, int64_t v);

  // Stack frame slots, valid after preamble().
  Xbyak::Address alpha_slot() { return dword[rsp + kAlphaSlot]; }
  Xbyak::Address workspace_slot() { return qword[rsp + kWorkspaceSlot]; }
  Xbyak::Address begin_slot() { return qword[rsp + kBeginSlot]; }
  Xbyak::Address end_slot() { return qword[rsp + kEndSlot]; }
  Xbyak::Address index_slot() { return qword[rsp + kIndexSlot]; }
  // A parallel grid's current row and column, and the call's A, B, C pointers.
  Xbyak::Address row_slot() { return qword[rsp + kRowSlot]; }
  Xbyak::Address column_slot() { return qword[rsp + kColumnSlot]; }
  Xbyak::Address base_slot(int tensor) { return qword[rsp + kBaseSlots + 8 * tensor]; }
  Xbyak::Address spill_slot(int i) { return qword[rsp + kSpillSlots + 8 * i]; }

 protected:
  // Saves callee-saved registers, reserves the frame with `spill_slots` extra qwords, copies
  // KernelArgs into reg_a/b/c and the frame.
  void preamble(int spill_slots);
  // Restores the frame and callee-saved registers, clears the upper ymm state, returns.
  void postamble();

 private:
  static constexpr int kAlphaSlot = 0, kWorkspaceSlot = 8, kBeginSlot = 16, kEndSlot = 24,
                       kIndexSlot = 32, kRowSlot = 40, kColumnSlot = 48, kBaseSlots = 56,
                       kSpillSlots = 80;
  int frame_bytes_ = 0;
  std::string failure_;
};

}  // namespace tessel
