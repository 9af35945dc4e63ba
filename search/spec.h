// Spec: an operation applied to tensor specs. Specs are small plain values with a cheap hash:
// the solver memoizes on them and the database keys on their coordinates.
//
// DESIGN NOTE (what a kernel bakes in): a spec fixes shapes, layouts and levels. Leading
// dimensions of the user's A, B, C are not part of a spec, only a coarse class of A's and B's
// (TensorSpec::stride_class: what the cost model needs to know of them). They are baked into
// the emitted machine code as constants (as libxsmm does), so the registry key is spec +
// leading dimensions, while one solved plan serves every ld of a class. alpha is a run-time
// argument of every kernel (applied when accumulators are stored); beta selects the
// operation: 0 -> Matmul (C is never read), 1 -> MatmulAccum, anything else -> the runtime
// scales C, then MatmulAccum.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "dtype.h"
#include "tensor_spec.h"

namespace tessel {

enum class Op : uint8_t {
  Matmul,       // C = A*B          operands A (m x k), B (k x n), C (m x n)
  MatmulAccum,  // C += A*B         same operands
  Zero,         // T = 0            operand T (rows x cols)
  Move,         // dst = src, or dst += alpha*src when `accumulate`; src, dst (rows x cols)
};
const char *op_name(Op op);

// Memory the spec's operands may occupy at each level. The top spec gets the target's
// capacities; every capacity check is local to one spec (the footprint of its own operands
// at a level must fit), so limits never shrink on the way down.
struct MemoryLimits {
  uint32_t vregs = 0;  // vector registers
  uint32_t l1_kib = 0;
  uint32_t l2_kib = 0;
  uint32_t l3_kib = 0;
  friend bool operator==(const MemoryLimits &, const MemoryLimits &) = default;
  // Inline: every cache check of every staging and packing variant asks it.
  int64_t bytes(Level l) const {
    switch (l) {
      case Level::VRF:
        return vregs;
      case Level::L1:
        return int64_t{l1_kib} * 1024;
      case Level::L2:
        return int64_t{l2_kib} * 1024;
      case Level::L3:
        return int64_t{l3_kib} * 1024;
      case Level::GL:
        return INT64_MAX;
    }
    return 0;
  }
};

struct Spec {
  Op op = Op::Matmul;
  Dtype dtype = Dtype::F32;
  bool accumulate = false;  // Move only
  uint8_t threads = 1;      // 1 = serial; more = may run a parallel loop over that many
  std::array<int32_t, 3> dims{1, 1, 1};  // Matmul*: m, n, k. Zero/Move: rows, cols, 1
  std::array<TensorSpec, 3> operands{};  // Matmul*: A, B, C. Zero: T. Move: src, dst
  MemoryLimits limits;

  friend bool operator==(const Spec &, const Spec &) = default;

  int operand_count() const { return is_matmul() ? 3 : op == Op::Move ? 2 : 1; }
  // Rows and columns of operand `i`.
  int64_t rows(int i) const { return dims[operand_dims(i)[0]]; }
  int64_t cols(int i) const { return dims[operand_dims(i)[1]]; }
  // Which spec dimension each axis of operand `i` spans.
  std::array<int, 2> operand_dims(int i) const {
    if (!is_matmul()) return {0, 1};
    static constexpr std::array<int, 2> kMap[3] = {{0, 2}, {2, 1}, {0, 1}};
    return kMap[i];
  }
  bool is_matmul() const { return op == Op::Matmul || op == Op::MatmulAccum; }
  const TensorSpec &a() const { return operands[0]; }
  const TensorSpec &b() const { return operands[1]; }
  const TensorSpec &c() const { return operands[2]; }
};

// Fixed-width integer coordinates of a spec: the memo and the database key on these.
using SpecKey = std::array<uint64_t, 5>;
SpecKey spec_key(const Spec &s);
// The inverse of spec_key for every spec (keys hold all its fields).
Spec spec_from_key(const SpecKey &k);
uint64_t spec_hash(const Spec &s);
uint64_t key_hash(const SpecKey &key);

// Clears what cannot change a spec's solution (unused dimensions and operands, flags of
// other ops) so equal problems meet in the memo. Idempotent.
Spec canonical(Spec s);

std::string to_string(const Spec &s);

// The top-level spec for C = op(A)*op(B) (+ C) with row-major C; `trans_a` means A is
// stored k x m (so read column-major), `trans_b` likewise for B.
// `lda_bytes`, `ldb_bytes`: the distance between consecutive stored rows (or columns) of A
// and B, which gives their stride classes (0: as tight as the shape allows).
Spec matmul_spec(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, bool accumulate,
                 int threads, MemoryLimits limits, int64_t lda_bytes = 0, int64_t ldb_bytes = 0);

// Where the operands of an m x n x k matmul call on `threads` threads are taken to live (see
// matmul_spec).
Level home_level(int64_t m, int64_t n, int64_t k, int threads, const MemoryLimits &limits);

// Rows this far apart or more alias in the L1 sets of every x86 core we target: a 4 KiB way
// holds 64 sets of 64 bytes, so every eighth row 512 B apart falls in the same set, and a
// staged tile of 64 such rows fills all 8 ways (128^3 with its B unpacked that way: -6.5%).
constexpr int64_t kWideStrideBytes = 512;

// The widest strip (bytes across its stored rows) a k loop walks down as a few strided
// streams (TensorSpec::walked): up to five lines a row, about as many streams as the rows
// read side by side that the prefetchers follow best (Target::coef.stream_factor).
constexpr int64_t kWalkedStripBytes = 256;

// The TensorSpec::stride_class of a user matrix whose stored rows are `stride_bytes` apart.
// Row r starts at byte r * stride of a 4 KiB L1 way, which takes 4096 / gcd(stride, 4096)
// values, as many sets up to 64: a stride of 4 KiB or a multiple (ld = 1024, 2048, 3072
// floats) starts every row in the same set, 3 KiB (768 floats) in 4, 4000 bytes in all 64.
uint8_t stride_class(int64_t stride_bytes);

struct SpecHash {
  size_t operator()(const Spec &s) const { return spec_hash(s); }
};
struct SpecKeyHash {
  size_t operator()(const SpecKey &k) const { return key_hash(k); }
};

}  // namespace tessel
