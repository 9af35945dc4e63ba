// A tensor operand of a spec: where it lives and how it is laid out. Its shape comes from
// the spec's dimensions (see operand_dims in spec.h), so it is not repeated here.
#pragma once
#include <string>

#include "layout.h"
#include "level.h"

namespace tessel {

struct TensorSpec {
  Level level = Level::GL;
  Layout layout;
  // User matrices only: log2 of the largest power of two dividing the distance in bytes from
  // one stored row (row-major) or column (column-major) to the next, when it is at least 7
  // (128 bytes), up to 12 (4 KiB, the span of L1's sets on every x86 core we target); 0 when
  // the rows spread over all sets. Rows 2^s bytes apart fall on the same sets every 4096 / 2^s
  // rows, so a tile of many of them fits L1 worse than its size says (Target::l1_footprint).
  uint8_t stride_log2 = 0;

  friend bool operator==(const TensorSpec &, const TensorSpec &) = default;
};

std::string to_string(const TensorSpec &t);

}  // namespace tessel
