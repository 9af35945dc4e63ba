// Tiling an output dimension (m or n) with a serial loop. Sizes that do not divide the
// extent leave a boundary sub-spec for the remainder.
#include <algorithm>

#include "action.h"

namespace tessel {
namespace {

// Which of a dimension's tile sizes (Target::tile_sizes) the search offers for a spec.
struct TileRule {
  bool staged;       // A and B both in L1: tiles only lead to a register tile
  int32_t cap;       // staged: the largest register tile along the dimension
  int32_t min_size;  // not staged: the smallest cache-blocking tile
  int32_t lanes;     // columns: tiles are whole vectors
  int32_t multiple;  // panels stay aligned (step_keeps_panels)
  // Sizes come in ascending order: past this one, none is offered.
  bool past_last(int32_t size) const { return staged && size > cap; }
  bool offers(int32_t size) const {
    return !past_last(size) && (staged || size >= min_size) && size % lanes == 0 &&
           size % multiple == 0;
  }
};

// False when `s` is not tiled at all.
bool tile_rule(const Spec &s, const Target &t, int dim, TileRule *rule) {
  if (!s.is_matmul()) return false;
  // A register tile is never split: its registers are named, so the emitter could only
  // unroll such a loop, and a smaller register tile is a different RegisterTile action.
  if (s.c().layout.is_register()) return false;
  // Once A and B are both in L1 nothing is left to stage, so the only use of a tile is to
  // reach a register tile: nesting a bigger tile around it adds loop overhead and nothing
  // else. There, tiles are at most as big as a register tile can be. Before that, tiles block
  // for the caches, and blocks narrower than min_blocking_tile are not tried.
  rule->staged = s.a().level == Level::L1 && s.b().level == Level::L1;
  rule->cap = dim == 0 ? t.vregs : t.vregs * t.lanes;
  rule->min_size = t.min_blocking_tile;
  // Columns go in whole vectors: a narrower tile would mask every load of its body, not
  // just the remainder's.
  rule->lanes = dim == 1 ? t.lanes : 1;
  rule->multiple = panel_step_multiple(s, dim);
  return true;
}

}  // namespace

void enumerate_tiles(const Spec &s, const Target &t, std::vector<Action> &out) {
  TileRule rule;
  for (int dim = 0; dim < 2; ++dim) {
    if (!tile_rule(s, t, dim, &rule)) return;
    for (int32_t size : t.tile_sizes(s.dims[dim])) {
      if (rule.past_last(size)) break;
      if (rule.offers(size)) out.push_back({ActionKind::Tile, static_cast<uint8_t>(dim), 0, size});
    }
  }
}

bool tile_offered(const Spec &s, const Action &a, const Target &t) {
  TileRule rule;
  if (a.kind != ActionKind::Tile || a.a > 1 || a.b != 0 || a.size2 != 0 ||
      !tile_rule(s, t, a.a, &rule) || !rule.offers(a.size))
    return false;
  const TileSizes sizes = t.tile_sizes(s.dims[a.a]);
  return std::binary_search(sizes.begin(), sizes.end(), a.size);
}

void expand_tile(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  loop_expansion(s, a.a, a.size, t, e);
}

}  // namespace tessel
