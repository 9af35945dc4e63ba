#include "emitter_base.h"

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
  mov(reg_scratch, disp);
  return Mem{base.getIdx(), reg_scratch.getIdx(), 0};
}

void EmitterBase::xbyak_add_imm(const Xbyak::Reg64 &r, int64_t v) {
  if (x86::fits_int32(v)) {
    add(r, static_cast<int32_t>(v));
  } else {
    mov(reg_scratch, v);
    add(r, reg_scratch);
  }
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

void EmitterBase::xbyak_vfmadd231ps(Vreg dst, Vreg a, Vreg b) {
  Xbyak::CodeGenerator::vfmadd231ps(Xbyak::Ymm(dst), Xbyak::Ymm(a), Xbyak::Ymm(b));
}

void EmitterBase::xbyak_vmulps(Vreg dst, Vreg a, Vreg b) {
  Xbyak::CodeGenerator::vmulps(Xbyak::Ymm(dst), Xbyak::Ymm(a), Xbyak::Ymm(b));
}

void EmitterBase::xbyak_vxorps(Vreg dst, Vreg a, Vreg b) {
  Xbyak::CodeGenerator::vxorps(Xbyak::Ymm(dst), Xbyak::Ymm(a), Xbyak::Ymm(b));
}

void EmitterBase::xbyak_prefetcht0(const Mem &m) {
  Xbyak::CodeGenerator::prefetcht0(Xbyak::Address(m));
}

void EmitterBase::xbyak_dec(const Xbyak::Reg64 &r) {
  Xbyak::CodeGenerator::dec(r);
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
