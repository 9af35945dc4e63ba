// Packing: copying A into h-row panels or B into w-column panels of a buffer at a cache
// level, so the kernels read it contiguously and aligned. The copy is a Move sub-spec (the
// prologue); the body then reads the buffer.
//
// When C is narrower than a vector, broadcast tiles leave most lanes idle (an edge one column
// wide costs one FMA per row and k, as many as a full 8-column tile), while dot tiles
// vectorize along k. Those need k contiguous in A and B; an operand that is not gets a second
// packing, into panels of a vector's worth of k: A into column panels, B into row panels.
// So does a transposed A of a few rows over B's columns (B transposed too): its dot tiles
// read B straight from memory, as with A untransposed (1x1024x1024 8.3 -> 37 GFLOP/s).
#include "action.h"

namespace tessel {
namespace {

constexpr int32_t kAlongK = 1;  // Action::size2 of a k-panel pack

// At most this many rows of a transposed A are packed along k for dot tiles over B's
// columns: dot tiles of 1 to 4 rows beat packing B for broadcast tiles (target.h,
// dot_loads_per_cycle), and a few rows of A cost next to nothing to copy.
constexpr int64_t kDotRows = 4;

Layout packed_layout(const Action &a) {
  const bool rows = (a.a == 0) != (a.size2 == kAlongK);
  return rows ? panel_rows(a.size) : panel_cols(a.size);
}

bool k_contiguous(const Spec &s, int operand) {
  const Layout l = s.operands[operand].layout;
  return operand == 0 ? l.contiguous_axis1(2) : l.contiguous_axis0(2);
}

}  // namespace

void enumerate_packs(const Spec &s, const Target &t, std::vector<Action> &out) {
  if (!s.is_matmul() || s.c().layout.is_register()) return;
  enumerate_packs(s, t, operand_footprints(s, t), out);
}

void enumerate_packs(const Spec &s, const Target &t, const OperandFootprints &unpacked,
                     std::vector<Action> &out) {
  if (!s.is_matmul() || s.c().layout.is_register()) return;
  const bool narrow_c = s.dims[1] < t.lanes;
  for (int operand = 0; operand < 2; ++operand) {
    const TensorSpec &ts = s.operands[operand];
    if (ts.layout.is_panel()) continue;
    const std::vector<int> &strips = operand == 0 ? t.panel_row_strips : t.panel_col_strips;
    const bool few_dot_rows = operand == 0 && s.dims[0] <= kDotRows && k_contiguous(s, 1);
    const bool k_panels = (narrow_c || few_dot_rows) && !k_contiguous(s, operand);
    for (Level level : {Level::L2, Level::L1}) {
      if (s.limits.bytes(level) == 0) continue;
      auto offer = [&](int strip, int32_t along) {
        const Action a{ActionKind::Pack, static_cast<uint8_t>(operand), static_cast<uint8_t>(level),
                       strip, along};
        Spec packed = s;
        packed.operands[operand] = {level, packed_layout(a)};
        // The packed operand's footprint is its buffer's (the same at either level). A copy
        // from farther out also streams its source block through the buffer's cache as it
        // writes the buffer: counting both keeps the copy from evicting the buffer's first
        // lines, and the body's other operands, before the body reads them (32x768x3072 then
        // packs 128x512 blocks of B into L2 instead of 128x1024: +4% on 1 and 2 threads).
        OperandFootprints sizes = unpacked;
        sizes.bytes[operand] =
            t.footprint(packed.operands[operand], s.rows(operand), s.cols(operand));
        if (ts.level > level) sizes.bytes[operand] += unpacked.bytes[operand];
        sizes.l1[operand] = sizes.bytes[operand];  // streamed along its rows, not crowded
        if (fits_caches(packed, sizes)) out.push_back(a);
      };
      for (int strip : strips) offer(strip, 0);
      if (k_panels) offer(t.lanes, kAlongK);
    }
  }
}

void expand_pack(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  e.node = NodeKind::Alloc;
  e.operand = a.a;
  e.new_tensor = {Level(a.b), packed_layout(a)};
  e.alloc_bytes = buffer_elements(e.new_tensor.layout, s.rows(a.a), s.cols(a.a)) * 4;
  Spec move;
  move.op = Op::Move;
  move.dtype = s.dtype;
  move.dims = {static_cast<int32_t>(s.rows(a.a)), static_cast<int32_t>(s.cols(a.a)), 1};
  move.operands[0] = s.operands[a.a];
  // A copy reads a walked strip row by row, prefetching each itself: charged as a walk,
  // 384x512x1536 packed 256x64 tiles of B that its loop could not copy ahead (-2%).
  move.operands[0].walked = false;
  move.operands[1] = e.new_tensor;
  move.limits = s.limits;
  e.children[0] = {canonical(move), 1, true};
  // Tiles from main memory (operands over half the L3) are packed in loops as a rule, each
  // copy running ahead under the body that multiplies the tile before it (pack_ahead.cpp in
  // codegen): a share of their reads hides behind the FMAs, as a staged tile's do. From L3
  // the copy may run once, with nothing to hide behind: charged so, each tile of 93x199x268
  // on two threads packed all of B, 4% slower.
  if (move.operands[0].level == Level::GL)
    e.local_cycles = -t.hidden_reads(s, t.read_cost(move.operands[0], s.rows(a.a), s.cols(a.a),
                                                    /*side_by_side=*/false));
  e.children[1].spec = s;
  e.children[1].spec.operands[a.a] = e.new_tensor;
  e.children[1].present = true;
}

}  // namespace tessel
