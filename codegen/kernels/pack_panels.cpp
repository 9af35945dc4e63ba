// f32_pack__avx2: dst (panel_rows / panel_cols buffer) = src[rows x cols] (row- or
// column-major user memory). No alpha. Reads exactly the valid elements of src; writes only
// valid elements of dst (padding of a partial panel is left alone: kernels never read it).
//
// P is the panel axis (columns for panel_cols B, rows for panel_rows A), Q the other axis:
//
//   dst(p, q, r) = p*strip*ext + q*strip + r         one panel = ext runs of `strip` floats
//   src(p, q, r) = (p*strip + r)*sP + q*sQ
//
//   group of panels (reg_count_outer) -> q (reg_count) -> each panel of the group -> run of
//   `strip` floats:
//     sP == 1 (copy along the panel): [ymm][ymm]..[xmm][s][s][s] from reg_src to reg_dst;
//                                       a group is pack_group_panels() full panels
//                                       (layout.h), so each q reads one contiguous piece
//                                       of a source row
//     otherwise (transposing):         one panel per group, q unrolled by 4; when src is
//                                       contiguous along Q, four q at once: each four rows
//                                       of the panel load as xmm, transpose in registers
//                                       (unpck*, movlhps/movhlps) and store one 16-byte run
//                                       per q, two rows store 8 bytes per q, and a last
//                                       row goes scalar; else `strip` scalar loads at
//                                       r*sP, stores at r
//
//   temp(0..5): data in flight (temp(0), temp(1) when moving scalars only)
//
// A contiguous copy of 32 or more rows streamed from main memory also prefetches each 64
// bytes of a row kPackPrefetchBytes ahead. One of 32 or more rows from L3 or main memory
// prefetches into L2, per 64 bytes read, the same bytes kL2AheadRows rows on and in the tile
// the enclosing loop packs next.
#include <algorithm>
#include <array>

#include "kernels/kernel_emitters.h"

