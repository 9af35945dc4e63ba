// Cost of a plan: estimated cycles under the target's affine model, with the tie-breaks the
// solver applies when cycles are equal: less workspace memory, then a shallower plan.
#pragma once
#include <cstdint>

namespace tessel {

struct Cost {
  double cycles = 0;
  int64_t peak_bytes = 0;  // packing buffers alive at once
  int32_t depth = 0;

  friend bool operator==(const Cost &, const Cost &) = default;
};

inline bool cheaper(const Cost &x, const Cost &y) {
  if (x.cycles != y.cycles) return x.cycles < y.cycles;
  if (x.peak_bytes != y.peak_bytes) return x.peak_bytes < y.peak_bytes;
  return x.depth < y.depth;
}

}  // namespace tessel
