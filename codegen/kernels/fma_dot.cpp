// f32_fma_dot__avx2: C[m x n] (vec_dot registers) += A[m x k] * B[k x n], k <= 8, with k
// contiguous in A's rows and B's columns. Each accumulator holds 8 partial sums over k; the
// store kernel (store_dot.cpp) adds them up.
//
// The smaller side stays in registers while the other passes through one: a GEMV over B's
// columns then needs two registers besides its accumulators, so one row reaches 13 columns
// (the store's three temporaries bound it there).
//
//   C element (i, j) = ymm(i*n + j), 8 partial sums each; temporaries after the tile:
//     m <= n:  temp(0..m-1) = A's rows (k lanes), temp(m) = each B column in turn
//     m >  n:  temp(0..n-1) = B's columns,        temp(n) = each A row in turn
//   loads of k < 8 lanes zero the rest (load_edge); edge mask = the next temporary, when k
//   needs one (edge_needs_mask)
//   one vector held and k == 8: each FMA reads its streamed vector from memory
#include "kernels/kernel_emitters.h"

namespace tessel {
namespace {

struct FmaDotConfig {
  int64_t rows = 0, cols = 0, depth = 0;
  bool masked = false;
};

}  // namespace

void emit_fma_dot(PlanEmitter &e, const PlanNode &n) {
  const int lanes = PlanEmitter::kLanes;
  FmaDotConfig cfg;
  cfg.rows = n.spec.dims[0];
  cfg.cols = n.spec.dims[1];
  cfg.depth = n.spec.dims[2];
  cfg.masked = cfg.depth < lanes;
  const PlanTensor &c = e.tensor(n, 2);
  if (cfg.depth > lanes || c.spec.layout.kind != LayoutKind::VecDot || c.rows != cfg.rows ||
      c.cols != cfg.cols) {
    e.fail("codegen: f32_fma_dot needs a whole vec_dot tile and k <= 8");
    return;
  }
  if (!e.tensor(n, 0).spec.layout.contiguous_axis1(cfg.depth) ||
      !e.tensor(n, 1).spec.layout.contiguous_axis0(cfg.depth)) {
    e.fail("codegen: f32_fma_dot needs k contiguous in A and B");
    return;
  }
  const int rows = static_cast<int>(cfg.rows), cols = static_cast<int>(cfg.cols),
            depth = static_cast<int>(cfg.depth);
  const bool hold_rows = rows <= cols;
  const int held = hold_rows ? rows : cols;
  const bool mask_register = edge_needs_mask(depth % lanes);
  if (!e.reserve_temps(held + 1 + (mask_register ? 1 : 0), "f32_fma_dot")) return;
  const Vreg streamed = e.temp(held), mask = e.temp(held + 1);
  if (mask_register) e.load_edge_mask(mask, depth);
  // Edge loads zero the lanes beyond k, so those lanes add nothing.
  auto load = [&](Vreg dst, const Mem &src) {
    if (cfg.masked) {
      e.load_edge(dst, mask, src, depth);
    } else {
      e.vmovups(dst, src);
    }
  };
  // Held vector h and streamed vector p meet in C element (h, p) when A's rows are held,
  // (p, h) when B's columns are.
  const int operand_held = hold_rows ? 0 : 1, passes = hold_rows ? cols : rows;
  auto vector = [&](int operand, int x) {
    return operand == 0 ? e.element(n, 0, x, 0) : e.element(n, 1, 0, x);
  };
  for (int h = 0; h < held; ++h) load(e.temp(h), vector(operand_held, h));
  // With one vector held, each streamed vector meets it once: its FMA reads it from memory
  // (as one-row broadcast tiles do), unless only k < 8 of its lanes may be read.
  const bool fused = held == 1 && !cfg.masked;
  for (int p = 0; p < passes; ++p) {
    if (fused) {  // a 1 x n or m x 1 tile: element p is pass p's
      e.vfmadd231ps(e.tile(p), e.temp(0), vector(1 - operand_held, p));
      continue;
    }
    load(streamed, vector(1 - operand_held, p));
    for (int h = 0; h < held; ++h)
      e.vfmadd231ps(e.tile(hold_rows ? h * cols + p : p * cols + h), e.temp(h), streamed);
  }
}

}  // namespace tessel
