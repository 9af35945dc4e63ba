// A tensor operand of a spec: where it lives and how it is laid out. Its shape comes from
// the spec's dimensions (see operand_dims in spec.h), so it is not repeated here.
#pragma once
#include <bit>
#include <string>

#include "layout.h"
#include "level.h"

namespace tessel {

struct TensorSpec {
  Level level = Level::GL;
  Layout layout;
  // User matrices only, how far apart consecutive stored rows (row-major) or columns
  // (column-major) are: 0 when less than kWideStrideBytes, else 1 + log2 of how many of the
  // 64 sets of an L1 way the rows start in (stride_class in spec.h). Wide-strided rows land
  // in few L1 sets and many pages, so reading a tile of them costs per row
  // (Target::coef.strided_row_cycles); when they start in fewer than all sets, fewer of them
  // fit in L1 (Target::crowded_footprint). Packing avoids both.
  uint8_t stride_class : 6 = 0;  // 0..7; bit-fields keep a spec in 44 bytes (PlanNode)
  // User matrices only: the tile's stored rows follow one another with no gap (it spans whole
  // rows of a matrix whose rows are as long as its stride), so reading them in order is one
  // run. Only a GEMV's B carries it (matmul_spec), for the interleave that reads B in a few
  // long runs (interleave_k.cpp); elsewhere it would only split the memo.
  bool contiguous : 1 = false;
  // User matrices in L3 only: the tile is part of a strip at most kWalkedStripBytes across its
  // stored rows, which the k loop above walks down. Each step's rows then continue the few
  // strided streams the step before read, which the prefetchers follow, instead of starting a
  // run per row (Target::read_cost).
  bool walked : 1 = false;

  bool wide_stride() const { return stride_class != 0; }
  // log2 of the L1 sets the rows start in (6: all of them).
  int set_spread_log2() const { return stride_class == 0 ? kAllSetsLog2 : stride_class - 1; }
  static constexpr int kAllSetsLog2 = std::countr_zero(static_cast<uint64_t>(kL1Sets));

  friend bool operator==(const TensorSpec &, const TensorSpec &) = default;
};

std::string to_string(const TensorSpec &t);

}  // namespace tessel
