#include "emitter_base.h"

#include <algorithm>
#include <cstring>

#include "jit_kernel.h"

namespace tessel {
namespace {

// Callee-saved registers of System V x86-64 that tessel emitters use.
const Xbyak::Reg64 kCalleeSaved[] = {
    Xbyak::Reg64(Xbyak::Operand::RBX), Xbyak::Reg64(Xbyak::Operand::RBP),
    Xbyak::Reg64(Xbyak::Operand::R12), Xbyak::Reg64(Xbyak::Operand::R13),
    Xbyak::Reg64(Xbyak::Operand::R14), Xbyak::Reg64(Xbyak::Operand::R15)};

}  // namespace

EmitterBase::EmitterBase(uint8_t *buffer, size_t capacity)
    : XbyakErrorReset(), Xbyak::CodeGenerator(capacity, buffer) {}

void EmitterBase::restart(uint8_t *buffer, size_t capacity) {
  reset();
  top_ = buffer;
  maxSize_ = capacity;
  frame_bytes_ = 0;
  frame_shift_ = 0;
  saved_registers_ = 0;
  failure_.clear();
}

bool EmitterBase::status(std::string *error) const {
  if (const int err = Xbyak::GetError()) {
    *error = std::string("xbyak: ") + Xbyak::ConvertErrorToString(err);
    return false;
  }
  if (!failure_.empty()) {
    *error = failure_;
    return false;
  }
  return true;
}

bool EmitterBase::code_too_big() const {
  return Xbyak::GetError() == Xbyak::ERR_CODE_IS_TOO_BIG;
}

void EmitterBase::fail(const std::string &why) {
  if (failure_.empty()) failure_ = why;
}

Mem::operator Xbyak::Address() const {
  if (index < 0) return Xbyak::util::ptr[Xbyak::Reg64(base) + disp];
  return Xbyak::util::ptr[Xbyak::Reg64(base) + Xbyak::Reg64(index) + disp];
}

Mem EmitterBase::far_mem(const Xbyak::Reg64 &base, int64_t disp) {
  mov_imm(reg_scratch, disp);
  return Mem{base.getIdx(), reg_scratch.getIdx(), 0};
}

void EmitterBase::xbyak_add_imm(const Xbyak::Reg64 &r, int64_t v) {
  if (x86::fits_int32(v)) {
    add(r, static_cast<int32_t>(v));
  } else {
    mov_imm(reg_scratch, v);
    add(r, reg_scratch);
  }
}

void EmitterBase::data(const uint8_t *bytes, size_t count) {
  if (maxSize_ - size_ >= count) {
    std::memcpy(top_ + size_, bytes, count);
    size_ += count;
  } else {
    db(bytes, count);
  }
}

void EmitterBase::land(size_t at, size_t target) {
  if (at == SIZE_MAX || at + 4 > size_) return;  // emission failed: the code is discarded
  const auto rel =
      static_cast<int32_t>(static_cast<int64_t>(target) - static_cast<int64_t>(at + 4));
  std::memcpy(top_ + at, &rel, 4);
}

void EmitterBase::xbyak_vmovups(const Xbyak::Xmm &dst, const Mem &src) {
  Xbyak::CodeGenerator::vmovups(dst, Xbyak::Address(src));
}

void EmitterBase::xbyak_vmovups(const Mem &dst, const Xbyak::Xmm &src) {
  Xbyak::CodeGenerator::vmovups(Xbyak::Address(dst), src);
}

void EmitterBase::xbyak_vmovss(const Xbyak::Xmm &dst, const Mem &src) {
  Xbyak::CodeGenerator::vmovss(dst, Xbyak::Address(src));
}

void EmitterBase::xbyak_vmovss(const Mem &dst, const Xbyak::Xmm &src) {
  Xbyak::CodeGenerator::vmovss(Xbyak::Address(dst), src);
}

void EmitterBase::xbyak_vbroadcastss(const Xbyak::Xmm &dst, const Mem &src) {
  Xbyak::CodeGenerator::vbroadcastss(dst, Xbyak::Address(src));
}

void EmitterBase::xbyak_vmaskmovps(Vreg dst, Vreg mask, const Mem &src) {
  Xbyak::CodeGenerator::vmaskmovps(Xbyak::Ymm(dst), Xbyak::Ymm(mask), Xbyak::Address(src));
}

void EmitterBase::xbyak_vfmadd213ps(Vreg dst, Vreg a, const Mem &src) {
  Xbyak::CodeGenerator::vfmadd213ps(Xbyak::Ymm(dst), Xbyak::Ymm(a), Xbyak::Address(src));
}

void EmitterBase::xbyak_vfmadd231ps(Vreg dst, Vreg a, Vreg b) {
  Xbyak::CodeGenerator::vfmadd231ps(Xbyak::Ymm(dst), Xbyak::Ymm(a), Xbyak::Ymm(b));
}

void EmitterBase::xbyak_vfmadd231ps(Vreg dst, Vreg a, const Mem &src) {
  Xbyak::CodeGenerator::vfmadd231ps(Xbyak::Ymm(dst), Xbyak::Ymm(a), Xbyak::Address(src));
}

void EmitterBase::xbyak_vmulps(Vreg dst, Vreg a, Vreg b) {
  Xbyak::CodeGenerator::vmulps(Xbyak::Ymm(dst), Xbyak::Ymm(a), Xbyak::Ymm(b));
}

void EmitterBase::xbyak_vxorps(Vreg dst, Vreg a, Vreg b) {
  Xbyak::CodeGenerator::vxorps(Xbyak::Ymm(dst), Xbyak::Ymm(a), Xbyak::Ymm(b));
}

void EmitterBase::xbyak_prefetch(x86::PrefetchHint hint, const Mem &m) {
  if (hint == x86::PrefetchHint::T1)
    Xbyak::CodeGenerator::prefetcht1(Xbyak::Address(m));
  else
    Xbyak::CodeGenerator::prefetcht0(Xbyak::Address(m));
}

void EmitterBase::preamble(const FrameNeeds &needs) {
  // Encoded directly, like the hot forms: every kernel has one.
  const int rsp_idx = rsp.getIdx(), args = reg_a.getIdx(), scratch = reg_scratch.getIdx();
  static_assert(std::size(kCalleeSaved) == kSavedRegisters);
  saved_registers_ = std::clamp(needs.saved_registers, 0, kSavedRegisters);
  for (int i = 0; i < saved_registers_; ++i)
    put([&](uint8_t *p) { return x86::push(p, kCalleeSaved[i].getIdx()); });
  // rsp is 8 mod 16 on entry (the return address): pushes and frame together take an odd
  // number of qwords to realign it (nothing here needs it, but a debugger or profiler walking
  // the stack may).
  int qwords = kSpillSlots / 8 + needs.spill_slots;
  if ((qwords + saved_registers_) % 2 == 0) ++qwords;
  frame_bytes_ = qwords * 8;
  put([&](uint8_t *p) { return x86::alu_imm(p, x86::kSub, rsp_idx, frame_bytes_); });
  auto load = [&](bool wide, int dst, size_t field) {
    put([&](uint8_t *p) {
      return x86::mov_memory(p, false, wide, dst, {args, static_cast<int32_t>(field)});
    });
  };
  auto store = [&](bool wide, int slot) {
    put([&](uint8_t *p) { return x86::mov_memory(p, true, wide, scratch, {rsp_idx, slot}); });
  };
  // reg_a holds the KernelArgs pointer until its own field is loaded, last.
  load(true, reg_b.getIdx(), offsetof(KernelArgs, b));
  load(true, reg_c.getIdx(), offsetof(KernelArgs, c));
  load(false, scratch, offsetof(KernelArgs, alpha));
  store(false, kAlphaSlot);
  if (needs.workspace) {
    load(true, scratch, offsetof(KernelArgs, workspace));
    store(true, kWorkspaceSlot);
  }
  if (needs.range) {
    load(true, scratch, offsetof(KernelArgs, begin));
    store(true, kBeginSlot);
    load(true, scratch, offsetof(KernelArgs, end));
    store(true, kEndSlot);
  }
  if (needs.copies) {
    load(true, scratch, offsetof(KernelArgs, copies));
    store(true, kCopiesSlot);
  }
  load(true, args, offsetof(KernelArgs, a));
}

void EmitterBase::postamble() {
  // Dirty upper ymm halves would slow down the caller's SSE code.
  put([](uint8_t *p) { return x86::vzeroupper(p); });
  put([&](uint8_t *p) { return x86::alu_imm(p, x86::kAdd, rsp.getIdx(), frame_bytes_); });
  for (int i = saved_registers_ - 1; i >= 0; --i)
    put([&](uint8_t *p) { return x86::pop(p, kCalleeSaved[i].getIdx()); });
  put([](uint8_t *p) { return x86::ret(p); });
}

}  // namespace tessel
