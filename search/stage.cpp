// Staging: accessing a tile from a closer cache level. Nothing is copied; the node pays for
// bringing the tile's lines in once from where it lives (less what hides behind the body's
// FMAs: CostCoefficients::staged_read_hidden), and the body's accesses are then charged at the
// closer level. The staged tiles must fit the level.
//
// A and B may be staged into L2 or L1. C may be staged into L2 from main memory: a C tile that
// reduction splits revisit then stays there, and it is read for ownership and written back
// once. (From L3 it would save little, and double the specs to search.)
#include "action.h"

namespace tessel {

void enumerate_stages(const Spec &s, const Target &t, std::vector<Action> &out) {
  // Staging inside a register tile costs the same as staging just before it, so only specs
  // with C in memory stage: that keeps register-level specs to one level class.
  if (!s.is_matmul() || s.c().layout.is_register()) return;
  enumerate_stages(s, operand_footprints(s, t), out);
}

namespace {

// Whether staging `operand` into `level` is offered for `s` (C in memory, a matmul).
bool stage_offered(const Spec &s, const OperandFootprints &sizes, int operand, Level level) {
  const TensorSpec &ts = s.operands[operand];
  if (level >= ts.level || s.limits.bytes(level) == 0) return false;
  if (operand == 2 && (level != Level::L2 || ts.level != Level::GL)) return false;
  Spec staged = s;
  staged.operands[operand].level = level;
  return fits_caches(staged, sizes);  // staging keeps footprints
}

}  // namespace

void enumerate_stages(const Spec &s, const OperandFootprints &sizes, std::vector<Action> &out) {
  if (!s.is_matmul() || s.c().layout.is_register()) return;
  for (int operand = 0; operand < 3; ++operand)
    for (Level level : {Level::L2, Level::L1})
      if (stage_offered(s, sizes, operand, level))
        out.push_back(
            {ActionKind::Stage, static_cast<uint8_t>(operand), static_cast<uint8_t>(level), 0});
}

bool stage_offered(const Spec &s, const Action &a, const Target &t) {
  if (a.kind != ActionKind::Stage || a.a > 2 ||
      (Level(a.b) != Level::L2 && Level(a.b) != Level::L1) || a.size != 0 || a.size2 != 0 ||
      !s.is_matmul() || s.c().layout.is_register())
    return false;
  return stage_offered(s, operand_footprints(s, t), a.a, Level(a.b));
}

void expand_stage(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  e.node = NodeKind::Stage;
  e.operand = a.a;
  const TensorSpec &from = s.operands[a.a];
  const int64_t rows = s.rows(a.a), cols = s.cols(a.a);
  // The body's register tiles read the rows of A and B side by side; C is read and written
  // back row by row.
  e.local_cycles = a.a == 2 ? t.round_trip_cost(from, rows, cols)
                            : t.read_cost(from, rows, cols, /*side_by_side=*/true);
  if (Level(a.b) == Level::L1) e.local_cycles += t.strided_rows_cost(from, rows, cols);
  if (a.a != 2)  // A and B are read while the body multiplies
    e.local_cycles -= t.hidden_reads(s, e.local_cycles);
  e.children[0].spec = s;
  e.children[0].spec.operands[a.a].level = Level(a.b);
  e.children[0].spec.operands[a.a].walked = false;  // read from L3 only
  e.children[0].present = true;
  e.new_tensor = e.children[0].spec.operands[a.a];
}

}  // namespace tessel
