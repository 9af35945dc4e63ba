// Packing: copying A into h-row panels or B into w-column panels of a buffer at a cache
// level, so the kernels read it contiguously and aligned. The copy is a Move sub-spec (the
// prologue); the body then reads the buffer.
#include "action.h"

namespace tessel {

void enumerate_packs(const Spec &s, const Target &t, std::vector<Action> &out) {
  if (!s.is_matmul() || s.c().layout.is_register()) return;
  enumerate_packs(s, t, operand_footprints(s, t), out);
}

void enumerate_packs(const Spec &s, const Target &t, const OperandFootprints &unpacked,
                     std::vector<Action> &out) {
  if (!s.is_matmul() || s.c().layout.is_register()) return;
  for (int operand = 0; operand < 2; ++operand) {
    const TensorSpec &ts = s.operands[operand];
    if (ts.layout.is_panel()) continue;
    const std::vector<int> &strips = operand == 0 ? t.panel_row_strips : t.panel_col_strips;
    for (Level level : {Level::L2, Level::L1}) {
      if (s.limits.bytes(level) == 0) continue;
      for (int strip : strips) {
        Spec packed = s;
        packed.operands[operand] = {level, operand == 0 ? panel_rows(strip) : panel_cols(strip)};
        // The packed operand's footprint is its buffer's (the same at either level).
        OperandFootprints sizes = unpacked;
        sizes[operand] = t.footprint(packed.operands[operand], s.rows(operand), s.cols(operand));
        if (fits_caches(packed, sizes))
          out.push_back({ActionKind::Pack, static_cast<uint8_t>(operand),
                         static_cast<uint8_t>(level), strip});
      }
    }
  }
}

void expand_pack(const Spec &s, const Action &a, const Target &, Expansion &e) {
  e.node = NodeKind::Alloc;
  e.operand = a.a;
  e.new_tensor = {Level(a.b), a.a == 0 ? panel_rows(a.size) : panel_cols(a.size)};
  e.alloc_bytes = buffer_elements(e.new_tensor.layout, s.rows(a.a), s.cols(a.a)) * 4;
  Spec move;
  move.op = Op::Move;
  move.dtype = s.dtype;
  move.dims = {static_cast<int32_t>(s.rows(a.a)), static_cast<int32_t>(s.cols(a.a)), 1};
  move.operands[0] = s.operands[a.a];
  move.operands[1] = e.new_tensor;
  move.limits = s.limits;
  e.children[0] = {canonical(move), 1, true};
  e.children[1].spec = s;
  e.children[1].spec.operands[a.a] = e.new_tensor;
  e.children[1].present = true;
}

}  // namespace tessel
