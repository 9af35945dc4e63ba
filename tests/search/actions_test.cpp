// Properties of the action plumbing shared by every action (actions.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <random>
#include <tuple>
#include <vector>

#include "action.h"
#include "memo.h"
#include "plan.h"
#include "solver.h"

namespace tessel {
namespace {

// Any spec of any op, panels of several strips on every operand included.
Spec random_spec(std::mt19937_64 &rng) {
  static constexpr uint8_t kStrips[] = {1, 4, 6, 8, 16};
  Spec s;
  s.op = Op(rng() % 4);
  for (int32_t &d : s.dims) d = 1 + int32_t(rng() % 40);
  for (TensorSpec &t : s.operands)
    t = {Level(rng() % kLevelCount), Layout{LayoutKind(rng() % 6), kStrips[rng() % 5]}};
  return canonical(s);
}

// C (m x n) += A (m x k) * B (k x n), operands as given, with the target's cache limits.
Spec accumulate_spec(const Target &t, int32_t m, int32_t n, int32_t k, TensorSpec a, TensorSpec b,
                     TensorSpec c) {
  Spec s;
  s.op = Op::MatmulAccum;
  s.dims = {m, n, k};
  s.operands = {a, b, c};
  s.limits = t.limits();
  return s;
}

TEST_CASE("a dimension's panel step multiple allows exactly the steps each operand allows") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const Spec s = random_spec(rng);
    for (int dim = 0; dim < 3; ++dim) {
      const int32_t multiple = panel_step_multiple(s, dim);
      for (int32_t step = 1; step <= 64; ++step) {
        bool every = true;  // the definition: each axis spanning dim, by panel_step_ok
        for (int op = 0; op < s.operand_count(); ++op)
          for (int axis = 0; axis < 2; ++axis)
            if (s.operand_dims(op)[axis] == dim)
              every = every && panel_step_ok(s.operands[op].layout, axis, s.dims[dim], step);
        CHECK(step_keeps_panels(s, dim, step) == every);
        CHECK((step % multiple == 0) == every);
      }
    }
  }
}

TEST_CASE("a parallel spec may split each output dimension evenly among its threads") {
  // One tile per thread, rounded up to whole 6-row A panels for m and 16-column B panels
  // for n, offered once: 129 on 2 threads is 66 + 63 rows or 80 + 49 columns (not tile
  // sizes), on 3 threads 48 + 48 + 33 either way (a tile size, not repeated).
  const Target t = avx2_target(HostCaches{});
  for (auto [threads, rows_even, cols_even] : {std::tuple{2, 66, 80}, {3, 48, 48}}) {
    const Spec s = matmul_spec(129, 129, 129, false, false, false, threads, t.limits());
    std::vector<Action> grids;
    enumerate_parallel_tiles(s, t, grids);
    int rows = 0, cols = 0;
    for (const Action &a : grids) {
      rows += a.size == rows_even && a.size2 == 129;
      cols += a.size == 129 && a.size2 == cols_even;
    }
    CHECK_MESSAGE(rows == 1, threads << " threads");
    CHECK_MESSAGE(cols == 1, threads << " threads");
    int repeats = 0;
    for (size_t i = 0; i < grids.size(); ++i)
      for (size_t j = 0; j < i; ++j) repeats += grids[i] == grids[j];
    CHECK(repeats == 0);
  }
  // 512 on 2 threads is 256 + 256, a tile size: no 258 + 254 beside it.
  const Spec s = matmul_spec(512, 512, 512, false, false, false, 2, t.limits());
  std::vector<Action> grids;
  enumerate_parallel_tiles(s, t, grids);
  for (const Action &a : grids) CHECK_MESSAGE(a.size % 16 == 0, to_string(a));
}

TEST_CASE("the threads' tiles of a parallel grid never share a cache line of C") {
  // C is row-major: a split of n in whole lines, 16 floats, or none. 32x64x64 on two threads
  // was split 40 + 24 columns (the lag's lopsided split in whole vectors), and ran slower
  // than one thread; 24-column tile sizes would share lines too.
  const Target t = avx2_target(HostCaches{});
  for (auto [m, n, k] : {std::array{32, 64, 64}, {64, 72, 64}, {129, 129, 129}, {16, 200, 48}}) {
    for (int threads : {2, 3}) {
      const Spec s = matmul_spec(m, n, k, false, false, false, threads, t.limits());
      std::vector<Action> grids;
      enumerate_parallel_tiles(s, t, grids);
      REQUIRE(!grids.empty());
      for (const Action &a : grids)
        CHECK_MESSAGE((a.size2 % 16 == 0 || a.size2 == n), to_string(s) << " " << to_string(a));
    }
  }
}

