// f32_store_vec_rows__avx2: dst[m x n] (row-major memory) = alpha * src, or += alpha * src
// when the spec accumulates; src is the vec_rows register tile.
//
//   alpha = temp(0) (broadcast from the frame), tmp = temp(1), edge mask = temp(2)
//
//   tile row i:   ymm(i*nv) ... ymm(i*nv + nv - 1)
//                    |              |  (last vector partial when n % 8 != 0)
//   overwrite:    vmulps in place (skipped when alpha is exactly 1), store
//   accumulate:   tile = tile * alpha + dst (one FMA reading memory), then the store;
//                 all the FMAs before any store when rows alias
//
// Rows a multiple of 4 KiB apart (ldc 1024 or 3072, say) look alike to the store-to-load
// forwarding check, which compares the low address bits: a row's load right after another
// row's store waits for that store. Such tiles read their whole destination before writing
// any of it (1024^3 +2-3%, interleaved runs of the same plan on Zen 3); the others store
// each vector as soon as it is ready (grouping them cost 32^3 and 64^3 with beta = 1 2-3%).
//
// A partial last vector is loaded with load_edge() (vmaskmovps unless it is 1, 2 or 4 floats)
// but stored piece by piece (xmm, then 2 and 1 floats): a masked 256-bit store costs ~14
// cycles on Zen 3 (measured), the pieces ~3.
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

// Stores vector v of tile row i.
void store_vector(PlanEmitter &e, const PlanNode &n, const StoreRowsConfig &cfg, int64_t i, int v,
                  Vreg tmp) {
  const int64_t j = int64_t{v} * PlanEmitter::kLanes;
  const Vreg acc = e.tile(static_cast<int>(i) * cfg.vectors + v);
  if (cfg.edge && v == cfg.vectors - 1) {
    store_lanes(e, n, i, j, acc, cfg.edge, tmp);
  } else {
    e.vmovups(e.element(n, 1, i, j), acc);
  }
}

// Stores the tile row by row, each vector multiplied by `alpha` first when given.
void store_tile(PlanEmitter &e, const PlanNode &n, const StoreRowsConfig &cfg, Vreg tmp,
                const Vreg *alpha) {
  for (int64_t i = 0; i < cfg.rows; ++i)
    for (int v = 0; v < cfg.vectors; ++v) {
      if (alpha) {
        const Vreg acc = e.tile(static_cast<int>(i) * cfg.vectors + v);
        e.vmulps(acc, acc, *alpha);
      }
      store_vector(e, n, cfg, i, v, tmp);
    }
}

// Whether two rows of the tile lie a multiple of 4 KiB apart: the store-to-load forwarding
// check compares only the low 12 address bits, so a load of one waits for a store to the
// other.
bool rows_alias(const PlanEmitter &e, const PlanNode &n, const StoreRowsConfig &cfg) {
  const int64_t row_bytes = e.element_bytes(n, 1, 1, 0);
  for (int64_t d = 1; d < cfg.rows; ++d)
    if (d * row_bytes % PlanEmitter::kAliasBytes == 0) return true;
  return false;
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
  if (cfg.accumulate && edge_needs_mask(cfg.edge)) e.load_edge_mask(mask, cfg.edge);
  if (cfg.accumulate) {
    e.vbroadcastss(alpha, e.alpha_slot());
    auto add_destination = [&](int64_t i, int v) {
      const Vreg acc = e.tile(static_cast<int>(i) * cfg.vectors + v);
      const Mem at = e.element(n, 1, i, int64_t{v} * lanes);
      if (cfg.edge && v == cfg.vectors - 1) {
        e.load_edge(tmp, mask, at, cfg.edge);
        e.vfmadd213ps(acc, alpha, tmp);
      } else {
        e.vfmadd213ps(acc, alpha, at);
      }
    };
    const bool read_first = rows_alias(e, n, cfg);
    if (read_first)
      for (int64_t i = 0; i < cfg.rows; ++i)
        for (int v = 0; v < cfg.vectors; ++v) add_destination(i, v);
    for (int64_t i = 0; i < cfg.rows; ++i)
      for (int v = 0; v < cfg.vectors; ++v) {
        if (!read_first) add_destination(i, v);
        store_vector(e, n, cfg, i, v, tmp);
      }
  } else {
    // Nearly every call has alpha = 1, whose float has one bit pattern: a branch the
    // predictor always gets right skips the multiplies (a 16^3 product's are 6% of its FMAs).
    // Otherwise each multiply goes right before its store: multiplying the whole tile first
    // made 16^3 and 32^3 calls 5-8% slower.
    e.cmp(e.alpha_slot(), kOneBits);
    const size_t to_unit = e.forward(x86::Forward::Je);
    e.vbroadcastss(alpha, e.alpha_slot());
    store_tile(e, n, cfg, tmp, &alpha);
    const size_t to_done = e.forward(x86::Forward::Jmp);
    e.land(to_unit);
    store_tile(e, n, cfg, tmp, nullptr);
    e.land(to_done);
  }
}

}  // namespace tessel
