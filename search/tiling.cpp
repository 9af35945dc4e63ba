// Tiling an output dimension (m or n) with a serial loop. Sizes that do not divide the
// extent leave a boundary sub-spec for the remainder.
#include <algorithm>

#include "action.h"

namespace tessel {
namespace {

// Which of a dimension's tile sizes (Target::tile_sizes) the search offers for a spec.
struct TileRule {
  bool staged;                     // A and B both in L1: tiles only lead to a register tile
  int32_t cap;                     // staged: the largest register tile along the dimension
  int32_t min_size;                // not staged: the smallest cache-blocking tile
  const std::vector<int> *strips;  // not staged: also these (packed A panel heights), or null
  int32_t lanes;                   // columns: tiles are whole vectors
  int32_t multiple;                // panels stay aligned (step_keeps_panels)
  // Sizes come in ascending order: past this one, none is offered.
  bool past_last(int32_t size) const { return staged && size > cap; }
  bool offers(int32_t size) const {
    return !past_last(size) && (staged || size >= min_size || is_strip(size)) &&
           size % lanes == 0 && size % multiple == 0;
  }
  bool is_strip(int32_t size) const {
    return strips && std::find(strips->begin(), strips->end(), size) != strips->end();
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
  // Under a tile of B the kernels read (in L1, or panels in L2; A further out), rows may also
  // go one A panel at a time: each strip of A is staged in turn beside B, as BLIS's
  // micro-panels, so register tiles can run 256 deep in k where A 16 rows high and B would
  // not fit L1 together (C read and written half as often as with 128). Paired on the Zen 4
  // VM (perf/ab_builds, one thread): 1024^3 +2.5%, 512x768x3072 +3.1%, 129^3 +2.2%, 512^3
  // +1.5%, 1000^3 -0.8 to -1.3%, 128x768x768 -1.6 to -2.4% (quartiles 0.95-1.02), the other
  // benchmark shapes within 0.5%; two threads (separate processes, 5 runs): 129^3 +8.5%,
  // 256^3 +4%, 1024^3 +3.8%, 512x768x3072 +2.6%, 128x768x768 +2.3%, 512^3 +1.7%, 1000^3
  // +0.9%. Offered wherever rows are tiled, the search solved up to twice as many specs for
  // the same plans; here, about as many.
  rule->strips = dim == 0 && t.kernels_read(1, s.b()) ? &t.panel_row_strips : nullptr;
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
