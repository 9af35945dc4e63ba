// The kernel catalogue: every leaf the search may select, in one table (as XNNPACK lists its
// microkernels). From it come the KernelId enum, the search's catalogue (target.cpp), the
// emitter's switch (codegen, built with -Werror=switch) and the test list. Never reorder:
// stored plans name kernels by position (bump kActionOrderVersion if you must).
//
// X(id, name, what it does)
#pragma once
#include <cstdint>

#define TESSEL_KERNELS(X)                                                                     \
  X(FmaBroadcast, "f32_fma_bcast__avx2",                                                      \
    "C[m x n] (vec_rows) += A[m x 1] * B[1 x n]: broadcast each A element, vector-load the "  \
    "B row (masked when n % lanes), one FMA per accumulator vector")                          \
  X(FmaScalar, "f32_fma_scalar__avx2",                                                        \
    "C[m x 1] (vec_rows) += A[m x 1] * B[1 x 1] with scalar FMAs; any layout")                \
  X(FmaDot, "f32_fma_dot__avx2",                                                              \
    "C[m x n] (vec_dot) += A[m x k] * B[k x n], k <= lanes, k contiguous in A and B: vector " \
    "partial sums over k")                                                                    \
  X(ZeroRegisters, "f32_zero_vregs__avx2", "T (register tile) = 0")                           \
  X(ZeroMemory, "f32_zero_mem__avx2", "T (row-major memory) = 0")                             \
  X(StoreRows, "f32_store_vec_rows__avx2",                                                    \
    "dst (row-major) = alpha*src or += alpha*src from a vec_rows register tile, masked edge") \
  X(StoreDot, "f32_store_vec_dot__avx2",                                                      \
    "dst (row-major) = alpha*sum(src) or += from a vec_dot tile: horizontal sums")            \
  X(PackPanels, "f32_pack__avx2",                                                             \
    "dst (panel_rows / panel_cols buffer) = src (row- or column-major memory)")

namespace tessel {

enum class KernelId : uint8_t {
#define TESSEL_KERNEL_ENUM(id, name, doc) id,
  TESSEL_KERNELS(TESSEL_KERNEL_ENUM)
#undef TESSEL_KERNEL_ENUM
};

constexpr int kKernelCount = 0
#define TESSEL_KERNEL_COUNT(id, name, doc) +1
    TESSEL_KERNELS(TESSEL_KERNEL_COUNT)
#undef TESSEL_KERNEL_COUNT
    ;

const char *kernel_name(KernelId k);

// Whether the kernels move the partial last vector of a row, `leftover` floats (n % lanes),
// under a vmaskmov mask: not when there is none, nor for 1, 2 and 4 floats, which are one
// plain scalar, 64-bit or 128-bit load or store, as cheap as a whole vector (the cost model
// charges a mask, a cycle and a register, only where one is used).
constexpr bool edge_needs_mask(int64_t leftover) {
  return leftover != 0 && leftover != 1 && leftover != 2 && leftover != 4;
}

}  // namespace tessel
