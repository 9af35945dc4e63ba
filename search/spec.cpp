#include "spec.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "check.h"

namespace tessel {

const char *dtype_name(Dtype d) {
  return d == Dtype::F32 ? "f32" : "bf16";
}

const char *level_name(Level l) {
  switch (l) {
    case Level::VRF:
      return "VRF";
    case Level::L1:
      return "L1";
    case Level::L2:
      return "L2";
    case Level::L3:
      return "L3";
    case Level::GL:
      return "GL";
  }
  return "?";
}

const char *op_name(Op op) {
  switch (op) {
    case Op::Matmul:
      return "Matmul";
    case Op::MatmulAccum:
      return "MatmulAccum";
    case Op::Zero:
      return "Zero";
    case Op::Move:
      return "Move";
  }
  return "?";
}

std::string to_string(const TensorSpec &t) {
  return std::string(level_name(t.level)) + ":" + to_string(t.layout) + (t.walked ? "~" : "");
}

static uint64_t tensor_code(const TensorSpec &t) {
  return uint64_t(t.level) | uint64_t(t.layout.kind) << 4 | uint64_t(t.layout.strip) << 8;
}

SpecKey spec_key(const Spec &s) {
  SpecKey k{};
  k[0] = uint64_t(s.op) | uint64_t(s.dtype) << 8 | uint64_t(s.accumulate) << 16 |
         uint64_t(s.threads) << 24;
  k[1] = tensor_code(s.operands[0]) | tensor_code(s.operands[1]) << 16 |
         tensor_code(s.operands[2]) << 32 | uint64_t(s.operands[0].stride_class) << 48 |
         uint64_t(s.operands[1].stride_class) << 51 | uint64_t(s.operands[2].stride_class) << 54 |
         uint64_t(s.operands[0].contiguous) << 57 | uint64_t(s.operands[1].contiguous) << 58 |
         uint64_t(s.operands[2].contiguous) << 59 | uint64_t(s.operands[0].walked) << 60 |
         uint64_t(s.operands[1].walked) << 61 | uint64_t(s.operands[2].walked) << 62;
  k[2] = uint64_t(uint32_t(s.dims[0])) | uint64_t(uint32_t(s.dims[1])) << 32;
  k[3] = uint64_t(uint32_t(s.dims[2])) | uint64_t(s.limits.vregs) << 32;
  k[4] =
      uint64_t(s.limits.l1_kib) | uint64_t(s.limits.l2_kib) << 16 | uint64_t(s.limits.l3_kib) << 40;
  return k;
}

static TensorSpec tensor_from_code(uint64_t code) {
  return TensorSpec{Level(code & 0xf), Layout{LayoutKind((code >> 4) & 0xf), uint8_t(code >> 8)}};
}

Spec spec_from_key(const SpecKey &k) {
  Spec s;
  s.op = Op(k[0] & 0xff);
  s.dtype = Dtype((k[0] >> 8) & 0xff);
  s.accumulate = (k[0] >> 16) & 0xff;
  s.threads = uint8_t(k[0] >> 24);
  for (int i = 0; i < 3; ++i) {
    s.operands[i] = tensor_from_code((k[1] >> (16 * i)) & 0xffff);
    s.operands[i].stride_class = uint8_t((k[1] >> (48 + 3 * i)) & 7);
    s.operands[i].contiguous = (k[1] >> (57 + i)) & 1;
    s.operands[i].walked = (k[1] >> (60 + i)) & 1;
  }
  s.dims = {int32_t(uint32_t(k[2])), int32_t(uint32_t(k[2] >> 32)), int32_t(uint32_t(k[3]))};
  s.limits.vregs = uint32_t(k[3] >> 32);
  s.limits.l1_kib = uint32_t(k[4] & 0xffff);
  s.limits.l2_kib = uint32_t((k[4] >> 16) & 0xffffff);
  s.limits.l3_kib = uint32_t(k[4] >> 40);
  return s;
}

uint64_t spec_hash(const Spec &s) {
  return key_hash(spec_key(s));
}

uint64_t key_hash(const SpecKey &key) {
  // One multiply per word (distinct odd constants), then splitmix64's finalizer: the memo
  // probes with it for every child of every action tried.
  static constexpr uint64_t kMul[5] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                                       0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull,
                                       0xff51afd7ed558ccdull};
  uint64_t h = 0;
  for (int i = 0; i < 5; ++i) h = (h ^ key[i]) * kMul[i] + (h >> 29);
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

Spec canonical(Spec s) {
  if (s.op != Op::Move) s.accumulate = false;
  if (!s.is_matmul()) s.dims[2] = 1;
  for (int i = s.operand_count(); i < 3; ++i) s.operands[i] = TensorSpec{};
  for (int i = 0; i < s.operand_count(); ++i) {
    TensorSpec &t = s.operands[i];
    if (t.layout.is_register()) t.level = Level::VRF;     // one place to be
    if (!t.layout.is_panel()) t.layout.strip = 0;         // only panels have strips
    if (t.layout.is_panel() || t.layout.is_register()) {  // user data only
      t.stride_class = 0;
      t.contiguous = false;
    }
    if (t.level != Level::L3) t.walked = false;  // only read from L3 (read_cost)
  }
  if (s.threads == 0) s.threads = 1;
  return s;
}

std::string to_string(const Spec &s) {
  std::string out = op_name(s.op);
  out += "(";
  if (s.is_matmul()) {
    out += std::to_string(s.dims[0]) + "x" + std::to_string(s.dims[1]) + "x" +
           std::to_string(s.dims[2]);
  } else {
    out += std::to_string(s.dims[0]) + "x" + std::to_string(s.dims[1]);
  }
  static const char *kNames[3][3] = {{"A", "B", "C"}, {"T", "", ""}, {"src", "dst", ""}};
  const int names = s.is_matmul() ? 0 : s.op == Op::Zero ? 1 : 2;
  for (int i = 0; i < s.operand_count(); ++i)
    out += std::string(", ") + kNames[names][i] + "=" + to_string(s.operands[i]);
  if (s.accumulate) out += ", +=";
  if (s.threads > 1) out += ", threads=" + std::to_string(s.threads);
  out += ")";
  return out;
}

Level home_level(int64_t m, int64_t n, int64_t k, int threads, const MemoryLimits &limits) {
  const int64_t bytes = (m * k + k * n + m * n) * 4;
  // Operands that fit a cache together are taken to be there: a program that calls a shape
  // repeatedly, or made its operands just before the call, finds them there. The L2 is the
  // calling core's own, so only a call that runs on that core alone finds them in it.
  if (threads <= 1 && bytes <= limits.bytes(Level::L2)) return Level::L2;
  return bytes <= limits.bytes(Level::L3) ? Level::L3 : Level::GL;
}

uint8_t stride_class(int64_t stride_bytes) {
  if (stride_bytes < kWideStrideBytes) return 0;
  const int64_t start_gap = std::max(std::gcd(stride_bytes, kL1WayBytes), kLineBytes);
  return static_cast<uint8_t>(1 + std::countr_zero(static_cast<uint64_t>(kL1WayBytes / start_gap)));
}

Spec matmul_spec(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, bool accumulate,
                 int threads, MemoryLimits limits, int64_t lda_bytes, int64_t ldb_bytes) {
  TESSEL_CHECK(m > 0 && n > 0 && k > 0 && m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX,
               "matmul_spec: dimensions out of range");
  Spec s;
  s.op = accumulate ? Op::MatmulAccum : Op::Matmul;
  s.dims = {int32_t(m), int32_t(n), int32_t(k)};
  const Level home = home_level(m, n, k, threads, limits);
  const int64_t tight_a = (trans_a ? m : k) * 4, tight_b = (trans_b ? k : n) * 4;
  s.operands[0] = {home, trans_a ? col_major() : row_major(),
                   stride_class(std::max(lda_bytes, tight_a))};
  s.operands[1] = {home, trans_b ? col_major() : row_major(),
                   stride_class(std::max(ldb_bytes, tight_b))};
  s.operands[1].contiguous = m == 1 && !trans_b && ldb_bytes <= tight_b;
  s.operands[2] = {home, row_major()};
  s.threads = uint8_t(threads < 1 ? 1 : threads > 255 ? 255 : threads);
  s.limits = limits;
  return canonical(s);
}

}  // namespace tessel
