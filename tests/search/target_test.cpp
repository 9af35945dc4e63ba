// The target description's derived tables.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "target.h"

namespace tessel {
namespace {

// The documented list, built the obvious way.
std::vector<int32_t> reference_tile_sizes(const Target &t, int64_t extent, bool output_dim) {
  std::set<int32_t> sizes;
  for (int64_t s = 1; s < extent; s *= 2) sizes.insert(static_cast<int32_t>(s));
  if (output_dim)
    for (int base : t.tile_bases)
      for (int64_t s = base; s < extent && s <= t.register_tile_span; s *= 2)
        sizes.insert(static_cast<int32_t>(s));
  return {sizes.begin(), sizes.end()};
}

TEST_CASE("tile sizes are the ascending union of powers of two and each base's run") {
  Target tabulated = avx2_target(HostCaches{});
  // The target's own bases, several, and one whose run repeats powers of two.
  const std::vector<std::vector<int>> bases = {tabulated.tile_bases, {3, 5}, {4}, {5, 3, 7}, {}};
  for (const std::vector<int> &b : bases) {
    tabulated.tile_bases = b;
    tabulated.tabulate();
    Target computed;  // never tabulated: lists built on each call
    computed.tile_bases = b;
    computed.register_tile_span = tabulated.register_tile_span;
    for (const Target *t : {&tabulated, &computed})
      for (int64_t extent : {0,
                             1,
                             2,
                             3,
                             4,
                             5,
                             6,
                             7,
                             16,
                             17,
                             24,
                             25,
                             96,
                             97,
                             100,
                             129,
                             1000,
                             4096,
                             (1 << 30) + 1,
                             INT32_MAX}) {
        for (bool output_dim : {false, true}) {
          const TileSizes got = t->tile_sizes(extent, output_dim);
          CHECK(std::vector<int32_t>(got.begin(), got.end()) ==
                reference_tile_sizes(*t, extent, output_dim));
        }
      }
  }
}

}  // namespace
}  // namespace tessel
