// The base of every tessel emitter: the System V ABI (preamble, postamble, callee-saved
// registers, vzeroupper), the general-purpose registers by role, the stack frame, addressing
// helpers that survive any displacement, the direct encoding of the hot instruction forms, and
// the ONE place where Xbyak's error code and the emitter's own failures become a status.
//
// Code is generated into a plain read+write buffer the caller owns (Xbyak's user-buffer mode:
// it never allocates or mprotects it); executable_memory.cpp later copies it into pages that
// are only read+execute.
#pragma once
#include <cstdint>
#include <string>

#include <xbyak/xbyak.h>

#include "x86_encoder.h"

namespace tessel {

// [base + index + disp] as mem() builds it: three small fields rather than an Xbyak::Address,
// whose construction alone cost more than encoding the instruction. The hot instructions take
// it directly (EmitterBase's overloads below); it converts to an Xbyak::Address for all others.
struct Mem {
  int base = 0;
  int index = -1;  // none; reg_scratch when the displacement needed 64 bits
  int32_t disp = 0;
  operator Xbyak::Address() const;  // implicit: any Xbyak instruction takes a Mem
};

// A ymm register by number: what PlanEmitter::tile() and temp() return, and what the hot
// instruction overloads below take. Xbyak's register objects are packed bit fields; building
// one per operand and reading it back cost more than encoding the instruction. It converts
// to an Xbyak::Ymm for every other instruction.
struct Vreg {
  int idx = 0;
  int getIdx() const { return idx; }  // Xbyak's spelling: kernels ask either kind
  operator Xbyak::Ymm() const { return Xbyak::Ymm(idx); }  // implicit, as Mem
};

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
  Mem mem(const Xbyak::Reg64 &base, int64_t disp) {
    if (x86::fits_int32(disp)) return {base.getIdx(), -1, static_cast<int32_t>(disp)};
    return far_mem(base, disp);
  }
  // r += v (any 64-bit v; nothing emitted for 0).
  void add_imm(const Xbyak::Reg64 &r, int64_t v) {
    if (v == 0) return;
    // rax has its own short imm32 form, which Xbyak writes.
    if (x86::fits_int32(v) && r.getIdx() != reg_scratch.getIdx()) {
      put([&](uint8_t *p) { return x86::alu_imm(p, x86::kAdd, r.getIdx(), int32_t(v)); });
    } else {
      xbyak_add_imm(r, v);
    }
  }
  // r = v (any 64-bit v), the shortest way.
  void mov_imm(const Xbyak::Reg64 &r, int64_t v) {
    put([&](uint8_t *p) { return x86::mov_imm(p, r.getIdx(), v); });
  }
  // The offset the next instruction starts at, for jnz_back().
  size_t here() const { return getSize(); }
  // jnz to an offset already written (a loop's top).
  void jnz_back(size_t target) {
    const auto back = static_cast<int64_t>(getSize() - target);
    put([&](uint8_t *p) { return x86::jnz_back(p, back); });
  }
  // A call, jmp or je whose target is emitted later: returns the offset of its rel32, for
  // land() (SIZE_MAX when the buffer had no room; emission has failed then).
  size_t forward(x86::Forward kind) {
    const size_t before = getSize();
    put([&](uint8_t *p) { return x86::forward(p, kind); });
    return getSize() > before ? getSize() - 4 : SIZE_MAX;
  }
  // Points the rel32 at `at` (from forward()) to `target` (default: the next instruction).
  void land(size_t at) { land(at, getSize()); }
  void land(size_t at, size_t target);
  // Raw bytes (constant tables).
  void data(const uint8_t *bytes, size_t count);

