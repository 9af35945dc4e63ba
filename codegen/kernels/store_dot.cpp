// f32_store_vec_dot__avx2: dst[m x n] (row-major memory) = alpha * hsum(src), or +=, where
// element (i, j) of the vec_dot tile is ymm(i*n + j) holding 8 partial sums over k.
//
//   ymm(i*n+j) --vextractf128--> t = hi + lo (4 lanes) --movhlps--> 2 lanes --movshdup--> 1
//   t *= alpha (lane 0); (+= dst); vmovss dst(i, j)
//
//   alpha = temp(0) lane 0, t = temp(1), u = temp(2)
#include "kernels/kernel_emitters.h"

namespace tessel {
namespace {

struct StoreDotConfig {
  int64_t rows = 0, cols = 0;
  bool accumulate = false;
};

}  // namespace

void emit_store_dot(PlanEmitter &e, const PlanNode &n) {
  StoreDotConfig cfg;
  cfg.rows = n.spec.dims[0];
  cfg.cols = n.spec.dims[1];
  cfg.accumulate = n.spec.accumulate;
  const PlanTensor &src = e.tensor(n, 0), &dst = e.tensor(n, 1);
  if (src.spec.layout.kind != LayoutKind::VecDot || src.rows != cfg.rows || src.cols != cfg.cols ||
      dst.spec.layout.is_register()) {
    e.fail("codegen: f32_store_vec_dot needs the whole vec_dot tile and memory");
    return;
  }
  if (!e.reserve_temps(3, "f32_store_vec_dot")) return;
  const Xbyak::Xmm alpha(e.temp(0).getIdx()), t(e.temp(1).getIdx()), u(e.temp(2).getIdx());
  e.vmovss(alpha, e.alpha_slot());
  for (int64_t i = 0; i < cfg.rows; ++i)
    for (int64_t j = 0; j < cfg.cols; ++j) {
      const Xbyak::Ymm acc = e.tile(static_cast<int>(i * cfg.cols + j));
      e.vextractf128(t, acc, 1);
      e.vaddps(t, t, Xbyak::Xmm(acc.getIdx()));
      e.vmovhlps(u, u, t);
      e.vaddps(t, t, u);
      e.vmovshdup(u, t);
      e.vaddss(t, t, u);
      e.vmulss(t, t, alpha);
      if (cfg.accumulate) e.vaddss(t, t, e.element(n, 1, i, j));
      e.vmovss(e.element(n, 1, i, j), t);
    }
}

}  // namespace tessel
