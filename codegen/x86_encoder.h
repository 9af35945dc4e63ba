// A direct x86-64 encoder for the few instruction forms that make up nearly all of a GEMM
// kernel's code: VEX vector instructions on registers and on [base + disp], the loop
// bookkeeping (add/sub/dec/mov on a 64-bit register, jumps and calls, prefetches) and the
// function's frame (push/pop, general-purpose loads and stores, vzeroupper, ret).
//
// Why: Xbyak spends ~400 host instructions per emitted instruction (generic operand objects,
// checks for EVEX, byte-at-a-time bounds checks), which made emission of a large plan cost
// ~0.5 ms. These functions write the same bytes Xbyak writes for these forms (the shortest
// VEX prefix, disp8 when it fits, SIB only for rsp/r12 bases, rbp/r13 with a zero disp8) at a
// few host instructions each. tests/codegen/x86_encoder_test.cpp compares them with Xbyak for
// every register and every displacement class. Everything else stays with Xbyak.
//
// Registers are numbered as in the ISA (0..15; rax = 0, rsp = 4, rbp = 5, r12 = 12, r13 = 13).
// Nothing here checks operands: EmitterBase only calls it with registers below 16 and 32-bit
// displacements and immediates.
// Each function writes at `p` (at most kMaxBytes) and returns the end of what it wrote.
#pragma once
#include <cstdint>
#include <cstring>

