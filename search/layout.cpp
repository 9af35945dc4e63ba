#include "layout.h"

#include "check.h"
#include "level.h"

namespace tessel {

bool Layout::contiguous_axis1(int64_t extent) const {
  return extent <= 1 || kind == LayoutKind::RowMajor ||
         (kind == LayoutKind::PanelCols && extent <= strip);
}

bool Layout::contiguous_axis0(int64_t extent) const {
  return extent <= 1 || kind == LayoutKind::ColMajor ||
         (kind == LayoutKind::PanelRows && extent <= strip);
}

std::string to_string(Layout l) {
  switch (l.kind) {
    case LayoutKind::RowMajor:
      return "row";
    case LayoutKind::ColMajor:
      return "col";
    case LayoutKind::PanelRows:
      return "panel_rows" + std::to_string(l.strip);
    case LayoutKind::PanelCols:
      return "panel_cols" + std::to_string(l.strip);
    case LayoutKind::VecRows:
      return "vec_rows";
    case LayoutKind::VecDot:
      return "vec_dot";
  }
  return "?";
}

int64_t element_offset(Layout l, int64_t ext, int64_t i, int64_t j) {
  switch (l.kind) {
    case LayoutKind::RowMajor:
      return i * ext + j;
    case LayoutKind::ColMajor:
      return i + j * ext;
    case LayoutKind::PanelRows: {
      const int64_t h = l.strip;
      return (i / h) * h * ext + j * h + i % h;
    }
    case LayoutKind::PanelCols: {
      const int64_t w = l.strip;
      return (j / w) * w * ext + i * w + j % w;
    }
    case LayoutKind::VecRows:
    case LayoutKind::VecDot:
      break;
  }
  TESSEL_CHECK(false, "element_offset on a register layout");
  return 0;
}

bool panel_step_ok(Layout l, int axis, int64_t extent, int64_t step) {
  return step % panel_step_multiple(l, axis, extent) == 0;
}

int32_t panel_step_multiple(Layout l, int axis, int64_t extent) {
  const bool panel_axis = (l.kind == LayoutKind::PanelRows && axis == 0) ||
                          (l.kind == LayoutKind::PanelCols && axis == 1);
  // Inside one panel any step keeps tiles aligned; across panels, whole panels at a time.
  return panel_axis && extent > l.strip ? l.strip : 1;
}

int64_t buffer_elements(Layout l, int64_t rows, int64_t cols) {
  switch (l.kind) {
    case LayoutKind::PanelRows:
      return (rows + l.strip - 1) / l.strip * l.strip * panel_extent(l, rows, cols);
    case LayoutKind::PanelCols:
      return (cols + l.strip - 1) / l.strip * l.strip * panel_extent(l, rows, cols);
    default:
      return rows * cols;
  }
}

namespace {
constexpr int64_t kMaxPackGroup = 16;
}

int64_t pack_group_panels(int64_t panel_bytes) {
  constexpr int64_t kLinesPerSet = 8;
  int64_t lines_in_set[kL1Sets] = {};
  for (int64_t g = 0; g < kMaxPackGroup; ++g)
    if (++lines_in_set[g * panel_bytes / kLineBytes % kL1Sets] > kLinesPerSet) return g;
  return kMaxPackGroup;
}

int64_t panel_extent(Layout l, int64_t rows, int64_t cols) {
  int64_t ext = l.kind == LayoutKind::PanelRows ? cols : rows;
  if (!l.is_panel()) return ext;
  // Panels a multiple of 8 bytes apart (an even strip: every one the targets use) drift by a
  // line at least every 8 panels, so they crowd a set only when a multiple of a way apart,
  // and one more element ends that. buffer_elements is on the search's hot path; other
  // strips are checked (a few elements suffice).
  if (l.strip % 2 == 0) return ext + (4 * l.strip * ext % kL1WayBytes == 0 ? 1 : 0);
  for (int64_t pad = 0; pad < kLineBytes; ++pad, ++ext)
    if (pack_group_panels(4 * l.strip * ext) == kMaxPackGroup) break;
  return ext;
}

}  // namespace tessel
