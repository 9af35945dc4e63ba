// Parallel loops. A spec that may use T threads either splits its output into a grid of
// tiles (m, n or both) run by a parallel loop of serial bodies, splits its reduction into T
// parts that each write their own copy of C (summed into C after the join), or gives up
// parallelism (Serial). A grid costs the fork/join, plus one tile per round of T tiles (the
// last, partial round counted whole: that is the load imbalance). Only a root spec has
// threads > 1, so the grid is always outermost and the emitted kernel is a function of its
// iteration range.
//
// On two threads the calling thread runs the first tile while the helper, which sees the loop
// a cache line's transfer later and is seen to finish one later, runs the last (runtime/
// team.h): a first tile longer than the last by up to CostCoefficients::helper_lag costs
// nothing, and the split of m or n that evens the two out is offered. Two threads, 48^3: 26
// rows and 22 against 24 and 24, within 2% (each 15% over 30 + 18, the split a lag of 1600
// cycles asked for).
#include <algorithm>
#include <numeric>

#include "action.h"

namespace tessel {

void enumerate_serial(const Spec &s, const Target &, std::vector<Action> &out) {
  if (s.threads > 1) out.push_back({ActionKind::Serial, 0, 0, 0});
}

void expand_serial(const Spec &s, const Action &, const Target &, Expansion &e) {
  e.node = NodeKind::Block;
  e.children[0].spec = s;
  e.children[0].spec.threads = 1;
  e.children[0].present = true;
  // Run on the calling core alone, the operands may be in its own cache (home_level).
  const auto [m, n, k] = s.dims;
  const Level parallel_home = home_level(m, n, k, s.threads, s.limits);
  const Level serial_home = home_level(m, n, k, 1, s.limits);
  for (TensorSpec &t : e.children[0].spec.operands)
    if (t.level == parallel_home) t.level = serial_home;
}

namespace {

// The elements of C along `dim` that share a cache line: the tiles of different threads must
// not, or each store to such a line moves it between the cores. Two threads splitting
// 32x64x64's columns 40 + 24 ran 15% slower than one thread; 16-column tiles cannot share
// lines where C's rows start on one. A parallel spec's C is row-major (matmul_spec).
int32_t line_multiple(int dim) {
  return dim == 1 ? static_cast<int32_t>(kLineBytes / 4) : 1;  // f32
}

// What a grid's tiles along `dim` must be a multiple of: whole panels and whole lines of C.
int32_t grid_step_multiple(const Spec &s, int dim) {
  return std::lcm(panel_step_multiple(s, dim), line_multiple(dim));
}

}  // namespace

void enumerate_parallel_tiles(const Spec &s, const Target &t, std::vector<Action> &out) {
  if (!s.is_matmul() || s.threads <= 1 || s.c().layout.is_register()) return;
  // Tiles of m x n (the whole extent or a tile size of each): at least one per thread, and
  // at most four rounds of them, past which smaller tiles only lose reuse.
  const int64_t m = s.dims[0], n = s.dims[1];
  auto grid = [&](int32_t sm, int32_t sn) {
    const int64_t tiles = (m + sm - 1) / sm * ((n + sn - 1) / sn);
    if (tiles >= s.threads && tiles <= 4 * int64_t{s.threads})
      out.push_back({ActionKind::ParallelTile, 0, 0, sm, sn});
  };
  auto steps = [&](int dim, auto &&f) {
    const int32_t multiple = grid_step_multiple(s, dim);
    for (int32_t size : t.tile_sizes(s.dims[dim]))
      if (size % multiple == 0) f(size);
    f(s.dims[dim]);
  };
  steps(0, [&](int32_t sm) { steps(1, [&](int32_t sn) { grid(sm, sn); }); });
  // And one tile per thread along m or n, rounded up to whole panels (A's height for m, B's
  // width for n), for an extent the tile sizes split unevenly or into several tiles per
  // thread, each of which packs its operands again (129 rows on 2 threads: three 24-row
  // tiles each, where 66 + 63 pack once; 512 rows are 256 + 256 already). Only the 1-D
  // split: the search of each grid's new tile specs is most of a cold parallel search.
  for (int dim = 0; dim < 2; ++dim) {
    const int64_t extent = s.dims[dim];
    const std::vector<int> &strips = dim == 0 ? t.panel_row_strips : t.panel_col_strips;
    const int64_t whole =
        std::lcm(strips.empty() ? t.lanes : *std::max_element(strips.begin(), strips.end()),
                 int64_t{line_multiple(dim)});
    const int64_t per_thread = (extent + s.threads - 1) / s.threads;
    const auto even = static_cast<int32_t>((per_thread + whole - 1) / whole * whole);
    const TileSizes sizes = t.tile_sizes(extent);
    auto listed = [&](int32_t size) {
      return std::find(sizes.begin(), sizes.end(), size) != sizes.end();
    };
    const bool even_offered = even < extent && even % grid_step_multiple(s, dim) == 0 &&
                              !listed(even) && !listed(static_cast<int32_t>(per_thread));
    if (even_offered) dim == 0 ? grid(even, s.dims[1]) : grid(s.dims[0], even);
    // The first tile that the helper's lag evens out: half the extent plus the lines (rows of
    // m, or columns of n) whose FMAs take helper_lag / 2, rounded to a whole step. Only where
    // the lag is a tenth of a thread's FMAs at least: each grid's tiles are new specs to
    // search (with the lag a line at least, 1000^3 took 30% longer for a 504 + 496 split of
    // its columns, and the differential test's 500 random problems up to 300 on a side
    // 13.5-13.9 s against 11.6-13.0, no database).
    const double fmas = t.fma_bound(s);
    if (s.threads != 2 || t.coef.helper_lag < 0.1 * fmas / 2) continue;
    const int64_t rows_in_pairs = dim == 0 ? 2 : 1;  // columns: whole lines of C already
    const int64_t multiple = std::lcm(rows_in_pairs, int64_t{grid_step_multiple(s, dim)});
    const auto lag_lines =
        static_cast<int64_t>(t.coef.helper_lag / 2 / (fmas / static_cast<double>(extent)));
    const int64_t first = (extent / 2 + lag_lines + multiple / 2) / multiple * multiple;
    if (first > extent / 2 && first < extent && !listed(static_cast<int32_t>(first)) &&
        !(even_offered && first == even))
      dim == 0 ? grid(static_cast<int32_t>(first), s.dims[1])
               : grid(s.dims[0], static_cast<int32_t>(first));
  }
}

void expand_parallel_tile(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  e.node = NodeKind::Grid;
  e.dim = 0;
  e.step = a.size;
  e.step2 = a.size2;
  const int32_t m = s.dims[0], n = s.dims[1];
  e.trips = m / a.size;
  e.trips2 = n / a.size2;
  const int32_t last_rows = m % a.size, last_cols = n % a.size2;
  const int32_t tile_rows[4] = {a.size, last_rows, a.size, last_rows};
  const int32_t tile_cols[4] = {a.size2, a.size2, last_cols, last_cols};
  for (int slot = 0; slot < 4; ++slot) {
    Child &c = e.children[slot];
    c.present = tile_rows[slot] > 0 && tile_cols[slot] > 0;
    c.spec = s;
    c.spec.threads = 1;
    cut_dim(c.spec, 0, tile_rows[slot]);
    cut_dim(c.spec, 1, tile_cols[slot]);
    // Remainder tiles run beside full ones in some round, and are never longer.
    c.multiplicity = 0;
  }
  const int64_t iterations = (e.trips + (last_rows > 0)) * (e.trips2 + (last_cols > 0));
  const int64_t rounds = (iterations + s.threads - 1) / s.threads;
  e.local_cycles = t.coef.fork_join + t.coef.loop_iteration * static_cast<double>(rounds);
  e.children[0].multiplicity = static_cast<double>(rounds);
  // Two tiles on two threads: the helper's, the last, starts and is seen done helper_lag late.
  if (s.threads == 2 && iterations == 2 && (last_rows > 0 || last_cols > 0)) {
    const Spec &last = e.children[last_rows > 0 ? 1 : 2].spec;
    e.local_cycles -=
        std::clamp(t.fma_bound(e.children[0].spec) - t.fma_bound(last), 0.0, t.coef.helper_lag);
  }
}

// Splitting k suits a small output over a long reduction: each thread then streams whole
// rows of B, one contiguous region per thread, where a split of n reads each row in pieces
// beside the other thread (1x4096x4096 and 1x2048x16384 on two threads +5%, same library, 7
// rounds; from main memory under a few rows of A, 27x2892x1827 +25% and 32x2139x1945 +13%),
// and the copies of C to sum are small. Offered where C fits in the L2 (each thread's copy
// stays there while it adds into it) with at least 64 k per thread: a larger C splits m or n
// among the threads without copies, and the search need not weigh both (at any size, 1000^3
// on two threads solved 22% more specs for the same plan).
void enumerate_parallel_k_splits(const Spec &s, const Target &, std::vector<Action> &out) {
  if (!s.is_matmul() || s.threads <= 1 || s.c().layout.is_register()) return;
  const int64_t m = s.dims[0], n = s.dims[1], k = s.dims[2];
  if (m * n * 4 > s.limits.bytes(Level::L2) || k < 64 * int64_t{s.threads}) return;
  const int64_t multiple = std::lcm(int64_t{8}, int64_t{panel_step_multiple(s, 2)});
  const int64_t per_thread = (k + s.threads - 1) / s.threads;
  const int64_t step = (per_thread + multiple - 1) / multiple * multiple;
  if (step < k) out.push_back({ActionKind::ParallelSplitK, 0, 0, static_cast<int32_t>(step), 0});
}

void expand_parallel_k_split(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  e.node = NodeKind::Grid;
  e.dim = 2;
  e.step = a.size;
  const int32_t k = s.dims[2];
  e.trips = k / a.size;
  const int32_t last = k % a.size;
  // The first part adds into C as the spec does; the others overwrite their copies.
  const int32_t depth[3] = {a.size, a.size, last};
  const bool present[3] = {true, e.trips > 1, last > 0};
  for (int slot = 0; slot < 3; ++slot) {
    Child &c = e.children[slot];
    c.present = present[slot];
    c.spec = s;
    c.spec.threads = 1;
    c.spec.dims[2] = depth[slot];
    if (slot > 0) c.spec.op = Op::Matmul;
    c.multiplicity = 0;  // beside the first part, in some round, and never longer
  }
  const int64_t parts = e.trips + (last > 0);
  const int64_t rounds = (parts + s.threads - 1) / s.threads;
  e.children[0].multiplicity = static_cast<double>(rounds);
  // The sum after the join: every copy read, C read and written, the copies from L3 (they were
  // written on other cores).
  const int64_t m = s.dims[0], n = s.dims[1];
  const double vectors = static_cast<double>(m * ((n + t.lanes - 1) / t.lanes));
  const double lines = static_cast<double>(m * ((4 * n + kLineBytes - 1) / kLineBytes));
  const double sum = static_cast<double>(parts) * vectors / t.coef.loads_per_cycle +
                     vectors / t.coef.stores_per_cycle +
                     static_cast<double>(parts) * lines * t.coef.line_cycles[int(Level::L3)];
  e.local_cycles = t.coef.fork_join + t.coef.loop_iteration * static_cast<double>(rounds) + sum;
}

}  // namespace tessel