namespace tessel {
namespace {

constexpr int64_t kPrefetchedPackRows = 32;
constexpr int64_t kPackPrefetchBytes = 512;
constexpr int64_t kL2AheadRows = 4;

struct PackConfig {
  int panel_axis = 1;  // 1: panel_cols (P = columns); 0: panel_rows (P = rows)
  int64_t strip = 0;
  int64_t p_extent = 0, q_extent = 0;
  int64_t full_panels = 0, last_width = 0;
  int64_t src_p = 0, src_q = 0;  // bytes per step along P and Q in src
  int64_t dst_q = 0, dst_panel = 0;
  bool contiguous = false;  // src consecutive along P
  bool transposes = false;  // transposing four q at a time in registers (src consecutive along Q)
  int64_t prefetch = 0;     // bytes ahead of each 64 read along P to prefetch (0: none)
  std::array<int64_t, 2> l2_ahead{};  // the same, into L2 (0: none)
  // q steps per loop iteration, for a single panel (a group of panels unrolls less).
  static constexpr int64_t kQUnroll = 4;
};

// Copies one run of `width` floats of panel `g` of a group, at q displacement `u`.
void copy_run(PlanEmitter &e, const PackConfig &cfg, int64_t width, int64_t u, int64_t g = 0) {
  const int64_t src_at = u * cfg.src_q + g * cfg.strip * cfg.src_p;
  const int64_t dst_at = u * cfg.dst_q + g * cfg.dst_panel;
  if (cfg.contiguous) {
    int64_t r = 0;
    for (; r + 8 <= width; r += 8) {
      if (r % 16 == 0) {
        if (cfg.prefetch > 0) e.prefetcht0(e.mem(e.reg_src, src_at + 4 * r + cfg.prefetch));
        for (int64_t ahead : cfg.l2_ahead)
          if (ahead != 0) e.prefetcht1(e.mem(e.reg_src, src_at + 4 * r + ahead));
      }
      e.vmovups(e.temp(0), e.mem(e.reg_src, src_at + 4 * r));
      e.vmovups(e.mem(e.reg_dst, dst_at + 4 * r), e.temp(0));
    }
    const Xbyak::Xmm x0(e.temp(0).getIdx()), x1(e.temp(1).getIdx());
    if (r + 4 <= width) {
      e.vmovups(x0, e.mem(e.reg_src, src_at + 4 * r));
      e.vmovups(e.mem(e.reg_dst, dst_at + 4 * r), x0);
      r += 4;
    }
    for (; r < width; ++r) {
      e.vmovss(x1, e.mem(e.reg_src, src_at + 4 * r));
      e.vmovss(e.mem(e.reg_dst, dst_at + 4 * r), x1);
    }
    return;
  }
  for (int64_t r = 0; r < width; ++r) {
    // Alternate two registers so consecutive load/store pairs do not serialize.
    const Xbyak::Xmm x(e.temp(static_cast<int>(r % 2)).getIdx());
    e.vmovss(x, e.mem(e.reg_src, src_at + r * cfg.src_p));
    e.vmovss(e.mem(e.reg_dst, dst_at + 4 * r), x);
  }
}

// Four q (0..3) of the `width` rows of one panel, transposed in registers: per four rows,
// four xmm loads along q become four 16-byte stores, one per q.
void copy_transposed(PlanEmitter &e, const PackConfig &cfg, int64_t width) {
  auto x = [&](int k) { return Xbyak::Xmm(e.temp(k).getIdx()); };
  auto src = [&](int64_t r) { return e.mem(e.reg_src, r * cfg.src_p); };
  auto dst = [&](int64_t q, int64_t r) { return e.mem(e.reg_dst, q * cfg.dst_q + 4 * r); };
  int64_t r = 0;
  for (; r + 4 <= width; r += 4) {
    for (int i = 0; i < 4; ++i) e.vmovups(x(i), src(r + i));  // x(i) = row r+i, q 0..3
    e.vunpcklps(x(4), x(0), x(1));                            // r0q0 r1q0 r0q1 r1q1
    e.vunpckhps(x(5), x(0), x(1));                            // r0q2 r1q2 r0q3 r1q3
    e.vunpcklps(x(0), x(2), x(3));                            // r2q0 r3q0 r2q1 r3q1
    e.vunpckhps(x(1), x(2), x(3));                            // r2q2 r3q2 r2q3 r3q3
    e.vmovlhps(x(2), x(4), x(0));                             // q0
    e.vmovhlps(x(3), x(0), x(4));                             // q1
    e.vmovups(dst(0, r), x(2));
    e.vmovups(dst(1, r), x(3));
    e.vmovlhps(x(2), x(5), x(1));  // q2
    e.vmovhlps(x(3), x(1), x(5));  // q3
    e.vmovups(dst(2, r), x(2));
    e.vmovups(dst(3, r), x(3));
  }
  if (r + 2 <= width) {
    e.vmovups(x(0), src(r));
    e.vmovups(x(1), src(r + 1));
    e.vunpcklps(x(2), x(0), x(1));  // q0, q1
    e.vunpckhps(x(3), x(0), x(1));  // q2, q3
    e.vmovlps(dst(0, r), x(2));
    e.vmovhps(dst(1, r), x(2));
    e.vmovlps(dst(2, r), x(3));
    e.vmovhps(dst(3, r), x(3));
    r += 2;
  }
  if (r < width)
    for (int64_t q = 0; q < 4; ++q) {
      e.vmovss(x(q % 2), e.mem(e.reg_src, r * cfg.src_p + q * cfg.src_q));
      e.vmovss(dst(q, r), x(q % 2));
    }
}

// All q of `full` whole panels side by side, then a partial one of `partial` floats (if not
// 0); leaves reg_src/reg_dst on the next panel.
void copy_panels(PlanEmitter &e, const PackConfig &cfg, int64_t full, int64_t partial) {
  const int64_t panels = full + (partial > 0 ? 1 : 0);
  const int64_t unroll = std::max<int64_t>(1, PackConfig::kQUnroll / panels);
  const int64_t main = cfg.q_extent / unroll;
  const int64_t tail = cfg.q_extent % unroll;
  auto one_q = [&](int64_t u) {
    for (int64_t g = 0; g < full; ++g) copy_run(e, cfg, cfg.strip, u, g);
    if (partial > 0) copy_run(e, cfg, partial, u, full);
  };
  if (main > 0) {
    e.mov(e.reg_count, main);
    const size_t top = e.here();
    if (cfg.transposes && panels == 1 && unroll == 4) {
      copy_transposed(e, cfg, full > 0 ? cfg.strip : partial);
    } else {
      for (int64_t u = 0; u < unroll; ++u) one_q(u);
    }
    e.add_imm(e.reg_src, unroll * cfg.src_q);
    e.add_imm(e.reg_dst, unroll * cfg.dst_q);
    e.dec(e.reg_count);
    e.jnz_back(top);
  }
  for (int64_t u = 0; u < tail; ++u) one_q(u);
  const int64_t q_done = main * unroll;
  e.add_imm(e.reg_src, panels * cfg.strip * cfg.src_p - q_done * cfg.src_q);
  e.add_imm(e.reg_dst, panels * cfg.dst_panel - q_done * cfg.dst_q);
}

}  // namespace

void emit_pack_panels(PlanEmitter &e, const PlanNode &n) {
  const PlanTensor &src = e.tensor(n, 0), &dst = e.tensor(n, 1);
  const Layout sl = src.spec.layout, dl = dst.spec.layout;
  if ((sl.kind != LayoutKind::RowMajor && sl.kind != LayoutKind::ColMajor) || !dl.is_panel() ||
      dl.strip == 0 || n.spec.accumulate) {
    e.fail("codegen: f32_pack copies row/column-major memory into a panel buffer");
    return;
  }
  PackConfig cfg;
  cfg.panel_axis = dl.kind == LayoutKind::PanelCols ? 1 : 0;
  cfg.strip = dl.strip;
  cfg.p_extent = n.spec.dims[static_cast<size_t>(cfg.panel_axis)];
  cfg.q_extent = n.spec.dims[static_cast<size_t>(1 - cfg.panel_axis)];
  cfg.full_panels = cfg.p_extent / cfg.strip;
  cfg.last_width = cfg.p_extent % cfg.strip;
  const int64_t pi = cfg.panel_axis == 0 ? 1 : 0, pj = 1 - pi;  // unit step along P
  cfg.src_p = e.element_bytes(n, 0, pi, pj);
  cfg.src_q = e.element_bytes(n, 0, pj, pi);
  cfg.dst_q = e.element_bytes(n, 1, pj, pi);
  cfg.dst_panel = e.element_bytes(n, 1, pi * cfg.strip, pj * cfg.strip);
  cfg.contiguous = cfg.src_p == 4;
  // Reading many rows side by side from main memory, each row is prefetched a few lines
  // ahead: past ~16 streams the hardware prefetchers lose track (Target::stream_factor).
  // Paired, one thread (perf/ab_builds, 201 rounds): 8x4096x4096 +8.0%, 8x2048x16384 +7.5%,
  // 16x4096x4096 +4.4% (32 rows of 384 bytes), 64x4096x4096 and 32x4096x4096 1.00; two
  // threads, 8x4096x4096 68 -> 74-77 GFLOP/s. Packs of 8 rows (4x4096x4096, 1 KiB each) ran
  // 0.81-0.94 with any distance, so fewer than 32 rows are left to the hardware; one run
  // ahead instead of 512 bytes did as well on 32 rows but 0.95 on 64 rows of 4 KiB.
  if (cfg.contiguous && e.streamed(n, 0) && cfg.q_extent >= kPrefetchedPackRows)
    cfg.prefetch = kPackPrefetchBytes;
  // From L3 or main memory (where the source lives, or a stage above the pack read it from)
  // the rows' misses are latency-bound too: a few rows on, and the next tile (which then
  // arrives while this one is multiplied), are fetched into L2.
  // Paired, one thread (perf/ab_builds, 201 rounds): 32x768x3072 +4.2%, 64x768x3072 +2.7%,
  // 16x1024x4096 +10.7%, 128x768x768, 8x4096x4096, 512x768x3072, 256^3, 1000^3, 1024^3 and
  // 1x4096x4096 within 1%; with B cycled through four copies (out of L3; median of 400
  // calls) 32x768x3072 73 -> 80 GFLOP/s, 64x768x3072 89 -> 93, 16x1024x4096 54 -> 62,
  // 128x768x768 (sixteen copies) 99 -> 103. prefetcht0 instead took 32x768x3072 to 69-70.
  // Packs inside a register tile (a shared subroutine: see next_tile_bytes) take no next
  // tile. Below a stage from main memory whose tiles are not looked ahead (below), this
  // took 16x4096x4096 +19%, 24x and 32x4096x4096 +13% and +11%, 16x2048x8192 +15% (paired,
  // one thread; 12x and 64x4096x4096 unchanged).
  if (cfg.contiguous && e.from_far(n, 0) && cfg.q_extent >= kPrefetchedPackRows) {
    cfg.l2_ahead[0] = kL2AheadRows * cfg.src_q;
    if (e.tile_registers() == 0) cfg.l2_ahead[1] = e.next_tile_bytes(n, 0);
  }
  // A source staged from main memory whose next tile is read ahead (look_ahead_fits,
  // 8x4096x4096 +25%): each line copied fetches lines of that tile (stream_look_ahead).
  if (cfg.contiguous && e.stream_next_tile_bytes(n, 0) != 0)
    cfg.l2_ahead = e.stream_look_ahead(n, 0, cfg.src_q);
  // Transposing in registers moves a third as many stores as scalars did: with B transposed
  // (tessel run --trans-b, one thread, five runs each) 128x768x768 98 -> 107 GFLOP/s, 256^3
  // 109 -> 114, 512x768x3072 104 -> 105; packing A, 512x768x3072 +0.8% (perf/ab_builds).
  // Outside register tiles (where packs run) six temporaries are free; anywhere else the
  // scalar copy needs two.
  cfg.transposes =
      !cfg.contiguous && cfg.src_q == 4 && e.tile_registers() + 6 <= PlanEmitter::kVectorRegisters;
  if (!e.reserve_temps(cfg.transposes ? 6 : 2, "f32_pack")) return;
  e.load_origin(e.reg_src, n, 0);
  e.load_origin(e.reg_dst, n, 1);
  // Copying along the panel, runs of pack_group_panels() panels of each source row (the
  // last group with the partial panel); transposing, one panel at a time.
  const int64_t group = cfg.contiguous ? pack_group_panels(cfg.dst_panel) : 1;
  const int64_t groups = cfg.full_panels / group, rest = cfg.full_panels % group;
  if (groups > 1) {
    e.mov(e.reg_count_outer, groups);
    const size_t top = e.here();
    copy_panels(e, cfg, group, 0);
    e.dec(e.reg_count_outer);
    e.jnz_back(top);
  } else if (groups == 1) {
    copy_panels(e, cfg, group, 0);
  }
  if (rest > 0 || cfg.last_width > 0) copy_panels(e, cfg, rest, cfg.last_width);
}

}  // namespace tessel