namespace tessel::x86 {

constexpr int kMaxBytes = 10;  // mov r64, imm64

inline bool fits_int32(int64_t v) {
  return v >= INT32_MIN && v <= INT32_MAX;
}

// [base + disp], base a 64-bit register, no index.
struct BaseDisp {
  int base;
  int32_t disp;
};

// A VEX instruction: opcode map (1: 0F, 2: 0F38), implied prefix (0: none, 1: 66, 2: F3) and
// opcode byte. Every form here has W = 0.
struct VexOpcode {
  uint8_t map, pp, code;
};
constexpr VexOpcode kVmovupsLoad{1, 0, 0x10};
constexpr VexOpcode kVmovupsStore{1, 0, 0x11};
constexpr VexOpcode kVmovssLoad{1, 2, 0x10};
constexpr VexOpcode kVmovssStore{1, 2, 0x11};
constexpr VexOpcode kVxorps{1, 0, 0x57};
constexpr VexOpcode kVmulps{1, 0, 0x59};
constexpr VexOpcode kVbroadcastss{2, 1, 0x18};
constexpr VexOpcode kVmaskmovpsLoad{2, 1, 0x2c};
constexpr VexOpcode kVfmadd213ps{2, 1, 0xa8};
constexpr VexOpcode kVfmadd231ps{2, 1, 0xb8};

// The VEX prefix and opcode. `reg` is ModRM.reg, `vvvv` the extra source (0 when the form has
// none: it encodes as 1111), `rm` the ModRM.rm register or memory base.
inline uint8_t *vex_prefix(uint8_t *p, VexOpcode op, bool ymm, int reg, int vvvv, int rm) {
  const int r = reg & 8 ? 0 : 0x80;
  const int tail = ((~vvvv & 15) << 3) | (ymm ? 4 : 0) | op.pp;
  if (op.map == 1 && !(rm & 8)) {
    // The two-byte form carries no B, X, W or map bits.
    p[0] = 0xc5;
    p[1] = static_cast<uint8_t>(r | tail);
    p[2] = op.code;
    return p + 3;
  }
  p[0] = 0xc4;
  p[1] = static_cast<uint8_t>(r | 0x40 | (rm & 8 ? 0 : 0x20) | op.map);
  p[2] = static_cast<uint8_t>(tail);
  p[3] = op.code;
  return p + 4;
}

// ModRM (+ SIB) (+ disp) for [base + disp].
inline uint8_t *modrm_memory(uint8_t *p, int reg, BaseDisp m) {
  const int base = m.base & 7;
  const int mod = m.disp == 0 && base != 5 ? 0 : m.disp >= -128 && m.disp <= 127 ? 1 : 2;
  *p++ = static_cast<uint8_t>(mod << 6 | (reg & 7) << 3 | base);
  if (base == 4) *p++ = 0x24;  // rsp/r12 as base need a SIB byte: no index, base itself
  if (mod == 1) {
    *p++ = static_cast<uint8_t>(m.disp);
  } else if (mod == 2) {
    std::memcpy(p, &m.disp, 4);
    p += 4;
  }
  return p;
}

inline uint8_t *vex_reg(uint8_t *p, VexOpcode op, bool ymm, int reg, int vvvv, int rm) {
  p = vex_prefix(p, op, ymm, reg, vvvv, rm);
  *p++ = static_cast<uint8_t>(0xc0 | (reg & 7) << 3 | (rm & 7));
  return p;
}

inline uint8_t *vex_memory(uint8_t *p, VexOpcode op, bool ymm, int reg, int vvvv, BaseDisp m) {
  return modrm_memory(vex_prefix(p, op, ymm, reg, vvvv, m.base), reg, m);
}

// REX.W, with B for r8..r15.
inline uint8_t rex_w(int r) {
  return static_cast<uint8_t>(0x48 | (r & 8 ? 1 : 0));
}

// add (ext 0) or sub (ext 5) r64, imm: 83 /ext ib when the immediate fits a byte, else
// 81 /ext id (rax has a shorter imm32 form: not encoded here).
constexpr int kAdd = 0, kSub = 5;
inline uint8_t *alu_imm(uint8_t *p, int ext, int r, int32_t v) {
  *p++ = rex_w(r);
  const bool byte = v >= -128 && v <= 127;
  *p++ = byte ? 0x83 : 0x81;
  *p++ = static_cast<uint8_t>(0xc0 | ext << 3 | (r & 7));
  if (byte) {
    *p++ = static_cast<uint8_t>(v);
  } else {
    std::memcpy(p, &v, 4);
    p += 4;
  }
  return p;
}

inline uint8_t *dec(uint8_t *p, int r) {
  p[0] = rex_w(r);
  p[1] = 0xff;
  p[2] = static_cast<uint8_t>(0xc8 | (r & 7));
  return p + 3;
}

// mov r64, imm the shortest way: mov r32, imm32 (zero-extends) for 0..2^32-1, the
// sign-extended imm32 form for other int32 values, else imm64.
inline uint8_t *mov_imm(uint8_t *p, int r, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  if ((u >> 32) == 0) {
    if (r & 8) *p++ = 0x41;
    *p++ = static_cast<uint8_t>(0xb8 | (r & 7));
    const auto v32 = static_cast<uint32_t>(u);
    std::memcpy(p, &v32, 4);
    return p + 4;
  }
  *p++ = rex_w(r);
  if (fits_int32(v)) {
    *p++ = 0xc7;
    *p++ = static_cast<uint8_t>(0xc0 | (r & 7));
    const auto v32 = static_cast<int32_t>(v);
    std::memcpy(p, &v32, 4);
    return p + 4;
  }
  *p++ = static_cast<uint8_t>(0xb8 | (r & 7));
  std::memcpy(p, &v, 8);
  return p + 8;
}

// mov between a general-purpose register (64 or 32 bits) and [base + disp]: 8B /r loads, 89 /r
// stores; REX only when W, R or B is needed.
inline uint8_t *mov_memory(uint8_t *p, bool store, bool wide, int r, BaseDisp m) {
  const int rex = (wide ? 8 : 0) | (r & 8 ? 4 : 0) | (m.base & 8 ? 1 : 0);
  if (rex != 0) *p++ = static_cast<uint8_t>(0x40 | rex);
  *p++ = store ? 0x89 : 0x8b;
  return modrm_memory(p, r, m);
}

inline uint8_t *push(uint8_t *p, int r) {
  if (r & 8) *p++ = 0x41;
  *p++ = static_cast<uint8_t>(0x50 | (r & 7));
  return p;
}

inline uint8_t *pop(uint8_t *p, int r) {
  if (r & 8) *p++ = 0x41;
  *p++ = static_cast<uint8_t>(0x58 | (r & 7));
  return p;
}

inline uint8_t *vzeroupper(uint8_t *p) {
  p[0] = 0xc5;
  p[1] = 0xf8;
  p[2] = 0x77;
  return p + 3;
}

inline uint8_t *ret(uint8_t *p) {
  *p = 0xc3;
  return p + 1;
}

// jnz to code already written, `back` bytes before this instruction starts: rel8 when it
// reaches, else 0F 85 rel32.
inline uint8_t *jnz_back(uint8_t *p, int64_t back) {
  if (-back - 2 >= -128) {
    p[0] = 0x75;
    p[1] = static_cast<uint8_t>(-back - 2);
    return p + 2;
  }
  const auto rel = static_cast<int32_t>(-back - 6);
  p[0] = 0x0f;
  p[1] = 0x85;
  std::memcpy(p + 2, &rel, 4);
  return p + 6;
}

// A call, jmp or je to code not written yet: E8, E9 or 0F 84 and a rel32 of 0, which
// EmitterBase::land() points at the target later (the forms Xbyak writes for a label defined
// after the jump).
enum class Forward : uint8_t { Call, Jmp, Je };
inline uint8_t *forward(uint8_t *p, Forward kind) {
  if (kind == Forward::Je) *p++ = 0x0f;
  *p++ = kind == Forward::Call ? 0xe8 : kind == Forward::Jmp ? 0xe9 : 0x84;
  std::memset(p, 0, 4);
  return p + 4;
}

// prefetcht0 (into L1) and prefetcht1 (into L2): 0f 18 with the hint in ModRM.reg.
enum class PrefetchHint : int { T0 = 1, T1 = 2 };

inline uint8_t *prefetch(uint8_t *p, PrefetchHint hint, BaseDisp m) {
  if (m.base & 8) *p++ = 0x41;
  p[0] = 0x0f;
  p[1] = 0x18;
  return modrm_memory(p + 2, static_cast<int>(hint), m);
}

}  // namespace tessel::x86
