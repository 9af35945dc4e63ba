// Tiling an output dimension (m or n) with a serial loop. Sizes that do not divide the
// extent leave a boundary sub-spec for the remainder.
#include "action.h"

namespace tessel {

void enumerate_tiles(const Spec &s, const Target &t, std::vector<Action> &out) {
  if (!s.is_matmul()) return;
  // A register tile is never split: its registers are named, so the emitter could only
  // unroll such a loop, and a smaller register tile is a different RegisterTile action.
  if (s.c().layout.is_register()) return;
  // Once A and B are both in L1 nothing is left to stage, so the only use of a tile is to
  // reach a register tile: nesting a bigger tile around it adds loop overhead and nothing
  // else. There, tiles are at most as big as a register tile can be. Before that, tiles block
  // for the caches, and blocks narrower than min_blocking_tile are not tried.
  const bool staged = s.a().level == Level::L1 && s.b().level == Level::L1;
  const int32_t cap[2] = {t.vregs, t.vregs * t.lanes};
  for (int dim = 0; dim < 2; ++dim) {
    const int32_t multiple = panel_step_multiple(s, dim);
    for (int32_t size : t.tile_sizes(s.dims[dim])) {
      if (staged && size > cap[dim]) break;
      if (!staged && size < t.min_blocking_tile) continue;
      // Columns go in whole vectors: a narrower tile would mask every load of its body, not
      // just the remainder's.
      if (dim == 1 && size % t.lanes != 0) continue;
      if (size % multiple == 0)  // panels stay aligned (step_keeps_panels)
        out.push_back({ActionKind::Tile, static_cast<uint8_t>(dim), 0, size});
    }
  }
}

void expand_tile(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  loop_expansion(s, a.a, a.size, t, e);
}

}  // namespace tessel
