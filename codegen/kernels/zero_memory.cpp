// f32_zero_mem__avx2: T[rows x cols] (row-major memory) = 0.
//
//   zero = temp(0) (vxorps)
//   row r:  [ymm][ymm]...[ymm][xmm][s][s][s]    8-, 4- and 1-float stores: never a byte
//           outside the tile, no mask register
//   rows:   loop on reg_count, reg_dst += ld*4; wide rows loop over 64-float blocks on
//           reg_count_outer with reg_src as the column cursor
#include "kernels/kernel_emitters.h"

namespace tessel {
namespace {

struct ZeroMemoryConfig {
  int64_t rows = 0, cols = 0;
  int64_t row_bytes = 0;
  // Rows up to this many floats are stored straight-line: 32 vector stores per row at most.
  static constexpr int64_t kStraightCols = 256;
  static constexpr int64_t kBlockCols = 64;
};

// Stores `count` zero floats at [base + offset], widest first.
void store_zeros(PlanEmitter &e, const Xbyak::Reg64 &base, int64_t offset, int64_t count,
                 Vreg zero) {
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) e.vmovups(e.mem(base, offset + 4 * j), zero);
  if (j + 4 <= count) {
    e.vmovups(e.mem(base, offset + 4 * j), Xbyak::Xmm(zero.getIdx()));
    j += 4;
  }
  for (; j < count; ++j) e.vmovss(e.mem(base, offset + 4 * j), Xbyak::Xmm(zero.getIdx()));
}

}  // namespace

void emit_zero_memory(PlanEmitter &e, const PlanNode &n) {
  ZeroMemoryConfig cfg;
  cfg.rows = n.spec.dims[0];
  cfg.cols = n.spec.dims[1];
  const PlanTensor &t = e.tensor(n, 0);
  if (t.spec.layout.is_register() || !t.spec.layout.contiguous_axis1(cfg.cols)) {
    e.fail("codegen: f32_zero_mem needs memory with contiguous rows");
    return;
  }
  cfg.row_bytes = cfg.rows > 1 ? e.element_bytes(n, 0, 1, 0) : 0;
  if (!e.reserve_temps(1, "f32_zero_mem")) return;
  const Vreg zero = e.temp(0);
  e.vxorps(zero, zero, zero);
  e.load_origin(e.reg_dst, n, 0);
  size_t row_top = 0;
  if (cfg.rows > 1) {
    e.mov(e.reg_count, cfg.rows);
    row_top = e.here();
  }
  if (cfg.cols <= ZeroMemoryConfig::kStraightCols) {
    store_zeros(e, e.reg_dst, 0, cfg.cols, zero);
  } else {
    const int64_t blocks = cfg.cols / ZeroMemoryConfig::kBlockCols;
    e.mov(e.reg_src, e.reg_dst);
    e.mov(e.reg_count_outer, blocks);
    const size_t block_top = e.here();
    store_zeros(e, e.reg_src, 0, ZeroMemoryConfig::kBlockCols, zero);
    e.add(e.reg_src, static_cast<int32_t>(4 * ZeroMemoryConfig::kBlockCols));
    e.dec(e.reg_count_outer);
    e.jnz_back(block_top);
    store_zeros(e, e.reg_src, 0, cfg.cols - blocks * ZeroMemoryConfig::kBlockCols, zero);
  }
  if (cfg.rows > 1) {
    e.add_imm(e.reg_dst, cfg.row_bytes);
    e.dec(e.reg_count);
    e.jnz_back(row_top);
  }
}

}  // namespace tessel
