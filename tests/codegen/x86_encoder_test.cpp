// The direct encoder (codegen/x86_encoder.h) and EmitterBase's hot instruction overloads write
// exactly the bytes Xbyak writes: every register, every base register (rsp and r12 need a
// SIB byte, rbp and r13 a disp8 even for 0) and every displacement class (0, disp8 edges,
// disp32 edges, displacements beyond 32 bits), ymm and xmm, jumps of every reach, the
// function's preamble and postamble, and near the end of a full buffer.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include "emitter_base.h"
#include "jit_kernel.h"

namespace tessel {
namespace {

constexpr int32_t kDisplacements[] = {0,     1,      -1,     64,    127,       -128,
                                      128,   -129,   4096,   -4096, INT32_MAX, INT32_MIN,
                                      65536, 200000, -65537, 0x55aa};
constexpr int64_t kWideDisplacements[] = {int64_t{1} << 32, -(int64_t{1} << 40),
                                          int64_t{INT32_MAX} + 1, int64_t{INT32_MIN} - 1};
constexpr int32_t kImmediates[] = {1, -1, 127, -128, 128, -129, 4096, INT32_MAX, INT32_MIN};
constexpr int64_t kWideImmediates[] = {
    0,  1,         int64_t{1} << 31,       0xffffffffLL, int64_t{1} << 32,
    -1, INT32_MIN, int64_t{INT32_MIN} - 1, INT64_MAX};

struct FreeDeleter {
  void operator()(uint8_t *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

Buffer page_aligned(size_t bytes) {
  return Buffer(static_cast<uint8_t *>(std::aligned_alloc(4096, bytes)));
}

// Emits one instruction with both emitters and compares the bytes each added.
class Comparison {
 public:
  explicit Comparison(size_t capacity = 1 << 22)
      : fast_buffer_(page_aligned(capacity)),
        ref_buffer_(page_aligned(capacity)),
        fast_(fast_buffer_.get(), capacity),
        ref_(capacity, ref_buffer_.get()) {}

  void check(const std::string &what, const std::function<void(EmitterBase &)> &fast,
             const std::function<void(Xbyak::CodeGenerator &)> &ref) {
    const size_t f0 = fast_.getSize(), r0 = ref_.getSize();
    fast(fast_);
    ref(ref_);
    ++count_;
    const std::string got(reinterpret_cast<const char *>(fast_.getCode()) + f0,
                          fast_.getSize() - f0);
    const std::string want(reinterpret_cast<const char *>(ref_.getCode()) + r0,
                           ref_.getSize() - r0);
    if (got != want && mismatches_++ < 5)
      FAIL_CHECK(what << ": " << hex(got) << " != " << hex(want));
  }
  int count() const { return count_; }
  int mismatches() const { return mismatches_; }

 private:
  static std::string hex(const std::string &bytes) {
    std::ostringstream os;
    for (unsigned char c : bytes) os << std::hex << (c < 16 ? "0" : "") << int(c) << ' ';
    return os.str();
  }
  Buffer fast_buffer_, ref_buffer_;
  EmitterBase fast_;
  Xbyak::CodeGenerator ref_;
  int count_ = 0, mismatches_ = 0;
};

std::string name(const char *op, int a, int b = -1, int c = -1, int64_t d = 0) {
  std::ostringstream os;
  os << op << " " << a << " " << b << " " << c << " disp/imm " << d;
  return os.str();
}

Xbyak::Address at(int base, int64_t disp) {
  return Xbyak::util::ptr[Xbyak::Reg64(base) + static_cast<int32_t>(disp)];
}

}  // namespace

TEST_CASE("codegen: direct VEX register forms equal Xbyak's bytes for every register") {
  Comparison c;
  for (int d = 0; d < 16; ++d)
    for (int a = 0; a < 16; ++a)
      for (int b = 0; b < 16; ++b) {
        using Y = Xbyak::Ymm;
        c.check(
            name("vfmadd231ps", d, a, b),
            [&](EmitterBase &e) { e.vfmadd231ps(Vreg{d}, Vreg{a}, Vreg{b}); },
            [&](Xbyak::CodeGenerator &x) { x.vfmadd231ps(Y(d), Y(a), Y(b)); });
        c.check(
            name("vmulps", d, a, b), [&](EmitterBase &e) { e.vmulps(Vreg{d}, Vreg{a}, Vreg{b}); },
            [&](Xbyak::CodeGenerator &x) { x.vmulps(Y(d), Y(a), Y(b)); });
        c.check(
            name("vxorps", d, a, b), [&](EmitterBase &e) { e.vxorps(Vreg{d}, Vreg{a}, Vreg{b}); },
            [&](Xbyak::CodeGenerator &x) { x.vxorps(Y(d), Y(a), Y(b)); });
      }
  CHECK(c.mismatches() == 0);
  MESSAGE(c.count() << " instructions compared");
}

TEST_CASE("codegen: direct VEX memory forms equal Xbyak's bytes for every base and displacement") {
  Comparison c;
  using X = Xbyak::Xmm;
  using Y = Xbyak::Ymm;
  for (int r = 0; r < 16; ++r)
    for (int base = 0; base < 16; ++base)
      for (int32_t disp : kDisplacements) {
        const Mem m{base, -1, disp};
        c.check(
            name("vmovups load", r, base, -1, disp), [&](EmitterBase &e) { e.vmovups(Vreg{r}, m); },
            [&](Xbyak::CodeGenerator &x) { x.vmovups(Y(r), at(base, disp)); });
        c.check(
            name("vmovups store", r, base, -1, disp),
            [&](EmitterBase &e) { e.vmovups(m, Vreg{r}); },
            [&](Xbyak::CodeGenerator &x) { x.vmovups(at(base, disp), Y(r)); });
        c.check(
            name("vbroadcastss", r, base, -1, disp),
            [&](EmitterBase &e) { e.vbroadcastss(Vreg{r}, m); },
            [&](Xbyak::CodeGenerator &x) { x.vbroadcastss(Y(r), at(base, disp)); });
        for (int mask : {0, 7, 8, 15, (r + 3) % 16})
          c.check(
              name("vmaskmovps", r, mask, base, disp),
              [&](EmitterBase &e) { e.vmaskmovps(Vreg{r}, Vreg{mask}, m); },
              [&](Xbyak::CodeGenerator &x) { x.vmaskmovps(Y(r), Y(mask), at(base, disp)); });
        for (int a : {0, 7, 8, 15, (r + 5) % 16})
          c.check(
              name("vfmadd213ps load", r, a, base, disp),
              [&](EmitterBase &e) { e.vfmadd213ps(Vreg{r}, Vreg{a}, m); },
              [&](Xbyak::CodeGenerator &x) { x.vfmadd213ps(Y(r), Y(a), at(base, disp)); });
        for (int a : {0, 7, 8, 15, (r + 5) % 16})
          c.check(
              name("vfmadd231ps load", r, a, base, disp),
              [&](EmitterBase &e) { e.vfmadd231ps(Vreg{r}, Vreg{a}, m); },
              [&](Xbyak::CodeGenerator &x) { x.vfmadd231ps(Y(r), Y(a), at(base, disp)); });
        // The Xbyak-typed overloads, ymm and xmm.
        c.check(
            name("vmovups ymm load", r, base, -1, disp),
            [&](EmitterBase &e) { e.vmovups(Y(r), m); },
            [&](Xbyak::CodeGenerator &x) { x.vmovups(Y(r), at(base, disp)); });
        c.check(
            name("vmovups xmm load", r, base, -1, disp),
            [&](EmitterBase &e) { e.vmovups(X(r), m); },
            [&](Xbyak::CodeGenerator &x) { x.vmovups(X(r), at(base, disp)); });
        c.check(
            name("vmovups xmm store", r, base, -1, disp),
            [&](EmitterBase &e) { e.vmovups(m, X(r)); },
            [&](Xbyak::CodeGenerator &x) { x.vmovups(at(base, disp), X(r)); });
        c.check(
            name("vmovss load", r, base, -1, disp), [&](EmitterBase &e) { e.vmovss(X(r), m); },
            [&](Xbyak::CodeGenerator &x) { x.vmovss(X(r), at(base, disp)); });
        c.check(
            name("vmovss store", r, base, -1, disp), [&](EmitterBase &e) { e.vmovss(m, X(r)); },
            [&](Xbyak::CodeGenerator &x) { x.vmovss(at(base, disp), X(r)); });
      }
  CHECK(c.mismatches() == 0);
  MESSAGE(c.count() << " instructions compared");
}

TEST_CASE("codegen: direct loop bookkeeping equals Xbyak's bytes") {
  Comparison c;
  using R = Xbyak::Reg64;
  for (int r = 0; r < 16; ++r) {
    c.check(
        name("dec", r), [&](EmitterBase &e) { e.dec(R(r)); },
        [&](Xbyak::CodeGenerator &x) { x.dec(R(r)); });
    for (int32_t v : kImmediates)
      c.check(
          name("add_imm", r, -1, -1, v), [&](EmitterBase &e) { e.add_imm(R(r), v); },
          [&](Xbyak::CodeGenerator &x) { x.add(R(r), v); });
    for (int64_t v : kWideImmediates)
      c.check(
          name("add_imm wide", r, -1, -1, v), [&](EmitterBase &e) { e.add_imm(R(r), v); },
          [&](Xbyak::CodeGenerator &x) {
            if (v == 0) return;  // nothing to add
            if (x86::fits_int32(v)) {
              x.add(R(r), static_cast<int32_t>(v));
            } else {
              x.mov(x.rax, v);
              x.add(R(r), x.rax);
            }
          });
    for (int32_t disp : kDisplacements)
      c.check(
          name("prefetcht0", r, -1, -1, disp),
          [&](EmitterBase &e) {
            e.prefetcht0(Mem{r, -1, disp});
          },
          [&](Xbyak::CodeGenerator &x) { x.prefetcht0(at(r, disp)); });
    for (int32_t disp : kDisplacements)
      c.check(
          name("prefetcht1", r, -1, -1, disp),
          [&](EmitterBase &e) {
            e.prefetcht1(Mem{r, -1, disp});
          },
          [&](Xbyak::CodeGenerator &x) { x.prefetcht1(at(r, disp)); });
  }
  CHECK(c.mismatches() == 0);
  MESSAGE(c.count() << " instructions compared");
}

TEST_CASE("codegen: direct general-purpose forms equal Xbyak's bytes") {
  Comparison c;
  using R = Xbyak::Reg64;
  for (int r = 0; r < 16; ++r) {
    for (int64_t v : kWideImmediates)
      c.check(
          name("mov_imm", r, -1, -1, v), [&](EmitterBase &e) { e.mov_imm(R(r), v); },
          [&](Xbyak::CodeGenerator &x) { x.mov(R(r), v); });
  }
  CHECK(c.mismatches() == 0);
  // The frame's forms, through the raw encoder (EmitterBase uses them in preamble/postamble).
  auto raw = [](auto encode) {
    uint8_t bytes[x86::kMaxBytes];
    return std::string(reinterpret_cast<const char *>(bytes), size_t(encode(bytes) - bytes));
  };
  auto xbyak = [](auto emit) {
    Buffer buffer = page_aligned(4096);
    Xbyak::CodeGenerator x(4096, buffer.get());
    emit(x);
    return std::string(reinterpret_cast<const char *>(x.getCode()), x.getSize());
  };
  int mismatches = 0;
  auto expect = [&](const std::string &got, const std::string &want, const std::string &what) {
    if (got != want && mismatches++ < 5) FAIL_CHECK(what);
  };
  for (int r = 0; r < 16; ++r) {
    expect(raw([&](uint8_t *p) { return x86::push(p, r); }),
           xbyak([&](Xbyak::CodeGenerator &x) { x.push(R(r)); }), name("push", r));
    expect(raw([&](uint8_t *p) { return x86::pop(p, r); }),
           xbyak([&](Xbyak::CodeGenerator &x) { x.pop(R(r)); }), name("pop", r));
    for (int32_t v : kImmediates) {
      if (r == 0) continue;  // rax has its own form (Xbyak's)
      expect(raw([&](uint8_t *p) { return x86::alu_imm(p, x86::kSub, r, v); }),
             xbyak([&](Xbyak::CodeGenerator &x) { x.sub(R(r), v); }), name("sub", r, -1, -1, v));
      expect(raw([&](uint8_t *p) { return x86::alu_imm(p, x86::kAdd, r, v); }),
             xbyak([&](Xbyak::CodeGenerator &x) { x.add(R(r), v); }), name("add", r, -1, -1, v));
    }
    for (int base = 0; base < 16; ++base)
      for (int32_t disp : kDisplacements) {
        const Xbyak::Reg32 r32(r);
        const x86::BaseDisp m{base, disp};
        expect(raw([&](uint8_t *p) { return x86::mov_memory(p, false, true, r, m); }),
               xbyak([&](Xbyak::CodeGenerator &x) { x.mov(R(r), x.qword[R(base) + disp]); }),
               name("mov load 64", r, base, -1, disp));
        expect(raw([&](uint8_t *p) { return x86::mov_memory(p, false, false, r, m); }),
               xbyak([&](Xbyak::CodeGenerator &x) { x.mov(r32, x.dword[R(base) + disp]); }),
               name("mov load 32", r, base, -1, disp));
        expect(raw([&](uint8_t *p) { return x86::mov_memory(p, true, true, r, m); }),
               xbyak([&](Xbyak::CodeGenerator &x) { x.mov(x.qword[R(base) + disp], R(r)); }),
               name("mov store 64", r, base, -1, disp));
        expect(raw([&](uint8_t *p) { return x86::mov_memory(p, true, false, r, m); }),
               xbyak([&](Xbyak::CodeGenerator &x) { x.mov(x.dword[R(base) + disp], r32); }),
               name("mov store 32", r, base, -1, disp));
      }
  }
  expect(raw([](uint8_t *p) { return x86::vzeroupper(p); }),
         xbyak([](Xbyak::CodeGenerator &x) { x.vzeroupper(); }), "vzeroupper");
  expect(raw([](uint8_t *p) { return x86::ret(p); }),
         xbyak([](Xbyak::CodeGenerator &x) { x.ret(); }), "ret");
  CHECK(mismatches == 0);
}

TEST_CASE("codegen: a direct jnz back to a loop's top equals Xbyak's label jump at every reach") {
  // Loop bodies of every length around the rel8 / rel32 boundary and beyond: the direct jump
  // against Xbyak's jnz to a label defined at the top (with near jumps by default, as
  // PlanEmitter sets).
  for (int body = 0; body < 300; body += body < 140 ? 1 : 37) {
    Buffer fast_buffer = page_aligned(4096), ref_buffer = page_aligned(4096);
    EmitterBase fast(fast_buffer.get(), 4096);
    fast.setDefaultJmpNEAR(true);
    const size_t top = fast.here();
    for (int i = 0; i < body; ++i) fast.nop(1);
    fast.jnz_back(top);
    const std::string got(reinterpret_cast<const char *>(fast.getCode()), fast.getSize());
    Xbyak::CodeGenerator ref(4096, ref_buffer.get());
    ref.setDefaultJmpNEAR(true);
    Xbyak::Label label;
    ref.L(label);
    for (int i = 0; i < body; ++i) ref.nop(1);
    ref.jnz(label);
    const std::string want(reinterpret_cast<const char *>(ref.getCode()), ref.getSize());
    CHECK_MESSAGE(got == want, "body of " << body << " bytes");
  }
}

TEST_CASE("codegen: a direct forward call, jmp and je, landed, equal Xbyak's near label jumps") {
  for (x86::Forward kind : {x86::Forward::Call, x86::Forward::Jmp, x86::Forward::Je})
    for (int body : {0, 1, 126, 127, 128, 129, 300}) {
      Buffer fast_buffer = page_aligned(4096), ref_buffer = page_aligned(4096);
      EmitterBase fast(fast_buffer.get(), 4096);
      fast.nop(3);
      const size_t at = fast.forward(kind);
      for (int i = 0; i < body; ++i) fast.nop(1);
      fast.land(at);
      fast.ret();
      const std::string got(reinterpret_cast<const char *>(fast.getCode()), fast.getSize());
      Xbyak::CodeGenerator ref(4096, ref_buffer.get());
      Xbyak::Label label;
      ref.nop(3);
      if (kind == x86::Forward::Call) ref.call(label);
      if (kind == x86::Forward::Jmp) ref.jmp(label, Xbyak::CodeGenerator::T_NEAR);
      if (kind == x86::Forward::Je) ref.je(label, Xbyak::CodeGenerator::T_NEAR);
      for (int i = 0; i < body; ++i) ref.nop(1);
      ref.L(label);
      ref.ret();
      const std::string want(reinterpret_cast<const char *>(ref.getCode()), ref.getSize());
      CHECK_MESSAGE(got == want, "kind " << int(kind) << ", body of " << body << " bytes");
    }
}

TEST_CASE("codegen: the direct preamble and postamble equal Xbyak's") {
  // What EmitterBase wrote through Xbyak before, spelled out, for frames with and without
  // spill slots (an imm8 and an imm32 frame size), saving some or all callee-saved registers,
  // with and without the workspace and range arguments.
  struct Frame : EmitterBase {
    using EmitterBase::EmitterBase;
    using EmitterBase::FrameNeeds;
    void function(const FrameNeeds &needs) {
      preamble(needs);
      postamble();
    }
  };
  for (int spills : {0, 1, 2, 5, 6, 7, 100})
    for (int saved : {0, 1, 2, 3, 6})
      for (int args = 0; args < 8; ++args) {
        Frame::FrameNeeds needs;
        needs.spill_slots = spills;
        needs.saved_registers = saved;
        needs.workspace = args & 1;
        needs.range = args & 2;
        needs.copies = args & 4;
        Buffer fast_buffer = page_aligned(4096), ref_buffer = page_aligned(4096);
        Frame fast(fast_buffer.get(), 4096);
        fast.function(needs);
        const std::string got(reinterpret_cast<const char *>(fast.getCode()), fast.getSize());
        Xbyak::CodeGenerator x(4096, ref_buffer.get());
        const Xbyak::Reg64 callee_saved[] = {x.rbx, x.rbp, x.r12, x.r13, x.r14, x.r15};
        for (int i = 0; i < saved; ++i) x.push(callee_saved[i]);
        int qwords = 11 + spills;
        if ((qwords + saved) % 2 == 0) ++qwords;  // rsp 16-byte aligned in the body
        x.sub(x.rsp, qwords * 8);
        x.mov(x.rsi, x.qword[x.rdi + offsetof(KernelArgs, b)]);
        x.mov(x.rdx, x.qword[x.rdi + offsetof(KernelArgs, c)]);
        x.mov(x.eax, x.dword[x.rdi + offsetof(KernelArgs, alpha)]);
        x.mov(x.dword[x.rsp], x.eax);
        if (needs.workspace) {
          x.mov(x.rax, x.qword[x.rdi + offsetof(KernelArgs, workspace)]);
          x.mov(x.qword[x.rsp + 8], x.rax);
        }
        if (needs.range) {
          x.mov(x.rax, x.qword[x.rdi + offsetof(KernelArgs, begin)]);
          x.mov(x.qword[x.rsp + 16], x.rax);
          x.mov(x.rax, x.qword[x.rdi + offsetof(KernelArgs, end)]);
          x.mov(x.qword[x.rsp + 24], x.rax);
        }
        if (needs.copies) {
          x.mov(x.rax, x.qword[x.rdi + offsetof(KernelArgs, copies)]);
          x.mov(x.qword[x.rsp + 80], x.rax);
        }
        x.mov(x.rdi, x.qword[x.rdi + offsetof(KernelArgs, a)]);
        x.vzeroupper();
        x.add(x.rsp, qwords * 8);
        for (int i = saved - 1; i >= 0; --i) x.pop(callee_saved[i]);
        x.ret();
        const std::string want(reinterpret_cast<const char *>(x.getCode()), x.getSize());
        CHECK_MESSAGE(got == want, spills << " spill slots, " << saved << " saved, args " << args);
      }
}

TEST_CASE("codegen: data() writes a table as Xbyak's dd() would") {
  Buffer fast_buffer = page_aligned(4096), ref_buffer = page_aligned(4096);
  EmitterBase fast(fast_buffer.get(), 4096);
  Xbyak::CodeGenerator ref(4096, ref_buffer.get());
  uint8_t table[64];
  for (int i = 0; i < 64; ++i) table[i] = uint8_t(i < 32 ? 0xff : 0);
  fast.data(table, sizeof table);
  for (int i = 0; i < 8; ++i) ref.dd(0xffffffffu);
  for (int i = 0; i < 8; ++i) ref.dd(0);
  CHECK(std::string(reinterpret_cast<const char *>(fast.getCode()), fast.getSize()) ==
        std::string(reinterpret_cast<const char *>(ref.getCode()), ref.getSize()));
}

TEST_CASE("codegen: displacements beyond 32 bits go through reg_scratch as before") {
  Comparison c;
  using Y = Xbyak::Ymm;
  for (int r : {0, 5, 8, 15})
    for (int base : {1, 4, 5, 12, 13})
      for (int64_t disp : kWideDisplacements)
        c.check(
            name("vmovups far", r, base, -1, disp),
            [&](EmitterBase &e) { e.vmovups(Vreg{r}, e.mem(Xbyak::Reg64(base), disp)); },
            [&](Xbyak::CodeGenerator &x) {
              x.mov(x.rax, disp);
              x.vmovups(Y(r), x.ptr[Xbyak::Reg64(base) + x.rax]);
            });
  CHECK(c.mismatches() == 0);
}

TEST_CASE("codegen: the direct encoder leaves a nearly full buffer to Xbyak, which reports it") {
  // Fill buffers of every small size with one mix of instructions: the bytes that fit are
  // Xbyak's (the last instruction cut where the buffer ends, as Xbyak cuts it), and both
  // report the buffer too small.
  for (size_t capacity = 1; capacity <= 160; ++capacity) {
    Buffer fast_buffer = page_aligned(4096), ref_buffer = page_aligned(4096);
    EmitterBase fast(fast_buffer.get(), capacity);
    for (int i = 0; i < 8; ++i) {
      fast.vfmadd231ps(Vreg{i}, Vreg{i + 8}, Vreg{15 - i});
      fast.vmovups(Vreg{i}, Mem{12, -1, 4 * i});
      fast.add_imm(fast.reg_src, 1000 * i + 1);
      fast.mov_imm(fast.reg_count, int64_t{1} << (8 * i));
    }
    const bool fast_full = fast.code_too_big();
    const std::string fast_code(reinterpret_cast<const char *>(fast.getCode()), fast.getSize());
    Xbyak::ClearError();
    Xbyak::CodeGenerator ref(capacity, ref_buffer.get());
    for (int i = 0; i < 8; ++i) {
      ref.vfmadd231ps(Xbyak::Ymm(i), Xbyak::Ymm(i + 8), Xbyak::Ymm(15 - i));
      ref.vmovups(Xbyak::Ymm(i), at(12, 4 * i));
      ref.add(ref.r13, 1000 * i + 1);
      ref.mov(ref.rcx, uint64_t{1} << (8 * i));
    }
    const bool ref_full = Xbyak::GetError() == Xbyak::ERR_CODE_IS_TOO_BIG;
    Xbyak::ClearError();
    const std::string ref_code(reinterpret_cast<const char *>(ref.getCode()), ref.getSize());
    CHECK_MESSAGE(fast_full, "capacity " << capacity);
    CHECK(ref_full);
    CHECK_MESSAGE(fast_code == ref_code, "capacity " << capacity);
  }
}

}  // namespace tessel