  // The hot instruction forms, encoded directly (x86_encoder.h) into Xbyak's buffer: the same
  // bytes Xbyak writes, without its generic operand handling. Registers VEX cannot name and
  // Xbyak operands with EVEX decorations go through Xbyak, whose overloads stay visible for
  // everything else.
  using Xbyak::CodeGenerator::dec;
  using Xbyak::CodeGenerator::prefetcht0;
  using Xbyak::CodeGenerator::prefetcht1;
  using Xbyak::CodeGenerator::vbroadcastss;
  using Xbyak::CodeGenerator::vfmadd213ps;
  using Xbyak::CodeGenerator::vfmadd231ps;
  using Xbyak::CodeGenerator::vmaskmovps;
  using Xbyak::CodeGenerator::vmovss;
  using Xbyak::CodeGenerator::vmovups;
  using Xbyak::CodeGenerator::vmulps;
  using Xbyak::CodeGenerator::vxorps;
  void vmovups(Vreg dst, const Mem &src) {
    if (!vex_memory(x86::kVmovupsLoad, true, dst.idx, 0, src)) xbyak_vmovups(dst, src);
  }
  void vmovups(const Mem &dst, Vreg src) {
    if (!vex_memory(x86::kVmovupsStore, true, src.idx, 0, dst)) xbyak_vmovups(dst, src);
  }
  void vbroadcastss(Vreg dst, const Mem &src) {
    if (!vex_memory(x86::kVbroadcastss, true, dst.idx, 0, src)) xbyak_vbroadcastss(dst, src);
  }
  void vmaskmovps(Vreg dst, Vreg mask, const Mem &src) {
    if (!vex_memory(x86::kVmaskmovpsLoad, true, dst.idx, mask.idx, src))
      xbyak_vmaskmovps(dst, mask, src);
  }
  // dst = dst * a + src
  void vfmadd213ps(Vreg dst, Vreg a, const Mem &src) {
    if (!vex_memory(x86::kVfmadd213ps, true, dst.idx, a.idx, src)) xbyak_vfmadd213ps(dst, a, src);
  }
  void vfmadd231ps(Vreg dst, Vreg a, Vreg b) {
    if (!vex_registers(x86::kVfmadd231ps, true, dst.idx, a.idx, b.idx))
      xbyak_vfmadd231ps(dst, a, b);
  }
  // dst += a * src
  void vfmadd231ps(Vreg dst, Vreg a, const Mem &src) {
    if (!vex_memory(x86::kVfmadd231ps, true, dst.idx, a.idx, src)) xbyak_vfmadd231ps(dst, a, src);
  }
  void vmulps(Vreg dst, Vreg a, Vreg b) {
    if (!vex_registers(x86::kVmulps, true, dst.idx, a.idx, b.idx)) xbyak_vmulps(dst, a, b);
  }
  void vxorps(Vreg dst, Vreg a, Vreg b) {
    if (!vex_registers(x86::kVxorps, true, dst.idx, a.idx, b.idx)) xbyak_vxorps(dst, a, b);
  }
  // The same forms on Xbyak's xmm or ymm registers (xmm pieces of a row, scalars).
  void vmovups(const Xbyak::Xmm &dst, const Mem &src) {
    if (!vex_vector(dst) || !vex_memory(x86::kVmovupsLoad, dst.isYMM(), dst.getIdx(), 0, src))
      xbyak_vmovups(dst, src);
  }
  void vmovups(const Mem &dst, const Xbyak::Xmm &src) {
    if (!vex_vector(src) || !vex_memory(x86::kVmovupsStore, src.isYMM(), src.getIdx(), 0, dst))
      xbyak_vmovups(dst, src);
  }
  void vmovss(const Xbyak::Xmm &dst, const Mem &src) {
    if (!dst.isXMM() || !vex_vector(dst) ||
        !vex_memory(x86::kVmovssLoad, false, dst.getIdx(), 0, src))
      xbyak_vmovss(dst, src);
  }
  void vmovss(const Mem &dst, const Xbyak::Xmm &src) {
    if (!src.isXMM() || !vex_vector(src) ||
        !vex_memory(x86::kVmovssStore, false, src.getIdx(), 0, dst))
      xbyak_vmovss(dst, src);
  }
  void prefetcht0(const Mem &m) { prefetch(x86::PrefetchHint::T0, m); }
  void prefetcht1(const Mem &m) { prefetch(x86::PrefetchHint::T1, m); }
  void dec(const Xbyak::Reg64 &r) {
    put([&](uint8_t *p) { return x86::dec(p, r.getIdx()); });
  }

  // Stack frame slots, valid after preamble().
  Xbyak::Address alpha_slot() { return dword[rsp + (frame_shift_ + kAlphaSlot)]; }
  Xbyak::Address workspace_slot() { return qword[rsp + (frame_shift_ + kWorkspaceSlot)]; }
  Xbyak::Address begin_slot() { return qword[rsp + (frame_shift_ + kBeginSlot)]; }
  Xbyak::Address end_slot() { return qword[rsp + (frame_shift_ + kEndSlot)]; }
  Xbyak::Address index_slot() { return qword[rsp + (frame_shift_ + kIndexSlot)]; }
  // A parallel grid's current row and column, and the call's A, B, C pointers.
  Xbyak::Address row_slot() { return qword[rsp + (frame_shift_ + kRowSlot)]; }
  Xbyak::Address column_slot() { return qword[rsp + (frame_shift_ + kColumnSlot)]; }
  Xbyak::Address base_slot(int tensor) {
    return qword[rsp + (frame_shift_ + kBaseSlots + 8 * tensor)];
  }
  // A split of k's copies of C (KernelArgs::copies).
  Xbyak::Address copies_slot() { return qword[rsp + (frame_shift_ + kCopiesSlot)]; }
  Xbyak::Address spill_slot(int i) { return qword[rsp + (frame_shift_ + kSpillSlots + 8 * i)]; }

