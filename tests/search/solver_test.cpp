// The solver against brute force, and the search's algebraic properties.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "memo.h"
#include "solver.h"
#include "target.h"
#include "test_target.h"

namespace tessel {
namespace {

// Plain exhaustive minimum over the same action space: no branch and bound, no ordering,
// only a map so shared sub-specs are not re-expanded exponentially.
double brute_force(const Spec &raw, const Target &t, std::map<SpecKey, double> &seen) {
  const Spec s = canonical(raw);
  const SpecKey key = spec_key(s);
  if (auto it = seen.find(key); it != seen.end()) return it->second;
  std::vector<Action> actions;
  enumerate_actions(s, t, actions);
  double best = std::numeric_limits<double>::infinity();
  for (const Action &a : actions) {
    const Expansion e = expand(s, a, t);
    double total = e.local_cycles;
    for (const Child &c : e.children) {
      if (!c.present) continue;
      const double sub = brute_force(c.spec, t, seen);
      total += c.multiplicity > 0 ? c.multiplicity * sub : (std::isinf(sub) ? sub : 0);
    }
    best = std::min(best, total);
  }
  seen[key] = best;
  return best;
}

bool close(double x, double y) {
  return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y));
}

TEST_CASE("the DP optimum equals brute-force enumeration on every spec up to 4x4x4") {
  const Target &t = test::test_target();
  int checked = 0;
  for (int m = 1; m <= 4; ++m)
    for (int n = 1; n <= 4; ++n)
      for (int k = 1; k <= 4; ++k)
        for (int layouts = 0; layouts < 4; ++layouts)
          for (bool accumulate : {false, true}) {
            const Spec s =
                matmul_spec(m, n, k, layouts & 1, layouts & 2, accumulate, 1, t.limits());
            InMemoryMemo memo;
            Solver solver(t, memo);
            const MemoEntry best = solver.solve(s);
            std::map<SpecKey, double> seen;
            const double brute = brute_force(s, t, seen);
            INFO(to_string(s));
            REQUIRE(best.solvable);
            CHECK(close(best.cost.cycles, brute));
            ++checked;
          }
  CHECK(checked == 4 * 4 * 4 * 4 * 2);
}

TEST_CASE("branch and bound matches brute force on larger and parallel specs") {
  const Target &t = test::test_target();
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    const int m = 1 + int(rng() % 24), n = 1 + int(rng() % 24), k = 1 + int(rng() % 24);
    const int threads = trial % 3 == 0 ? 2 : 1;
    MemoryLimits limits = t.limits();
    // Operands in main memory half the time: C staged in L2, shallow reduction splits.
    if (trial % 2) limits.l3_kib = 0;
    const Spec s = matmul_spec(m, n, k, rng() & 1, rng() & 1, rng() & 1, threads, limits);
    InMemoryMemo memo;
    Solver solver(t, memo);
    std::map<SpecKey, double> seen;
    INFO(to_string(s));
    CHECK(close(solver.solve(s).cost.cycles, brute_force(s, t, seen)));
  }
}

TEST_CASE("more memory never makes the best cost worse") {
  const Target &t = test::test_target();
  for (auto [m, n, k] : {std::array{64, 64, 64}, {17, 33, 65}, {1, 96, 200}}) {
    double previous = std::numeric_limits<double>::infinity();
    for (double share : {0.125, 0.25, 0.5, 1.0}) {
      MemoryLimits limits = t.limits();
      limits.l1_kib = uint32_t(limits.l1_kib * share);
      limits.l2_kib = uint32_t(limits.l2_kib * share);
      InMemoryMemo memo;
      Solver solver(t, memo);
      const MemoEntry e = solver.solve(matmul_spec(m, n, k, false, false, false, 1, limits));
      REQUIRE(e.solvable);
      CHECK(e.cost.cycles <= previous * (1 + 1e-12));
      previous = e.cost.cycles;
    }
  }
}

TEST_CASE("fewer vector registers never make the best cost better") {
  Target t = test::test_target();
  double previous = 0;
  for (uint32_t regs : {16u, 12u, 8u, 6u}) {
    MemoryLimits limits = t.limits();
    limits.vregs = regs;
    InMemoryMemo memo;
    Solver solver(t, memo);
    const MemoEntry e = solver.solve(matmul_spec(48, 48, 48, false, false, false, 1, limits));
    REQUIRE(e.solvable);
    CHECK(e.cost.cycles >= previous);
    previous = e.cost.cycles;
  }
}

TEST_CASE("a warm memo returns the identical decision and cost") {
  const Target &t = test::test_target();
  InMemoryMemo memo;
  Solver solver(t, memo);
  const Spec s = matmul_spec(65, 67, 61, false, true, false, 1, t.limits());
  const MemoEntry cold = solver.solve(s);
  const int64_t solved = solver.stats().specs_solved;
  const MemoEntry warm = solver.solve(s);
  CHECK(warm.action == cold.action);
  CHECK(warm.cost == cold.cost);
  CHECK(solver.stats().specs_solved == solved);
}

TEST_CASE("a spec whose operands cannot fit any register tile is unsolvable, not a crash") {
  const Target &t = test::test_target();
  MemoryLimits limits = t.limits();
  limits.vregs = 0;
  InMemoryMemo memo;
  Solver solver(t, memo);
  CHECK_FALSE(solver.solve(matmul_spec(5, 8, 3, false, false, false, 1, limits)).solvable);
}

TEST_CASE("memoized bounds are proven, and cover the target's bound where they say so") {
  const Target &t = test::test_target();
  InMemoryMemo memo;
  Solver solver(t, memo);
  for (const Spec &s : {matmul_spec(200, 300, 250, false, false, false, 1, t.limits()),
                        matmul_spec(37, 129, 61, true, false, true, 2, t.limits())})
    solver.solve(s);
  int bounded = 0;
  InMemoryMemo fresh;  // one memo for the exact optima, which share their sub-specs
  Solver exact(t, fresh);
  memo.for_each([&](const Spec &s, const MemoEntry &e) {
    if (e.exact) return;
    ++bounded;
    INFO(to_string(s));
    CHECK(e.covers_target_bound);  // every inexact entry the solver leaves
    CHECK(e.lower_bound >= t.lower_bound(s));
    const MemoEntry best = exact.solve(s);
    if (best.solvable) CHECK(best.cost.cycles >= e.lower_bound * (1 - 1e-12));
  });
  CHECK(bounded > 100);
}

}  // namespace
}  // namespace tessel
