// The direct encoder (codegen/x86_encoder.h) and EmitterBase's hot instruction overloads write
// exactly the bytes Xbyak writes: every register, every base register (rsp and r12 need a
// SIB byte, rbp and r13 a disp8 even for 0) and every displacement class (0, disp8 edges,
// disp32 edges, displacements beyond 32 bits), ymm and xmm, and near the end of a full buffer.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include "emitter_base.h"

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
  }
  CHECK(c.mismatches() == 0);
  MESSAGE(c.count() << " instructions compared");
}

TEST_CASE("codegen: raw encoder bytes equal Xbyak's for mov r64, imm") {
  // mov has no direct overload (Xbyak writes it); the encoder's form is checked on its own.
  for (int r = 0; r < 16; ++r)
    for (int64_t v : kWideImmediates) {
      Buffer buffer = page_aligned(4096);
      Xbyak::CodeGenerator x(4096, buffer.get());
      x.mov(Xbyak::Reg64(r), v);
      uint8_t raw[x86::kMaxBytes];
      const uint8_t *end = x86::mov_imm(raw, r, v);
      const std::string got(reinterpret_cast<const char *>(raw), size_t(end - raw));
      const std::string want(reinterpret_cast<const char *>(x.getCode()), x.getSize());
      CHECK_MESSAGE(got == want, name("mov", r, -1, -1, v));
    }
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
  // Xbyak's, and both report the buffer too small at the same point.
  for (size_t capacity = 1; capacity <= 64; ++capacity) {
    Buffer fast_buffer = page_aligned(4096), ref_buffer = page_aligned(4096);
    EmitterBase fast(fast_buffer.get(), capacity);
    for (int i = 0; i < 8; ++i) {
      fast.vfmadd231ps(Vreg{i}, Vreg{i + 8}, Vreg{15 - i});
      fast.vmovups(Vreg{i}, Mem{12, -1, 4 * i});
      fast.add_imm(fast.reg_src, 1000 * i + 1);
    }
    const bool fast_full = fast.code_too_big();
    const std::string fast_code(reinterpret_cast<const char *>(fast.getCode()), fast.getSize());
    Xbyak::ClearError();
    Xbyak::CodeGenerator ref(capacity, ref_buffer.get());
    for (int i = 0; i < 8; ++i) {
      ref.vfmadd231ps(Xbyak::Ymm(i), Xbyak::Ymm(i + 8), Xbyak::Ymm(15 - i));
      ref.vmovups(Xbyak::Ymm(i), at(12, 4 * i));
      ref.add(ref.r13, 1000 * i + 1);
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
