// f32_fma_scalar__avx2: C[m x 1] (vec_rows, one register per row) += A[m x 1] * B[1 x 1].
//
//   B(0,0) -> temp(0) lane 0
//   A(i,0) (memory operand) * temp(0) + lane 0 of ymm(i)   for i < m
//
// Only lane 0 of each accumulator is meaningful (the tile is one column wide); the VEX scalar
// FMA clears the upper lanes, which are never stored.
#include "kernels/kernel_emitters.h"

namespace tessel {
namespace {

struct FmaScalarConfig {
  int64_t rows = 0;
};

}  // namespace

void emit_fma_scalar(PlanEmitter &e, const PlanNode &n) {
  FmaScalarConfig cfg;
  cfg.rows = n.spec.dims[0];
  const PlanTensor &c = e.tensor(n, 2);
  if (n.spec.dims[1] != 1 || n.spec.dims[2] != 1 || c.spec.layout.kind != LayoutKind::VecRows ||
      c.rows != cfg.rows || c.cols != 1) {
    e.fail("codegen: f32_fma_scalar needs a whole m x 1 vec_rows tile and k == 1");
    return;
  }
  if (!e.reserve_temps(2, "f32_fma_scalar")) return;
  const Xbyak::Xmm b(e.temp(0).getIdx());
  e.vmovss(b, e.element(n, 1, 0, 0));
  for (int64_t i = 0; i < cfg.rows; ++i) {
    const Xbyak::Xmm acc(e.tile(static_cast<int>(i)).getIdx());
    e.vfmadd231ss(acc, b, e.element(n, 0, i, 0));
  }
}

}  // namespace tessel
