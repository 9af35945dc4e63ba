// A user's GEMM call, validated and normalized to tessel's form: row-major C, A and B row- or
// column-major. A column-major call C = op(A) op(B) is the row-major call
// C^T = op(B)^T op(A)^T on the same memory, so A and B (and m and n) swap.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "tessel/tessel.h"

namespace tessel::runtime {

// Everything a compiled kernel bakes in. beta only selects overwrite or accumulate.
struct KernelKey {
  int32_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false, accumulate = false;
  uint8_t threads = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;
  friend bool operator==(const KernelKey &, const KernelKey &) = default;
};

struct KernelKeyHash {
  size_t operator()(const KernelKey &k) const;
};

std::string kernel_name(const KernelKey &k);

struct Problem {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  bool swapped = false;  // a column-major call: A and B trade places
  const float *a = nullptr, *b = nullptr;
  float *c = nullptr;
  int64_t lda = 0, ldb = 0, ldc = 0;
};

// The value a C caller passed for an enum parameter, read without assuming it is one of the
// enumerators (a C caller may pass any int; reading it as the C++ enum would be undefined).
template <class Enum>
int enum_bits(const Enum &e) {
  static_assert(sizeof(Enum) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// The smallest legal lda, ldb, ldc of a call (enums as enum_bits()).
std::array<int64_t, 3> min_leading_dimensions(int layout, int trans_a, int trans_b, int64_t m,
                                              int64_t n, int64_t k);

// Checks the shape arguments in the reference BLAS order and normalizes them. The enum
// arguments come as enum_bits(). On a bad argument returns TESSEL_INVALID_ARGUMENT with the
// reason recorded as the last error.
tessel_status normalize_shape(int layout, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                              int64_t lda, int64_t ldb, int64_t ldc, Problem *out);

// The kernel a normalized problem needs.
KernelKey kernel_key(const Problem &p, bool accumulate, int threads);

// Checks the pointers the call will dereference and binds them (swapping A and B as the
// normalization did).
tessel_status bind_operands(Problem &p, float alpha, const float *a, const float *b, float *c);

}  // namespace tessel::runtime
