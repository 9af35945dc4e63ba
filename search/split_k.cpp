// Splitting the reduction dimension k. For MatmulAccum every step accumulates. For Matmul the
// first step overwrites C (a Matmul) and the rest accumulate, so C is never read before it
// is written and no separate zeroing pass is needed. Where B is streamed under a few rows of
// A, the steps find a small C tile in L1 (revisit_c_in_l1); a narrow strip of B in L3 is
// walked down, each step continuing the strided streams of the one before (walks_down).
#include "action.h"

namespace tessel {
namespace {

// Below this many rows of A, B in L3 is read once or a few times per call: packing it costs
// a read and a write of each element to save little, and where its rows crowd a few L1 sets
// (stride_class: ld a multiple of 1 KiB) no more than ~8 of them can be staged in L1 at once, so
// only splits of k below 16 keep B unpacked. Measured (same library, shallow splits on/off, 5
// rounds, 1 thread): 1x1024x1024 3.0x (12 -> 40 GFLOP/s, oneDNN 32-40), 1x768x3072 2.5x,
// 2x1024x1024 2.1x, 3x512x512 2.1x, 8x and 16x1024x1024 unchanged. The model picked a
// shallow split for m <= 4 only; 8 leaves a margin. Offered for every m, they cost 16% more
// specs over shapes.txt (1 thread) for no plan that changes; at m <= 8, 5%.
constexpr int32_t kStreamedBRows = 8;

// A k loop visits its C tile at every step. Where B is streamed under a few rows of A (B in
// L3 or main memory, m <= kRevisitedCRows) and the step's tiles of A, B and C fit L1
// together, C stays in L1 between visits: the loop reads C from where it lives and writes it
// back once, as staging C does, and its steps access C in L1. Charged from C's own level at
// every step instead, 8x768x768 packed B to run deep k steps: 60 GFLOP/s; streaming B in
// 16-row steps it runs at 91 (same library, 7 rounds: 4x2048x2048 2.0x, 4x768x3072 1.5x,
// 8x3072x768 1.4x, 16x768x768 1.14x; no plan of shapes.txt changes). Everywhere, and into L2
// too, it cost 73% more specs over shapes.txt for plans within 3% (model) that measured the
// same; as here, 12% (1 thread) and 16% (2 threads).
constexpr int32_t kRevisitedCRows = 16;

void revisit_c_in_l1(const Spec &s, const Target &t, Expansion &e) {
  // C in registers (VRF) or in L1 already: nothing to keep closer.
  if (s.c().level <= Level::L1 || s.b().level < Level::L3 || s.dims[0] > kRevisitedCRows) return;
  const OperandFootprints step = operand_footprints(e.children[0].spec, t);
  if (step.bytes[0] + step.bytes[1] + step.bytes[2] > s.limits.bytes(Level::L1)) return;
  for (Child &c : e.children)
    if (c.present) c.spec.operands[2].level = Level::L1;
  e.local_cycles += t.round_trip_cost(s.c(), s.dims[0], s.dims[1]);
}

// Whether the k loop walks down operand `i` of `s` (A or B in L3) as a narrow strip: its
// stored rows run along k (B row-major, A column-major), are at most kWalkedStripBytes wide,
// and are more than L1 holds (a shorter strip is read once and stays).
bool walks_down(const Spec &s, int i) {
  const TensorSpec &o = s.operands[i];
  if (o.level != Level::L3) return false;
  const bool rows_along_k = o.layout.kind == (i == 1 ? LayoutKind::RowMajor : LayoutKind::ColMajor);
  const int64_t row_bytes = int64_t{s.dims[i == 1 ? 1 : 0]} * 4;
  return rows_along_k && row_bytes <= kWalkedStripBytes &&
         row_bytes * s.dims[2] > s.limits.bytes(Level::L1);
}

}  // namespace

void enumerate_k_splits(const Spec &s, const Target &t, std::vector<Action> &out) {
  if (!s.is_matmul()) return;
  if (s.c().layout.is_register()) {
    // Inside a register tile the reduction only steps by what one multiply kernel consumes
    // (1 for broadcast tiles, a vector for dot tiles); unrolling is the emitter's business.
    // Operands packed in panels along k (for dot tiles) take whole panels at a time.
    const int32_t step = s.c().layout.kind == LayoutKind::VecDot ? t.lanes : 1;
    if (step < s.dims[2] && step % panel_step_multiple(s, 2) == 0)
      out.push_back({ActionKind::SplitK, 0, 0, step});
    return;
  }
  // With A and B both in L1 a split only stores C more often for the same kernels: it is
  // dominated, so it is not offered.
  if (s.a().level == Level::L1 && s.b().level == Level::L1) return;
  // Shallow splits (a few rows of B at a time) are offered where they can win: B streamed
  // from main memory is best read a few rows at a time (see the stream factor in target.h),
  // and a B in L3 that only a few rows of A use (kStreamedBRows) is better streamed than packed.
  const bool shallow =
      s.b().level == Level::GL || (s.b().level == Level::L3 && s.dims[0] <= kStreamedBRows);
  const int32_t min_split = shallow ? t.lanes / 2 : t.min_blocking_tile;
  const int32_t multiple = panel_step_multiple(s, 2);  // panels stay aligned
  for (int32_t size : t.tile_sizes(s.dims[2], /*output_dim=*/false))
    if (size >= min_split && size % multiple == 0) out.push_back({ActionKind::SplitK, 0, 0, size});
}

void expand_k_split(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  // Every step sees the operands the loop walks down (a walk of one step and a remainder is
  // no longer than the tile it would discount).
  Spec step = s;
  if (s.dims[2] / a.size >= 2)
    for (int i = 0; i < 2; ++i) step.operands[i].walked |= walks_down(s, i);
  loop_expansion(step, 2, a.size, t, e);
  for (Child &c : e.children)
    if (c.present) c.spec.op = Op::MatmulAccum;
  if (s.op == Op::Matmul) {
    e.children[2].spec = step;
    e.children[2].spec.dims[2] = a.size;
    e.children[2].present = true;
    e.children[0].multiplicity -= 1;
  }
  revisit_c_in_l1(s, t, e);
}

}  // namespace tessel
