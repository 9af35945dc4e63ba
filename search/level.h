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

// The L1 data cache of every x86 core we target is indexed by the 12 bits within a 4 KiB
// page: each way holds 64 sets of one 64-byte line. Rows whose addresses agree in those bits
// compete for one set's ways (spec.h's stride_class, layout.h's pack_group_panels).
constexpr int64_t kLineBytes = 64, kL1WayBytes = 4096, kL1Sets = kL1WayBytes / kLineBytes;
constexpr bool is_cache(Level l) {
  return l == Level::L1 || l == Level::L2 || l == Level::L3;
}

}  // namespace tessel
