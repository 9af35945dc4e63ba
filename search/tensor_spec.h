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
  // User matrices only: consecutive rows (row-major) or columns (column-major) are at least
  // kWideStrideBytes apart. Such rows land in few L1 sets and many pages, so reading a tile
  // of them costs per row (Target::coef.strided_row_cycles); packing avoids it.
  bool wide_stride = false;

  friend bool operator==(const TensorSpec &, const TensorSpec &) = default;
};

std::string to_string(const TensorSpec &t);

}  // namespace tessel
