// Splits of the reduction (split_k.cpp): which depths are offered, and what the shallow ones
// buy a GEMV.
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

}  // namespace
}  // namespace tessel
