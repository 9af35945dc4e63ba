// Where a tensor lives. Cache levels are not addressed: staging a tile "into L1" copies
// nothing, it only changes what the accesses cost. VRF is the vector register file; a
// tensor there is a set of named vector registers chosen by the emitter.
#pragma once
#include <cstdint>

namespace tessel {

// Ordered from the core outwards; a smaller value is closer to the ALUs.
enum class Level : uint8_t { VRF = 0, L1 = 1, L2 = 2, L3 = 3, GL = 4 };
constexpr int kLevelCount = 5;

const char *level_name(Level l);
constexpr bool is_cache(Level l) {
  return l == Level::L1 || l == Level::L2 || l == Level::L3;
}

}  // namespace tessel
