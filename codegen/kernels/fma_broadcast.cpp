// f32_fma_bcast__avx2: C[m x n] (vec_rows registers) += A[m x 1] * B[1 x n], one k step.
//
//                       B row: nv vectors, the last partial when n % 8 != 0 (load_edge)
//                       +------------+------------+
//                       | temp(0)    | temp(1)    |   (nv = 2 shown)
//                       +------------+------------+
//   A column            C tile: row i, vector v = ymm(i*nv + v)
//   A(0,0) -> bcast     | ymm0       | ymm1       |
//   A(1,0) -> bcast     | ymm2       | ymm3       |
//     ...               |  ...       |  ...       |
//   A(5,0) -> bcast     | ymm10      | ymm11      |   6x16: 12 FMAs, 2 loads, 6 broadcasts
//
//   bcast = temp(nv), edge mask = temp(nv + 1) (when the edge needs one, edge_needs_mask)
//
// The B vectors are loaded once and reused by every row; each row's A element is broadcast
// once and feeds nv FMAs. A single row's FMAs take B straight from memory instead: only a
// partial last vector is loaded (into temp(0)), and bcast and the mask follow the temps
// held. The loop around this kernel folds k into displacements.
#include "kernels/kernel_emitters.h"

namespace tessel {
namespace {

struct FmaBroadcastConfig {
  int64_t rows = 0, cols = 0;
  int vectors = 0;       // nv: B vectors per k step
  int tile_vectors = 0;  // vectors per row of the register tile
  int edge = 0;          // valid lanes of the last vector, 0 when n % 8 == 0
};

}  // namespace

void emit_fma_broadcast(PlanEmitter &e, const PlanNode &n) {
  const int lanes = PlanEmitter::kLanes;
  FmaBroadcastConfig cfg;
  cfg.rows = n.spec.dims[0];
  cfg.cols = n.spec.dims[1];
  cfg.vectors = static_cast<int>((cfg.cols + lanes - 1) / lanes);
  cfg.edge = static_cast<int>(cfg.cols % lanes);
  const PlanTensor &c = e.tensor(n, 2);
  cfg.tile_vectors = static_cast<int>((c.cols + lanes - 1) / lanes);
  const Layout b = e.tensor(n, 1).spec.layout;
  if (n.spec.dims[2] != 1 || c.spec.layout.kind != LayoutKind::VecRows || c.rows != cfg.rows ||
      c.cols != cfg.cols) {
    e.fail("codegen: f32_fma_bcast needs a whole vec_rows tile and k == 1");
    return;
  }
  if (!b.contiguous_axis1(cfg.cols) && !(b.kind == LayoutKind::PanelCols && b.strip % lanes == 0)) {
    e.fail("codegen: f32_fma_bcast needs B rows made of whole vectors");
    return;
  }
  const bool masked = edge_needs_mask(cfg.edge);
  // A single row uses each B vector once, so its FMAs read B from memory: half the
  // instructions of load-then-FMA, and the core looks further ahead into a GEMV's stream
  // (paired, one thread: 1x2048x16384 +2.4%, 1x4096x11008 +3.5%, GEMVs from cache within 1%).
  // Only a partial last vector, which a whole-vector operand would overrun, takes a temp.
  const bool fused = cfg.rows == 1;
  const auto partial = [&](int v) { return cfg.edge && v == cfg.vectors - 1; };
  const auto in_temp = [&](int v) { return !fused || partial(v); };
  const auto temp_of = [&](int v) { return e.temp(fused ? 0 : v); };
  const auto b_vector = [&](int v, int64_t ahead = 0) {
    return e.element(n, 1, 0, int64_t{v} * lanes, ahead);
  };
  const int held = fused ? (cfg.edge ? 1 : 0) : cfg.vectors;
  if (!e.reserve_temps(held + 1 + (masked ? 1 : 0), "f32_fma_bcast")) return;
  const Vreg bcast = e.temp(held), mask = e.temp(held + 1);
  if (masked) e.load_edge_mask(mask, cfg.edge);
  const int64_t prefetch = e.stream_prefetch(n, 1), next_tile = e.stream_next_tile_bytes(n, 1);
  for (int v = 0; v < cfg.vectors; ++v) {
    // Per 64 bytes of the B row: the line a little ahead into L1, the same line of the next
    // tile into L2.
    if (v % 2 == 0) {
      if (prefetch > 0) e.prefetcht0(b_vector(v, prefetch));
      if (next_tile != 0) e.prefetcht1(b_vector(v, next_tile));
    }
    if (!in_temp(v)) continue;
    if (partial(v)) {
      e.load_edge(temp_of(v), mask, b_vector(v), cfg.edge);
    } else {
      e.vmovups(temp_of(v), b_vector(v));
    }
  }
  for (int64_t i = 0; i < cfg.rows; ++i) {
    e.vbroadcastss(bcast, e.element(n, 0, i, 0));
    for (int v = 0; v < cfg.vectors; ++v) {
      const Vreg acc = e.tile(static_cast<int>(i) * cfg.tile_vectors + v);
      if (in_temp(v)) {
        e.vfmadd231ps(acc, bcast, temp_of(v));
      } else {
        e.vfmadd231ps(acc, bcast, b_vector(v));
      }
    }
  }
}

}  // namespace tessel
