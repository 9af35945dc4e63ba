#include "emitter_base.h"

#include <limits>

#include "jit_kernel.h"

namespace tessel {
namespace {

// Callee-saved registers of System V x86-64 that tessel emitters use.
const Xbyak::Reg64 kCalleeSaved[] = {
    Xbyak::Reg64(Xbyak::Operand::RBX), Xbyak::Reg64(Xbyak::Operand::RBP),
    Xbyak::Reg64(Xbyak::Operand::R12), Xbyak::Reg64(Xbyak::Operand::R13),
    Xbyak::Reg64(Xbyak::Operand::R14), Xbyak::Reg64(Xbyak::Operand::R15)};

bool fits_int32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

}  // namespace

EmitterBase::EmitterBase(uint8_t *buffer, size_t capacity)
    : XbyakErrorReset(), Xbyak::CodeGenerator(capacity, buffer) {}

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

Xbyak::Address EmitterBase::mem(const Xbyak::Reg64 &base, int64_t disp) {
  if (fits_int32(disp)) return ptr[base + static_cast<int32_t>(disp)];
  mov(reg_scratch, disp);
  return ptr[base + reg_scratch];
}

void EmitterBase::add_imm(const Xbyak::Reg64 &r, int64_t v) {
  if (v == 0) return;
  if (fits_int32(v)) {
    add(r, static_cast<int32_t>(v));
  } else {
    mov(reg_scratch, v);
    add(r, reg_scratch);
  }
}

void EmitterBase::preamble(int spill_slots) {
  for (const Xbyak::Reg64 &r : kCalleeSaved) push(r);
  // Six pushes after the return address leave rsp 8 mod 16; an odd qword count realigns it
  // (nothing here needs it, but a debugger or profiler walking the stack may).
  int qwords = kSpillSlots / 8 + spill_slots;
  if (qwords % 2 == 0) ++qwords;
  frame_bytes_ = qwords * 8;
  sub(rsp, frame_bytes_);
  // reg_a holds the KernelArgs pointer until its own field is loaded, last.
  mov(reg_b, qword[reg_a + offsetof(KernelArgs, b)]);
  mov(reg_c, qword[reg_a + offsetof(KernelArgs, c)]);
  mov(reg_scratch.cvt32(), dword[reg_a + offsetof(KernelArgs, alpha)]);
  mov(alpha_slot(), reg_scratch.cvt32());
  mov(reg_scratch, qword[reg_a + offsetof(KernelArgs, workspace)]);
  mov(workspace_slot(), reg_scratch);
  mov(reg_scratch, qword[reg_a + offsetof(KernelArgs, begin)]);
  mov(begin_slot(), reg_scratch);
  mov(reg_scratch, qword[reg_a + offsetof(KernelArgs, end)]);
  mov(end_slot(), reg_scratch);
  mov(reg_a, qword[reg_a + offsetof(KernelArgs, a)]);
}

void EmitterBase::postamble() {
  // Dirty upper ymm halves would slow down the caller's SSE code.
  vzeroupper();
  add(rsp, frame_bytes_);
  for (int i = static_cast<int>(std::size(kCalleeSaved)) - 1; i >= 0; --i) pop(kCalleeSaved[i]);
  ret();
}

}  // namespace tessel