TEST_CASE("on two threads the caller's tile may be longer than the helper's by its lag") {
  // The helper starts and is seen done helper_lag after the caller: 48^3 on two threads is
  // offered 26 + 22 rows (half, plus the rows whose FMAs take half the lag, in pairs), and
  // the first tile's extra FMAs up to the lag cost nothing there. Even tiles and three threads
  // get no such credit, and the search takes 26 + 22 over 24 + 24.
  const Target t = avx2_target(HostCaches{});
  const Spec s = matmul_spec(48, 48, 48, false, false, false, 2, t.limits());
  std::vector<Action> grids;
  enumerate_parallel_tiles(s, t, grids);
  const Action lopsided{ActionKind::ParallelTile, 0, 0, 26, 48};
  REQUIRE(std::find(grids.begin(), grids.end(), lopsided) != grids.end());
  auto local = [&](const Spec &spec, int32_t rows) {
    Expansion e;
    expand_parallel_tile(spec, {ActionKind::ParallelTile, 0, 0, rows, 48}, t, e);
    return e.local_cycles;
  };
  const double plain = t.coef.fork_join + t.coef.loop_iteration;
  Spec first = s, last = s;
  first.dims[0] = 26;
  last.dims[0] = 22;
  first.threads = last.threads = 1;
  const double credit = std::min(t.coef.helper_lag, t.fma_bound(first) - t.fma_bound(last));
  CHECK(credit > 0);
  CHECK(local(s, 26) == doctest::Approx(plain - credit));
  CHECK(local(s, 24) == doctest::Approx(plain));
  Spec three = s;
  three.threads = 3;
  CHECK(local(three, 16) == doctest::Approx(plain));  // 16 + 16 + 16: one round

  InMemoryMemo memo;
  Solver solver(t, memo);
  Plan plan;
  REQUIRE(build_plan(solver, s, &plan));
  const PlanNode &root = plan.nodes[size_t(plan.root)];
  REQUIRE(root.kind == NodeKind::Grid);
  CHECK(root.step == 26);
  CHECK(root.children[1] >= 0);  // the helper's 22 rows
}

TEST_CASE("the lag's lopsided split is offered only where the lag is worth a tenth of the FMAs") {
  // 64^3 on two threads: half the lag is a row and a half of FMAs, but under a tenth of a
  // thread's: only the even 32 + 32 is offered, beside the tile sizes.
  const Target t = avx2_target(HostCaches{});
  const Spec s = matmul_spec(64, 64, 64, false, false, false, 2, t.limits());
  std::vector<Action> grids;
  enumerate_parallel_tiles(s, t, grids);
  for (int32_t rows : {34, 36})
    CHECK(std::find(grids.begin(), grids.end(), Action{ActionKind::ParallelTile, 0, 0, rows, 64}) ==
          grids.end());
  CHECK(std::find(grids.begin(), grids.end(), Action{ActionKind::ParallelTile, 0, 0, 32, 64}) !=
        grids.end());
}

TEST_CASE("a small output over a long reduction may split k among its threads") {
  // One part per thread, in whole vectors of k; the first part computes the spec's own op into
  // C, the others overwrite their copies (Matmul) whatever the spec does to C.
  const Target t = avx2_target(HostCaches{});
  for (bool accumulate : {false, true}) {
    for (auto [m, n, k, threads, step, last] :
         {std::tuple{1, 4096, 4096, 2, 2048, 0}, {3, 40, 1001, 3, 336, 329}}) {
      const Spec s = matmul_spec(m, n, k, false, false, accumulate, threads, t.limits());
      std::vector<Action> splits;
      enumerate_parallel_k_splits(s, t, splits);
      REQUIRE(splits.size() == 1);
      CHECK(splits[0].size == step);
      Expansion e;
      expand_parallel_k_split(s, splits[0], t, e);
      CHECK(e.node == NodeKind::Grid);
      CHECK(e.dim == 2);
      CHECK(e.trips == k / step);
      CHECK(e.children[0].spec.op == s.op);
      CHECK(e.children[1].present == (e.trips > 1));
      CHECK(e.children[2].present == (last > 0));
      for (int slot = 0; slot < 3; ++slot) {
        const Child &c = e.children[slot];
        if (!c.present) continue;
        CHECK(c.spec.threads == 1);
        CHECK(c.spec.dims[2] == (slot == 2 ? last : step));
        if (slot > 0) CHECK(c.spec.op == Op::Matmul);
      }
      CHECK(e.local_cycles > t.coef.fork_join);
    }
  }
  // Offered while C fits in the L2: a few rows of A over a B in main memory.
  for (auto [m, n, k] : {std::tuple{27, 1827, 2892}, {448, 448, 512}}) {
    const Spec s = matmul_spec(m, n, k, false, false, false, 2, t.limits());
    REQUIRE(int64_t{m} * n * 4 <= t.limits().bytes(Level::L2));
    std::vector<Action> splits;
    enumerate_parallel_k_splits(s, t, splits);
    CHECK_MESSAGE(splits.size() == 1, m << "x" << n << "x" << k);
  }
  // Not offered: an output larger than the L2 (its copies would cost more than the split
  // saves), a short reduction, one thread.
  for (auto [m, n, k, threads] :
       {std::tuple{480, 480, 4096, 2}, {1, 40, 100, 2}, {1, 4096, 4096, 1}}) {
    const Spec s = matmul_spec(m, n, k, false, false, false, threads, t.limits());
    std::vector<Action> splits;
    enumerate_parallel_k_splits(s, t, splits);
    CHECK_MESSAGE(splits.empty(), m << "x" << n << "x" << k << " on " << threads);
  }
}