 protected:
  // What a function's body needs of its frame. A small kernel runs in tens of nanoseconds:
  // saving registers it never touches and copying arguments it never reads would be a
  // noticeable share of its call.
  struct FrameNeeds {
    int spill_slots = 0;  // extra qwords
    // How many of the callee-saved rbx, rbp, r12, r13, r14, r15 (a prefix of that order) the
    // body writes: the deeper loop counters come first, then the kernel temporaries.
    int saved_registers = kSavedRegisters;
    bool workspace = true;  // workspace_slot() is read
    bool range = true;      // begin_slot() and end_slot() are read
    bool copies = false;    // copies_slot() is read
  };
  static constexpr int kSavedRegisters = 6;
  // Saves the callee-saved registers the body uses, reserves the frame, copies KernelArgs
  // into reg_a/b/c and the frame slots the body reads (alpha always).
  void preamble(const FrameNeeds &needs);
  // Restores the frame and the saved registers, clears the upper ymm state, returns.
  void postamble();
  // Code of a local subroutine (called from the function's body) sees the frame this many
  // bytes higher: its return address sits below it.
  void set_frame_shift(int bytes) { frame_shift_ = bytes; }
  // Starts a new function at the start of `buffer`, as a new emitter would: Xbyak's size,
  // labels and error, and this class's frame and failure are forgotten.
  void restart(uint8_t *buffer, size_t capacity);

 private:
  // Writes one instruction the direct encoder forms with `encode(p)` (which returns its end):
  // in place while the buffer has room for the longest form, else byte by byte through Xbyak,
  // which stops where the buffer ends and reports it full, as it would have for its own form.
  template <class Encode>
  void put(Encode encode) {
    if (maxSize_ - size_ >= x86::kMaxBytes) {
      size_ = static_cast<size_t>(encode(top_ + size_) - top_);
    } else {
      uint8_t bytes[x86::kMaxBytes];
      db(bytes, static_cast<size_t>(encode(bytes) - bytes));
    }
  }
  // xmm or ymm without EVEX decorations (opmask, zeroing, rounding): what VEX encodes, if its
  // number is below 16 (checked with the other operands').
  static bool vex_vector(const Xbyak::Xmm &r) {
    return (r.isXMM() || r.isYMM()) && r.getOpmaskIdx() == 0 && !r.hasZero() &&
           r.getRounding() == 0;
  }
  bool vex_registers(x86::VexOpcode op, bool ymm, int dst, int a, int b) {
    if (((dst | a | b) & ~15) != 0) return false;
    put([&](uint8_t *p) { return x86::vex_reg(p, op, ymm, dst, a, b); });
    return true;
  }
  bool vex_memory(x86::VexOpcode op, bool ymm, int reg, int vvvv, const Mem &m) {
    if (m.index >= 0 || ((reg | vvvv) & ~15) != 0) return false;
    put([&](uint8_t *p) { return x86::vex_memory(p, op, ymm, reg, vvvv, {m.base, m.disp}); });
    return true;
  }
  // The rest of each instruction above, through Xbyak (out of line: rare).
  Mem far_mem(const Xbyak::Reg64 &base, int64_t disp);
  void xbyak_add_imm(const Xbyak::Reg64 &r, int64_t v);
  void xbyak_vmovups(const Xbyak::Xmm &dst, const Mem &src);
  void xbyak_vmovups(const Mem &dst, const Xbyak::Xmm &src);
  void xbyak_vmovss(const Xbyak::Xmm &dst, const Mem &src);
  void xbyak_vmovss(const Mem &dst, const Xbyak::Xmm &src);
  void xbyak_vbroadcastss(const Xbyak::Xmm &dst, const Mem &src);
  void xbyak_vmaskmovps(Vreg dst, Vreg mask, const Mem &src);
  void xbyak_vfmadd213ps(Vreg dst, Vreg a, const Mem &src);
  void xbyak_vfmadd231ps(Vreg dst, Vreg a, Vreg b);
  void xbyak_vfmadd231ps(Vreg dst, Vreg a, const Mem &src);
  void xbyak_vmulps(Vreg dst, Vreg a, Vreg b);
  void xbyak_vxorps(Vreg dst, Vreg a, Vreg b);
  void prefetch(x86::PrefetchHint hint, const Mem &m) {
    if (m.index < 0) {
      put([&](uint8_t *p) { return x86::prefetch(p, hint, {m.base, m.disp}); });
    } else {
      xbyak_prefetch(hint, m);
    }
  }
  void xbyak_prefetch(x86::PrefetchHint hint, const Mem &m);

  static constexpr int kAlphaSlot = 0, kWorkspaceSlot = 8, kBeginSlot = 16, kEndSlot = 24,
                       kIndexSlot = 32, kRowSlot = 40, kColumnSlot = 48, kBaseSlots = 56,
                       kCopiesSlot = 80, kSpillSlots = 88;
  int frame_bytes_ = 0;
  int frame_shift_ = 0;
  int saved_registers_ = 0;
  std::string failure_;
};

}  // namespace tessel
