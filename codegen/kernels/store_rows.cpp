// f32_store_vec_rows__avx2: dst[m x n] (row-major memory) = alpha * src, or += alpha * src
// when the spec accumulates; src is the vec_rows register tile.
//
//   alpha = temp(0) (broadcast from the frame), tmp = temp(1), edge mask = temp(2)
//
//   tile row i:   ymm(i*nv) ... ymm(i*nv + nv - 1)
//                    |              |  (last vector partial when n % 8 != 0)
//   overwrite:    vmulps in place (skipped when alpha is exactly 1), store
//   accumulate:   tile = tile * alpha + dst (one FMA reading memory) for every vector, then
//                 every store
//
// Accumulating reads the whole destination before writing any of it. Rows whose addresses
// differ by a multiple of 4 KiB (a power-of-two ldc) look alike to the store-to-load
// forwarding check, which compares the low address bits: a row's load right after the
// previous row's store waits for that store. 1024^3 runs 2-3% faster this way (interleaved
// runs of the same plan on Zen 3).
//
// A partial last vector is loaded with vmaskmovps but stored piece by piece (xmm, then 2 and
// 1 floats): a masked 256-bit store costs ~14 cycles on Zen 3 (measured), the pieces ~3.
#include "kernels/kernel_emitters.h"

namespace tessel {
namespace {

constexpr uint32_t kOneBits = 0x3f800000;  // 1.0f

struct StoreRowsConfig {
  int64_t rows = 0, cols = 0;
  int vectors = 0;  // per row
  int edge = 0;     // valid lanes of the last vector, 0 when n % 8 == 0
  bool accumulate = false;
};

// Stores the first `valid` (1..7) lanes of `src` at element (i, j) of operand 1 and on.
void store_lanes(PlanEmitter &e, const PlanNode &n, int64_t i, int64_t j, const Xbyak::Ymm &src,
                 int valid, const Xbyak::Ymm &tmp) {
  Xbyak::Xmm part(src.getIdx());
  if (valid >= 4) {
    e.vmovups(e.element(n, 1, i, j), part);
    if (valid == 4) return;
    e.vextractf128(Xbyak::Xmm(tmp.getIdx()), src, 1);
    part = Xbyak::Xmm(tmp.getIdx());
    j += 4;
    valid -= 4;
  }
  if (valid == 1) {
    e.vmovss(e.element(n, 1, i, j), part);
    return;
  }
  e.vmovlps(e.element(n, 1, i, j), part);
  if (valid == 3) e.vextractps(e.element(n, 1, i, j + 2), part, 2);
}

// Stores the tile row by row, each vector multiplied by `alpha` first when given.
void store_tile(PlanEmitter &e, const PlanNode &n, const StoreRowsConfig &cfg, Vreg tmp,
                const Vreg *alpha) {
  const int lanes = PlanEmitter::kLanes;
  for (int64_t i = 0; i < cfg.rows; ++i)
    for (int v = 0; v < cfg.vectors; ++v) {
      const Vreg acc = e.tile(static_cast<int>(i) * cfg.vectors + v);
      if (alpha) e.vmulps(acc, acc, *alpha);
      if (cfg.edge && v == cfg.vectors - 1) {
        store_lanes(e, n, i, int64_t{v} * lanes, acc, cfg.edge, tmp);
      } else {
        e.vmovups(e.element(n, 1, i, int64_t{v} * lanes), acc);
      }
    }
}

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
  const Vreg alpha = e.temp(0), tmp = e.temp(1), mask = e.temp(2);
  if (cfg.edge && cfg.accumulate) e.load_edge_mask(mask, cfg.edge);
  if (cfg.accumulate) {
    e.vbroadcastss(alpha, e.alpha_slot());
    for (int64_t i = 0; i < cfg.rows; ++i)
      for (int v = 0; v < cfg.vectors; ++v) {
        const Vreg acc = e.tile(static_cast<int>(i) * cfg.vectors + v);
        const Mem at = e.element(n, 1, i, int64_t{v} * lanes);
        if (cfg.edge && v == cfg.vectors - 1) {
          e.vmaskmovps(tmp, mask, at);
          e.vfmadd213ps(acc, alpha, tmp);
        } else {
          e.vfmadd213ps(acc, alpha, at);
        }
      }
    store_tile(e, n, cfg, tmp, nullptr);
  } else {
    // Nearly every call has alpha = 1, whose float has one bit pattern: a branch the
    // predictor always gets right skips the multiplies (a 16^3 product's are 6% of its FMAs).
    // Otherwise each multiply goes right before its store: multiplying the whole tile first
    // made 16^3 and 32^3 calls 5-8% slower.
    Xbyak::Label unit, done;
    e.cmp(e.alpha_slot(), kOneBits);
    e.je(unit, Xbyak::CodeGenerator::T_NEAR);
    e.vbroadcastss(alpha, e.alpha_slot());
    store_tile(e, n, cfg, tmp, &alpha);
    e.jmp(done, Xbyak::CodeGenerator::T_NEAR);
    e.L(unit);
    store_tile(e, n, cfg, tmp, nullptr);
    e.L(done);
  }
}

}  // namespace tessel
