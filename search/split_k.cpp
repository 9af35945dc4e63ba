// Splitting the reduction dimension k. For MatmulAccum every step accumulates. For Matmul the
// first step overwrites C (a Matmul) and the rest accumulate, so C is never read before it
// is written and no separate zeroing pass is needed.
#include "action.h"

namespace tessel {

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
  // B streamed from main memory is best read a few rows at a time (see the stream factor in
  // target.h): there, shallow splits are worth trying too.
  const int32_t min_split = s.b().level == Level::GL ? t.lanes / 2 : t.min_blocking_tile;
  const int32_t multiple = panel_step_multiple(s, 2);  // panels stay aligned
  for (int32_t size : t.tile_sizes(s.dims[2], /*output_dim=*/false))
    if (size >= min_split && size % multiple == 0) out.push_back({ActionKind::SplitK, 0, 0, size});
}

void expand_k_split(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  loop_expansion(s, 2, a.size, t, e);
  for (Child &c : e.children)
    if (c.present) c.spec.op = Op::MatmulAccum;
  if (s.op == Op::Matmul) {
    e.children[2].spec = s;
    e.children[2].spec.dims[2] = a.size;
    e.children[2].present = true;
    e.children[0].multiplicity -= 1;
  }
}

}  // namespace tessel
