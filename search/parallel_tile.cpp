// Parallel loops. A spec that may use T threads either tiles m or n into a parallel loop of
// serial bodies, or gives up parallelism (Serial). A parallel loop costs the fork/join, plus
// one body per round of T iterations (the last, partial round counted whole: that is the load
// imbalance). Only a root spec has threads > 1, so the parallel loop is always outermost and
// the emitted kernel is a function of its iteration range.
#include "action.h"

namespace tessel {

void enumerate_serial(const Spec &s, const Target &, std::vector<Action> &out) {
  if (s.threads > 1) out.push_back({ActionKind::Serial, 0, 0, 0});
}

Expansion expand_serial(const Spec &s, const Action &, const Target &) {
  Expansion e;
  e.node = NodeKind::Block;
  e.children[0].spec = s;
  e.children[0].spec.threads = 1;
  e.children[0].present = true;
  return e;
}

void enumerate_parallel_tiles(const Spec &s, const Target &t, std::vector<Action> &out) {
  if (!s.is_matmul() || s.threads <= 1 || s.c().layout.is_register()) return;
  for (int dim = 0; dim < 2; ++dim) {
    const int32_t multiple = panel_step_multiple(s, dim);
    for (int32_t size : t.tile_sizes(s.dims[dim]))
      if (size % multiple == 0)  // panels stay aligned (step_keeps_panels)
        out.push_back({ActionKind::ParallelTile, static_cast<uint8_t>(dim), 0, size});
  }
}

Expansion expand_parallel_tile(const Spec &s, const Action &a, const Target &t) {
  Expansion e = loop_expansion(s, a.a, a.size, t);
  e.parallel = true;
  const int64_t iterations = e.trips + (e.children[1].present ? 1 : 0);
  const int64_t rounds = (iterations + s.threads - 1) / s.threads;
  e.local_cycles = t.coef.fork_join + t.coef.loop_iteration * static_cast<double>(rounds);
  for (Child &c : e.children) c.spec.threads = 1;
  // The remainder runs in the last round beside full bodies, and is never longer.
  e.children[0].multiplicity = static_cast<double>(rounds);
  e.children[1].multiplicity = 0;
  return e;
}

}  // namespace tessel
