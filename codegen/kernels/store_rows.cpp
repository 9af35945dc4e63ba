// f32_store_vec_rows__avx2: dst[m x n] (row-major memory) = alpha * src, or += alpha * src
// when the spec accumulates; src is the vec_rows register tile.
//
//   alpha = temp(0) (broadcast from the frame), tmp = temp(1), edge mask = temp(2)
//
//   tile row i:   ymm(i*nv) ... ymm(i*nv + nv - 1)
//                    |              |  (last vector masked when n % 8 != 0)
//   overwrite:    vmulps in place, store
//   accumulate:   tmp = dst; tmp += tile * alpha (one FMA); store tmp
#include "kernels/kernel_emitters.h"

namespace tessel {
namespace {

struct StoreRowsConfig {
  int64_t rows = 0, cols = 0;
  int vectors = 0;  // per row
  int edge = 0;     // valid lanes of the last vector, 0 when n % 8 == 0
  bool accumulate = false;
};

}  // namespace

void emit_store_rows(PlanEmitter &e, const PlanNode &n) {
  const int lanes = PlanEmitter::kLanes;
  StoreRowsConfig cfg;
  cfg.rows = n.spec.dims[0];
  cfg.cols = n.spec.dims[1];
  cfg.vectors = static_cast<int>((cfg.cols + lanes - 1) / lanes);
  cfg.edge = static_cast<int>(cfg.cols % lanes);
  cfg.accumulate = n.spec.accumulate;
  const PlanTensor &src = e.tensor(n, 0), &dst = e.tensor(n, 1);
  if (src.spec.layout.kind != LayoutKind::VecRows || src.rows != cfg.rows || src.cols != cfg.cols) {
    e.fail("codegen: f32_store_vec_rows needs the whole vec_rows tile");
    return;
  }
  if (dst.spec.layout.is_register() || !dst.spec.layout.contiguous_axis1(cfg.cols)) {
    e.fail("codegen: f32_store_vec_rows needs memory with contiguous rows");
    return;
  }
  if (!e.reserve_temps(3, "f32_store_vec_rows")) return;
  const Xbyak::Ymm alpha = e.temp(0), tmp = e.temp(1), mask = e.temp(2);
  e.vbroadcastss(alpha, e.alpha_slot());
  if (cfg.edge) e.load_edge_mask(mask, cfg.edge);
  for (int64_t i = 0; i < cfg.rows; ++i)
    for (int v = 0; v < cfg.vectors; ++v) {
      const Xbyak::Ymm acc = e.tile(static_cast<int>(i) * cfg.vectors + v);
      const bool masked = cfg.edge && v == cfg.vectors - 1;
      const Xbyak::Address at = e.element(n, 1, i, int64_t{v} * lanes);
      if (cfg.accumulate) {
        if (masked) {
          e.vmaskmovps(tmp, mask, at);
        } else {
          e.vmovups(tmp, at);
        }
        e.vfmadd231ps(tmp, acc, alpha);
        if (masked) {
          e.vmaskmovps(e.element(n, 1, i, int64_t{v} * lanes), mask, tmp);
        } else {
          e.vmovups(e.element(n, 1, i, int64_t{v} * lanes), tmp);
        }
      } else {
        e.vmulps(acc, acc, alpha);
        if (masked) {
          e.vmaskmovps(at, mask, acc);
        } else {
          e.vmovups(at, acc);
        }
      }
    }
}

}  // namespace tessel