TEST_CASE("operands fit the caches when at each level those at or inside it fit together") {
  const Target t = avx2_target(HostCaches{});
  std::mt19937_64 rng(11);
  int fit = 0, tried = 0;
  for (int i = 0; i < 20000; ++i) {
    Spec s = random_spec(rng);
    // Limits from nothing to a little above what 40 x 40 operands need.
    s.limits = {16, uint32_t(rng() % 8), uint32_t(rng() % 16), uint32_t(rng() % 32)};
    bool fits = true;  // the definition, level by level
    for (Level level : {Level::L1, Level::L2, Level::L3}) {
      int64_t used = 0;
      bool any = false;
      for (int op = 0; op < s.operand_count(); ++op) {
        const TensorSpec &ts = s.operands[op];
        if (ts.layout.is_register() || ts.level > level) continue;
        if (!read_once(s, op)) used += t.footprint(ts, s.rows(op), s.cols(op));
        any = true;
      }
      fits = fits && !(any && used > s.limits.bytes(level));
    }
    CHECK(fits_caches(s, t) == fits);
    fit += fits;
    ++tried;
  }
  CHECK(fit > tried / 10);  // both outcomes are exercised
  CHECK(fit < tried * 9 / 10);
}

TEST_CASE(
    "cache blocks of rows are no finer than min_blocking_tile but for A panels under B the "
    "kernels read") {
  const Target t = avx2_target(HostCaches{});
  // C (96 x 16) += A (96 x 256) * B (256 x 16), B packed in panels of 16 columns.
  const Spec s =
      accumulate_spec(t, 96, 16, 256, {Level::L2, row_major()},
                      {Level::L2, Layout{LayoutKind::PanelCols, 16}}, {Level::L3, row_major()});
  auto row_tiles = [&](TensorSpec b) {
    Spec v = s;
    v.operands[1] = b;
    std::vector<Action> out;
    enumerate_tiles(canonical(v), t, out);
    std::vector<int32_t> rows;
    for (const Action &a : out)
      if (a.a == 0) rows.push_back(a.size);
    return rows;
  };
  // B in L3, or in rows in L2 (which the kernels read from L1 only): cache blocks alone.
  const std::vector<int32_t> far = row_tiles({Level::L3, Layout{LayoutKind::PanelCols, 16}});
  REQUIRE(!far.empty());
  for (int32_t size : far) CHECK(size >= t.min_blocking_tile);
  CHECK(row_tiles({Level::L2, row_major()}) == far);
  // Under B in L1, or its panels in L2: the same blocks, and one A panel's height besides.
  std::vector<int32_t> want = far;
  want.insert(want.begin(), t.panel_row_strips.front());
  CHECK(row_tiles({Level::L1, Layout{LayoutKind::PanelCols, 16}}) == want);
  CHECK(row_tiles({Level::L2, Layout{LayoutKind::PanelCols, 16}}) == want);
  // With A and B in L1, tiles only lead to register tiles: any height up to the registers.
  Spec both = s;
  both.operands[0].level = both.operands[1].level = Level::L1;
  std::vector<Action> out;
  enumerate_tiles(canonical(both), t, out);
  CHECK(std::count_if(out.begin(), out.end(), [&](const Action &a) {
          return a.a == 0 && a.size < t.min_blocking_tile;
        }) > 1);
}

