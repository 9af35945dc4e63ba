// Layouts: the map from a 2-D tile's logical coordinates (i = axis 0, j = axis 1) to element
// offsets in its buffer.
//
//   RowMajor      (i, j) -> i*ld + j                  user matrices (ld baked per kernel)
//   ColMajor      (i, j) -> i + j*ld                  user matrices given transposed
//   PanelRows(h)  (i, j) -> (i/h)*h*ext1 + j*h + i%h   packed A: h-row panels, k fastest
//                                                        across the panel
//   PanelCols(w)  (i, j) -> (j/w)*w*ext0 + i*w + j%w   packed B: w-wide column panels
//   VecRows       register tile, row i in ceil(cols/lanes) vectors: reg i*nv + j/lanes
//   VecDot        register tile, element (i, j) is one vector of partial sums over k,
//                  reduced horizontally when stored
//
// ext0/ext1 are the buffer's extents, fixed when the plan allocates it (the extent along the
// panels may be padded, panel_extent). The search keeps
// tiles of a panel layout aligned to panels (a step is a multiple of the strip, or the tile
// fits inside one panel), so stepping a pointer by a tile is always a constant increment.
#pragma once
#include <cstdint>
#include <string>

namespace tessel {

enum class LayoutKind : uint8_t { RowMajor, ColMajor, PanelRows, PanelCols, VecRows, VecDot };

struct Layout {
  LayoutKind kind = LayoutKind::RowMajor;
  uint8_t strip = 0;  // panel height (PanelRows) or width (PanelCols); 0 otherwise

  friend bool operator==(const Layout &, const Layout &) = default;

  bool is_panel() const { return kind == LayoutKind::PanelRows || kind == LayoutKind::PanelCols; }
  bool is_register() const { return kind == LayoutKind::VecRows || kind == LayoutKind::VecDot; }
  // Whether a tile whose axis 1 (resp. 0) has this extent keeps consecutive j (resp. i)
  // adjacent in memory, which a plain vector load along that axis needs.
  bool contiguous_axis1(int64_t extent) const;
  bool contiguous_axis0(int64_t extent) const;
};

inline Layout row_major() {
  return {LayoutKind::RowMajor, 0};
}
inline Layout col_major() {
  return {LayoutKind::ColMajor, 0};
}
inline Layout panel_rows(int h) {
  return {LayoutKind::PanelRows, static_cast<uint8_t>(h)};
}
inline Layout panel_cols(int w) {
  return {LayoutKind::PanelCols, static_cast<uint8_t>(w)};
}
inline Layout vec_rows() {
  return {LayoutKind::VecRows, 0};
}
inline Layout vec_dot() {
  return {LayoutKind::VecDot, 0};
}

std::string to_string(Layout l);

// Element offset of (i, j) in a memory buffer of this layout. For RowMajor/ColMajor `ext`
// is the leading dimension; for PanelRows it is the buffer's axis-1 extent, for PanelCols its
// axis-0 extent.
int64_t element_offset(Layout l, int64_t ext, int64_t i, int64_t j);

// Whether a loop may step axis `axis` by `step` over a tile of extent `extent` and keep
// every tile aligned to panels (see above).
bool panel_step_ok(Layout l, int axis, int64_t extent, int64_t step);
// The steps panel_step_ok allows are exactly the multiples of this (1: any step).
int32_t panel_step_multiple(Layout l, int axis, int64_t extent);

// Elements a memory buffer of this layout needs for a rows x cols tensor.
int64_t buffer_elements(Layout l, int64_t rows, int64_t cols);

// Panels that a pack copying along them (row-major B into column panels, column-major A into
// row panels) fills side by side, `panel_bytes` apart: it reads one run of that many strips
// of each source row, then the next rows, then the next group of panels. The emitter copies
// so (codegen/kernels/pack_panels.cpp); the cost model charges each run from main memory
// its start.
//
// As many panels as possible (up to 16) make long runs the prefetchers follow (a Zen 3 VM
// measured 32 panels side by side against one: 32x768x3072 +14%); but each row
// writes a line into every panel of the group, and panels a multiple of 4 KiB apart put all
// those lines in one L1 set: past 8 of them, stores evict lines still being written.
// Measured on the 2-core Zen 5 VM (12-way L1), 32x768x3072, whose B was then packed in 128x1024
// blocks (panels 8 KiB apart): 8 panels side by side against 32, +30% for the whole GEMM;
// against 4, +9%.
int64_t pack_group_panels(int64_t panel_bytes);

// A panel buffer's extent along its panels (ext0 of PanelCols, ext1 of PanelRows) for a
// rows x cols tensor: its own, padded when that would put the panels a multiple of 4 KiB
// apart, so that a pack fills a whole group of them side by side in long runs of each
// source row. 32x768x3072 packs B in 128-row blocks: unpadded, panels 8 KiB apart, 8 at a
// time (runs of 512 bytes); padded by one row, 16 (paired on the Zen 4 VM: +2.4-3.8%;
// 128^3 +1.3%, 256^3 +0.7-0.9%). A copy of such a pack alone ran ~1.5x faster.
int64_t panel_extent(Layout l, int64_t rows, int64_t cols);

}  // namespace tessel
