#include "action.h"

#include <array>
#include <numeric>

#include "check.h"

namespace tessel {

std::string to_string(const Action &a) {
  static const char *kDims = "mnk";
  switch (a.kind) {
    case ActionKind::Serial:
      return "serial";
    case ActionKind::ParallelTile:
      return "parallel_tile " + std::to_string(a.size) + "x" + std::to_string(a.size2);
    case ActionKind::ParallelSplitK:
      return "parallel_split_k " + std::to_string(a.size);
    case ActionKind::Tile:
      return std::string("tile ") + kDims[a.a] + " " + std::to_string(a.size);
    case ActionKind::SplitK:
      return "split_k " + std::to_string(a.size);
    case ActionKind::Stage:
      return "stage " + std::to_string(a.a) + " " + level_name(Level(a.b));
    case ActionKind::Pack:
      return "pack " + std::to_string(a.a) + " " + level_name(Level(a.b)) + " " +
             std::to_string(a.size) + (a.size2 ? " along k" : "");
    case ActionKind::RegisterTile:
      return "register_tile " + to_string(Layout{LayoutKind(a.a), 0});
    case ActionKind::ZeroAccum:
      return "zero_accum";
    case ActionKind::Kernel:
      return std::string("kernel ") + kernel_name(KernelId(a.a));
    case ActionKind::InterleaveK:
      return "interleave_k " + std::to_string(a.size);
  }
  return "?";
}

void enumerate_actions(const Spec &s, const Target &t, std::vector<Action> &out) {
  if (s.threads > 1) {
    // A parallel spec either splits into a parallel loop of serial bodies, or runs serially.
    enumerate_parallel_tiles(s, t, out);
    enumerate_parallel_k_splits(s, t, out);
    enumerate_serial(s, t, out);
    return;
  }
  enumerate_kernels(s, t, out);
  enumerate_tiles(s, t, out);
  enumerate_k_splits(s, t, out);
  enumerate_interleaves(s, t, out);
  // Staging and packing check their variants against the caches, from the same footprints.
  if (s.is_matmul() && !s.c().layout.is_register()) {
    const OperandFootprints sizes = operand_footprints(s, t);
    enumerate_stages(s, sizes, out);
    enumerate_packs(s, t, sizes, out);
  }
  enumerate_register_tiles(s, t, out);
  enumerate_zero_accum(s, t, out);
}

bool action_applies(const Spec &s, const Action &a, const Target &t, std::vector<Action> &scratch) {
  // The one enumeration that can list `a`, as enumerate_actions would call it.
  scratch.clear();
  const bool parallel_kind = a.kind == ActionKind::ParallelTile ||
                             a.kind == ActionKind::ParallelSplitK || a.kind == ActionKind::Serial;
  if (parallel_kind != (s.threads > 1)) return false;
  switch (a.kind) {
    case ActionKind::Serial:
      enumerate_serial(s, t, scratch);
      break;
    case ActionKind::ParallelTile:
      enumerate_parallel_tiles(s, t, scratch);
      break;
    case ActionKind::ParallelSplitK:
      enumerate_parallel_k_splits(s, t, scratch);
      break;
    case ActionKind::Tile:  // the most common kind in a plan, and the longest list
      return tile_offered(s, a, t);
    case ActionKind::SplitK:
      enumerate_k_splits(s, t, scratch);
      break;
    case ActionKind::Stage:
      return stage_offered(s, a, t);
    case ActionKind::Pack:
      enumerate_packs(s, t, scratch);
      break;
    case ActionKind::RegisterTile:
      enumerate_register_tiles(s, t, scratch);
      break;
    case ActionKind::ZeroAccum:
      enumerate_zero_accum(s, t, scratch);
      break;
    case ActionKind::Kernel:
      enumerate_kernels(s, t, scratch);
      break;
    case ActionKind::InterleaveK:
      enumerate_interleaves(s, t, scratch);
      break;
  }
  for (const Action &x : scratch)
    if (x == a) return true;
  return false;
}

Expansion expand(const Spec &s, const Action &a, const Target &t) {
  Expansion e;
  expand_into(s, a, t, e);
  return e;
}

void expand_into(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  // Everything an expand_* function may leave at its default, but the children's specs.
  static_assert(sizeof(Expansion) == 64 + kMaxChildren * sizeof(Child),
                "a new Expansion field must be reset here");
  e.node = NodeKind::Kernel;
  e.local_cycles = 0;
  e.alloc_bytes = 0;
  e.dim = -1;
  e.step = 0;
  e.trips = 0;
  e.step2 = 0;
  e.trips2 = 0;
  e.operand = -1;
  e.new_tensor = TensorSpec{};
  for (Child &c : e.children) {
    c.multiplicity = 1;
    c.present = false;
  }
  switch (a.kind) {
    case ActionKind::Serial:
      return expand_serial(s, a, t, e);
    case ActionKind::ParallelTile:
      return expand_parallel_tile(s, a, t, e);
    case ActionKind::ParallelSplitK:
      return expand_parallel_k_split(s, a, t, e);
    case ActionKind::Tile:
      return expand_tile(s, a, t, e);
    case ActionKind::SplitK:
      return expand_k_split(s, a, t, e);
    case ActionKind::Stage:
      return expand_stage(s, a, t, e);
    case ActionKind::Pack:
      return expand_pack(s, a, t, e);
    case ActionKind::RegisterTile:
      return expand_register_tile(s, a, t, e);
    case ActionKind::ZeroAccum:
      return expand_zero_accum(s, a, t, e);
    case ActionKind::Kernel:
      return expand_kernel(s, a, t, e);
    case ActionKind::InterleaveK:
      return expand_interleave(s, a, t, e);
  }
  TESSEL_CHECK(false, "unknown action kind");
}

bool step_keeps_panels(const Spec &s, int dim, int32_t step) {
  return step % panel_step_multiple(s, dim) == 0;
}

int32_t panel_step_multiple(const Spec &s, int dim) {
  int32_t multiple = 1;
  for (int i = 0; i < s.operand_count(); ++i) {
    if (!s.operands[i].layout.is_panel()) continue;  // the common case: nothing to align
    const auto axes = s.operand_dims(i);
    for (int axis = 0; axis < 2; ++axis)
      if (axes[axis] == dim)
        multiple = std::lcm(multiple, panel_step_multiple(s.operands[i].layout, axis, s.dims[dim]));
  }
  return multiple;
}

void cut_dim(Spec &s, int dim, int32_t extent) {
  if (extent < s.dims[dim])
    for (int i = 0; i < s.operand_count(); ++i) {
      TensorSpec &o = s.operands[i];
      const auto axes = s.operand_dims(i);
      if (o.contiguous && axes[o.layout.kind == LayoutKind::RowMajor ? 1 : 0] == dim)
        o.contiguous = false;
    }
  s.dims[dim] = extent;
}

void loop_expansion(const Spec &s, int dim, int32_t step, const Target &t, Expansion &e) {
  e.node = NodeKind::Loop;
  e.dim = dim;
  e.step = step;
  const int64_t extent = s.dims[dim];
  e.trips = extent / step;
  const int64_t rest = extent % step;
  e.children[0].spec = s;
  cut_dim(e.children[0].spec, dim, step);
  e.children[0].multiplicity = static_cast<double>(e.trips);
  e.children[0].present = true;
  if (rest) {
    e.children[1].spec = s;
    cut_dim(e.children[1].spec, dim, static_cast<int32_t>(rest));
    e.children[1].present = true;
  }
  e.local_cycles = t.coef.loop_iteration * static_cast<double>(e.trips + (rest ? 1 : 0));
}

OperandFootprints operand_footprints(const Spec &s, const Target &t) {
  OperandFootprints sizes;
  for (int i = 0; i < s.operand_count(); ++i) {
    const TensorSpec &ts = s.operands[i];
    sizes.bytes[i] = sizes.l1[i] = t.footprint(ts, s.rows(i), s.cols(i));
    // The multiply kernels step from one stored row of B (row-major) or A (column-major) to
    // the next at every k, so a register tile that reuses a tile of them from L1 needs all its
    // rows there at once. When those rows crowd into few L1 sets, the tile takes the L1 of
    // the sets it fills (2048x64x2048 staged 64 rows of B 8 KiB apart in L1, where 12 fit:
    // 74 GFLOP/s; counted this way its B is packed: 136). A tile read along its rows streams
    // back from L2 instead, which costs little (1024^3 with A's rows 4 KiB apart runs as with
    // 4000 bytes, within 1%; packing A there measured 2% slower).
    const bool rows_along_k =
        s.is_matmul() && i < 2 &&
        ts.layout.kind == (i == 0 ? LayoutKind::ColMajor : LayoutKind::RowMajor);
    if (rows_along_k) sizes.l1[i] = t.crowded_footprint(ts, s.rows(i), s.cols(i));
    // A GEMV whose B took its room read B 512 or 1024 columns at a time; now it reads whole
    // rows, 8 at a time (one thread / two, three alternating runs each: 1x4096x4096 +20% /
    // +8%, 1x2048x16384 +14% / +2%, 1x2048x2048 +15% / +43%, 1x1000x1000 +5% / +30%,
    // 1x512x512 +11% / +9%; 1x1024x1024 -3% / -3%). Not for A under a single column of B:
    // those scalar-kernel plans ran 15-45% slower so.
    if (read_once(s, i)) sizes.bytes[i] = sizes.l1[i] = 0;
  }
  return sizes;
}

bool read_once(const Spec &s, int i) {
  return s.is_matmul() && i == 1 && s.dims[0] == 1 && s.b().layout.kind == LayoutKind::RowMajor;
}

bool fits_caches(const Spec &s, const Target &t) {
  return fits_caches(s, operand_footprints(s, t));
}

bool fits_caches(const Spec &s, const OperandFootprints &sizes) {
  // An operand counts at its own level and every level outside it: sum each footprint once
  // into its level (this runs for every stage and pack variant of every spec).
  constexpr int kL3 = static_cast<int>(Level::L3);
  std::array<int64_t, kL3 + 1> at{};
  std::array<bool, kL3 + 1> present{};
  int64_t in_l1 = 0;  // what sits in L1, counted as the L1 it takes (sizes.l1)
  for (int i = 0; i < s.operand_count(); ++i) {
    const TensorSpec &ts = s.operands[i];
    if (ts.layout.is_register() || ts.level > Level::L3) continue;
    at[static_cast<int>(ts.level)] += sizes.bytes[i];
    present[static_cast<int>(ts.level)] = true;
    if (ts.level <= Level::L1) in_l1 += sizes.l1[i];
  }
  if (in_l1 > s.limits.bytes(Level::L1)) return false;
  int64_t used = 0;
  bool any = false;
  for (int level = 0; level <= kL3; ++level) {
    used += at[level];
    any = any || present[level];
    if (is_cache(Level(level)) && any && used > s.limits.bytes(Level(level))) return false;
  }
  return true;
}

}  // namespace tessel