TEST_CASE("rows the kernels step across at each k fit L1 only as far as the sets they crowd") {
  const Target t = avx2_target(HostCaches{});
  // C (32 x 96) += A (32 x 64, in L1) * B (64 x 96): B's 64 rows, 384 bytes each, in L2.
  const Spec s = accumulate_spec(t, 32, 96, 64, {Level::L1, row_major()}, {Level::L2, row_major()},
                                 {Level::L2, row_major()});
  auto offers_b_in_l1 = [&](uint8_t b_class) {
    Spec v = s;
    v.operands[1].stride_class = b_class;
    std::vector<Action> out;
    enumerate_stages(canonical(v), t, out);
    for (const Action &a : out)
      if (a.a == 1 && Level(a.b) == Level::L1) return true;
    return false;
  };
  CHECK(offers_b_in_l1(0));        // tight rows
  CHECK(offers_b_in_l1(7));        // wide, starting in all 64 sets
  CHECK(offers_b_in_l1(6));        // 32 sets: two rows a set
  CHECK(offers_b_in_l1(4));        // 512 bytes apart: 8 rows a set, with A's lines: 10.5
  CHECK_FALSE(offers_b_in_l1(2));  // 2 KiB apart: 32 rows a set, where 12 fit
  CHECK_FALSE(offers_b_in_l1(1));  // 8 KiB apart: all 64 rows in the same sets
  // The fullest set's lines, a way's worth each: 64 (class 1), 64 / 8 (class 4).
  TensorSpec b{Level::L1, row_major(), 1};
  CHECK(t.crowded_footprint(b, 64, 96) == 64 * 4096);
  b.stride_class = 4;
  CHECK(t.crowded_footprint(b, 64, 96) == 8 * 4096);
  b.stride_class = 7;
  CHECK(t.crowded_footprint(b, 64, 96) == t.footprint(b, 64, 96));
  // A is read along its rows (row-major): not crowded. Column-major, its rows run along k.
  Spec a_wide = s;
  a_wide.operands[0] = TensorSpec{Level::L1, row_major(), 1};
  CHECK(operand_footprints(a_wide, t).l1[0] == operand_footprints(a_wide, t).bytes[0]);
  a_wide.operands[0].layout = col_major();
  CHECK(operand_footprints(a_wide, t).l1[0] > operand_footprints(a_wide, t).bytes[0]);
}

TEST_CASE("a staged tile of A or B is charged its reads less what hides behind the FMAs") {
  const Target t = avx2_target(HostCaches{});
  const double hidden = t.coef.staged_read_hidden;
  REQUIRE(hidden > 0);
  REQUIRE(hidden < 1);
  auto spec = [&](int32_t m) {  // C (m x 512) += A (m x 64) * B (64 x 512), all in L3
    const TensorSpec l3{Level::L3, row_major()};
    return canonical(accumulate_spec(t, m, 512, 64, l3, l3, l3));
  };
  const Action b_to_l2{ActionKind::Stage, 1, uint8_t(Level::L2), 0};
  const double reads = t.read_cost(spec(1).b(), 64, 512, /*side_by_side=*/true);
  // Many FMAs (48 rows): the share. One row: its FMA cycles, fewer than the share.
  CHECK(expand(spec(48), b_to_l2, t).local_cycles == doctest::Approx(reads * (1 - hidden)));
  const double one_row_fmas = t.fma_bound(spec(1));
  REQUIRE(one_row_fmas >= 64.0 * 64 / t.coef.fma_per_cycle);  // 64 vectors x 64 k at least
  REQUIRE(one_row_fmas < reads * hidden);
  CHECK(expand(spec(1), b_to_l2, t).local_cycles == doctest::Approx(reads - one_row_fmas));
}

TEST_CASE("a register tile streaming A's rows from L2 pays their starts where they crowd L1") {
  const Target t = avx2_target(HostCaches{});
  // C (6 x 16) += A (6 x 16, rows in L2) * B (16 x 16, a panel in L1).
  auto tile_cycles = [&](uint8_t a_class) {
    const Spec s =
        canonical(accumulate_spec(t, 6, 16, 16, TensorSpec{Level::L2, row_major(), a_class},
                                  {Level::L1, panel_cols(16)}, {Level::L2, row_major()}));
    return expand(s, {ActionKind::RegisterTile, uint8_t(LayoutKind::VecRows), 0, 0}, t)
        .local_cycles;
  };
  CHECK(tile_cycles(0) == 0);  // tight rows
  CHECK(tile_cycles(7) == 0);  // wide, starting in all 64 sets (129^3)
  // 12 KiB apart (16x3072x768): every row in the same sets, as staging them into L1 pays.
  const TensorSpec crowded{Level::L2, row_major(), stride_class(12288)};
  REQUIRE(crowded.set_spread_log2() == 0);
  CHECK(tile_cycles(crowded.stride_class) == doctest::Approx(t.strided_rows_cost(crowded, 6, 16)));
  CHECK(tile_cycles(crowded.stride_class) > 0);
}

