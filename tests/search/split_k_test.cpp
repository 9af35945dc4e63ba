// Splits of the reduction (split_k.cpp): which depths are offered, where C is between the
// steps, and what both buy GEMVs and small batches.
#include <doctest/doctest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "action.h"
#include "memo.h"
#include "plan.h"
#include "solver.h"
#include "target.h"

namespace tessel {
namespace {

int32_t shallowest_split(const Spec &s, const Target &t) {
  std::vector<Action> splits;
  enumerate_k_splits(s, t, splits);
  int32_t least = s.dims[2];
  for (const Action &a : splits) least = std::min(least, a.size);
  return least;
}

TEST_CASE("splits of k below the blocking tile are offered where B is streamed") {
  // B from main memory, or from L3 under at most 8 rows of A: 4 rows of B at a time. B in
  // L3 under more rows of A, or in L2: the blocking tile at least.
  const Target t = avx2_target(HostCaches{});
  auto spec = [&](int32_t m, Level b_level) {
    Spec s = matmul_spec(m, 1024, 1024, false, false, false, 1, t.limits());
    s.operands[0].level = Level::L1;
    s.operands[1].level = b_level;
    return canonical(s);
  };
  for (auto [m, level, least] : {std::tuple{1, Level::GL, 4},
                                 {64, Level::GL, 4},
                                 {1, Level::L3, 4},
                                 {8, Level::L3, 4},
                                 {9, Level::L3, t.min_blocking_tile},
                                 {1, Level::L2, t.min_blocking_tile}}) {
    CHECK_MESSAGE(shallowest_split(spec(m, level), t) == least,
                  m << " rows, B at level " << int(level));
  }
}

TEST_CASE("a GEMV over B in L3 streams B unpacked, a few rows at a time") {
  // Packing a B that one row of A reads once costs a read and a write of each element for
  // nothing (1x1024x1024 ran at a third of the speed): with rows 4 KiB apart that crowd one
  // L1 set (1024 and 3072 floats), or not (1000), B is staged a few rows at a time.
  const Target t = avx2_target(HostCaches{});
  InMemoryMemo memo;
  Solver solver(t, memo);
  for (auto [m, k, n] :
       {std::tuple{1, 1024, 1024}, {2, 1024, 1024}, {1, 768, 3072}, {1, 1000, 1000}}) {
    const Spec s = matmul_spec(m, n, k, false, false, false, 1, t.limits());
    REQUIRE(s.b().level == Level::L3);
    Plan plan;
    REQUIRE(build_plan(solver, s, &plan));
    int staged = 0;
    for (const PlanNode &n : plan.nodes) {
      CHECK_MESSAGE(!(n.kind == NodeKind::Alloc && n.operand == 1 && n.spec.b().level == Level::L3),
                    m << "x" << k << "x" << n << " packs B");
      if (n.kind != NodeKind::Stage || n.operand != 1 || n.spec.b().level != Level::L3) continue;
      ++staged;
      CHECK(n.spec.dims[2] <= 8);
    }
    CHECK_MESSAGE(staged > 0, m << "x" << k << "x" << n);
  }
}

TEST_CASE("a k loop over a streamed B keeps a small C tile in L1 between its steps") {
  // The steps of a k loop revisit C: where B streams under a few rows of A and a step's tiles
  // fit L1, the steps see C in L1 and the loop pays one read and write-back of C from its own
  // level. Not for more rows of A, a B already closer, or steps too big for L1.
  const Target t = avx2_target(HostCaches{});
  auto spec = [&](int32_t m, int32_t n, Level b_level) {
    Spec s = matmul_spec(m, n, 768, false, false, true, 1, t.limits());
    s.operands[0].level = Level::L1;
    s.operands[1].level = b_level;
    s.operands[2].level = Level::L3;
    return canonical(s);
  };
  const Action split{ActionKind::SplitK, 0, 0, 16};
  for (auto [m, n, b_level, in_l1] : {std::tuple{8, 128, Level::L3, true},
                                      {16, 128, Level::GL, true},
                                      {17, 128, Level::L3, false},
                                      {8, 128, Level::L2, false},
                                      {16, 1024, Level::L3, false}}) {
    const Spec s = spec(m, n, b_level);
    REQUIRE(s.c().level == Level::L3);
    Expansion e;
    expand_k_split(s, split, t, e);
    const double loop_only = t.coef.loop_iteration * static_cast<double>(e.trips);
    for (const Child &c : e.children)
      if (c.present) CHECK(c.spec.c().level == (in_l1 ? Level::L1 : Level::L3));
    if (in_l1) {
      const double c_once = t.read_cost(s.c(), m, n, false) +
                            t.lines(s.c(), m, n) * t.coef.line_cycles[int(Level::L3)];
      CHECK(e.local_cycles == doctest::Approx(loop_only + c_once));
    } else {
      CHECK(e.local_cycles == doctest::Approx(loop_only));
    }
  }
}

TEST_CASE("a few rows of A over a B in L3 stream B instead of packing it") {
  // On a Zen 4 (32 KiB L1) 8x768x768 packed B to run deep k steps on it (60 GFLOP/s);
  // streamed, 91. Zen 5's caches too.
  for (const int64_t l1 : {32 * 1024, 48 * 1024}) {
    const Target t = avx2_target(HostCaches{l1, 1024 * 1024, 32 * 1024 * 1024});
    InMemoryMemo memo;
    Solver solver(t, memo);
    for (auto [m, k, n] : {std::tuple{8, 768, 768}, {4, 2048, 1536}, {8, 3072, 768}}) {
      const Spec s = matmul_spec(m, n, k, false, false, false, 1, t.limits());
      REQUIRE(s.b().level == Level::L3);
      Plan plan;
      REQUIRE(build_plan(solver, s, &plan));
      CHECK_MESSAGE(plan.workspace_bytes == 0,
                    m << "x" << k << "x" << n << " packs with an L1 of " << l1 << " bytes");
    }
  }
}

TEST_CASE("a k loop walks down a strip of B in L3 a few lines wide and longer than L1 holds") {
  const Target t = avx2_target(HostCaches{48 * 1024, 1024 * 1024, 32 * 1024 * 1024});
  auto split = [&](const Spec &s, int32_t step) {
    return expand(s, Action{ActionKind::SplitK, 0, 0, step}, t);
  };
  auto walks = [](const Expansion &e, int operand) {
    bool all = true;
    for (const Child &c : e.children)
      if (c.present) all = all && c.spec.operands[operand].walked;
    return all;
  };
  // 11 rows of A over a 48-column strip of B (192 bytes a row, 2808 rows: 527 KiB) in L3.
  Spec s = matmul_spec(11, 317, 2808, false, false, false, 1, t.limits());
  REQUIRE(s.b().level == Level::L3);
  cut_dim(s, 1, 48);
  const Expansion e = split(s, 128);
  CHECK(walks(e, 1));
  CHECK_FALSE(e.children[0].spec.a().walked);  // A's rows run along k: it is read across
  // Its steps stay walked when their columns are split further, not once staged out of L3.
  Expansion narrower = expand(e.children[0].spec, Action{ActionKind::Tile, 1, 0, 16}, t);
  CHECK(narrower.children[0].spec.b().walked);
  const Expansion staged =
      expand(e.children[0].spec, Action{ActionKind::Stage, 1, uint8_t(Level::L1), 0}, t);
  CHECK_FALSE(staged.children[0].spec.b().walked);
  Spec in_l2 = e.children[0].spec;
  in_l2.operands[1].level = Level::L2;
  CHECK_FALSE(canonical(in_l2).b().walked);
  // Not walked: a strip wider than kWalkedStripBytes, one that L1 holds, a single step and a
  // remainder, a B in main memory.
  Spec wide = s;
  wide.dims[1] = 80;  // 320 bytes a row
  CHECK_FALSE(walks(split(wide, 128), 1));
  Spec short_strip = s;
  short_strip.dims[2] = 192;  // 36 KiB
  CHECK_FALSE(walks(split(short_strip, 16), 1));
  Spec one_step = s;
  one_step.dims[2] = 300;  // 56 KiB: a step of 256 rows and a remainder
  CHECK_FALSE(walks(split(one_step, 256), 1));
  CHECK(walks(split(one_step, 128), 1));
  Spec in_memory = s;
  in_memory.operands[1].level = Level::GL;
  CHECK_FALSE(walks(split(in_memory, 128), 1));
  // A transposed A of a few rows is walked down its columns the same way.
  Spec at = matmul_spec(8, 317, 2808, true, false, false, 1, t.limits());
  cut_dim(at, 1, 48);
  CHECK(walks(split(at, 128), 0));
}

}  // namespace
}  // namespace tessel