TEST_CASE("expand keeps a canonical spec's children canonical") {
  const Target t = avx2_target(HostCaches{});
  int checked = 0;
  std::vector<Action> actions;
  auto check_children = [&](const Spec &s) {
    actions.clear();
    enumerate_actions(s, t, actions);
    for (const Action &a : actions) {
      const Expansion e = expand(s, a, t);
      for (const Child &c : e.children)
        if (c.present) {
          INFO(to_string(s), " --", to_string(a), "--> ", to_string(c.spec));
          CHECK(canonical(c.spec) == c.spec);
          ++checked;
        }
    }
  };
  // Every spec the solver meets for a few shapes of each kind (threads, transposes, C
  // accumulated, wide strides), and random specs of every op, level and layout.
  InMemoryMemo memo;
  Solver solver(t, memo);
  for (int shape = 0; shape < 8; ++shape)
    solver.solve(matmul_spec(shape & 1 ? 37 : 24, 40, shape & 2 ? 3000 : 50, shape & 2, shape & 4,
                             shape & 1, 1 + (shape & 1), t.limits(), 4096, 0));
  memo.for_each([&](const Spec &s, const MemoEntry &) { check_children(s); });
  std::mt19937_64 rng(13);
  for (int i = 0; i < 5000; ++i) {
    Spec s = random_spec(rng);
    s.limits = t.limits();
    s.threads = uint8_t(1 + rng() % 2);
    for (TensorSpec &ts : s.operands) ts.stride_class = uint8_t(rng() % 8);
    check_children(canonical(s));
  }
  CHECK(checked > 50000);
}

TEST_CASE("expanding into storage that held another expansion gives what expand gives") {
  const Target t = avx2_target(HostCaches{});
  std::mt19937_64 rng(17);
  std::vector<Action> actions;
  Expansion reused;
  int checked = 0;
  for (int i = 0; i < 3500; ++i) {
    Spec s = random_spec(rng);
    s.limits = t.limits();
    s.threads = uint8_t(1 + rng() % 2);
    s = canonical(s);
    actions.clear();
    enumerate_actions(s, t, actions);
    for (const Action &a : actions) {
      const Expansion fresh = expand(s, a, t);
      expand_into(s, a, t, reused);  // over the previous action's expansion
      INFO(to_string(s), " --", to_string(a));
      CHECK(reused.node == fresh.node);
      CHECK(reused.local_cycles == fresh.local_cycles);
      CHECK(reused.alloc_bytes == fresh.alloc_bytes);
      CHECK(reused.dim == fresh.dim);
      CHECK(reused.step == fresh.step);
      CHECK(reused.trips == fresh.trips);
      CHECK(reused.step2 == fresh.step2);
      CHECK(reused.trips2 == fresh.trips2);
      CHECK(reused.operand == fresh.operand);
      CHECK(reused.new_tensor == fresh.new_tensor);
      for (int slot = 0; slot < kMaxChildren; ++slot) {
        CHECK(reused.children[slot].present == fresh.children[slot].present);
        CHECK(reused.children[slot].multiplicity == fresh.children[slot].multiplicity);
        if (fresh.children[slot].present)
          CHECK(reused.children[slot].spec == fresh.children[slot].spec);
      }
      ++checked;
    }
  }
  CHECK(checked > 10000);
}

TEST_CASE("operand footprints shared by a spec's variants are each operand's footprint") {
  const Target t = avx2_target(HostCaches{});
  std::mt19937_64 rng(19);
  for (int i = 0; i < 5000; ++i) {
    const Spec s = random_spec(rng);
    const OperandFootprints sizes = operand_footprints(s, t);
    for (int op = 0; op < 3; ++op) {
      const bool present = op < s.operand_count();
      const TensorSpec &ts = s.operands[op];
      const bool counted = present && !read_once(s, op);
      CHECK(sizes.bytes[op] == (counted ? t.footprint(ts, s.rows(op), s.cols(op)) : 0));
      CHECK(sizes.l1[op] >= sizes.bytes[op]);
      if (!counted || ts.stride_class == 0 || ts.set_spread_log2() == TensorSpec::kAllSetsLog2)
        CHECK(sizes.l1[op] == sizes.bytes[op]);
    }
    CHECK(fits_caches(s, sizes) == fits_caches(s, t));
  }
}

}  // namespace
}  // namespace tessel
