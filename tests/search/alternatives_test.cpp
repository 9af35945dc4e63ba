// Every action of a spec with its exact cost, against the solver's decision.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "alternatives.h"
#include "memo.h"
#include "solver.h"
#include "test_target.h"

namespace tessel {
namespace {

bool close(double x, double y) {
  return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y));
}

// The alternatives of `s` list each of its actions once, cheapest first, and the first is the
// solver's decision at its cost: a bound that pruned a cheaper action would show here. Where
// the solver finds no plan, none is solvable. Returns whether `s` is.
bool check_against_solver(const Spec &s, const Target &t) {
  InMemoryMemo memo;
  Solver solver(t, memo);
  const MemoEntry best = solver.solve(s);
  const std::vector<Alternative> all = alternatives(solver, s);
  std::vector<Action> actions;
  enumerate_actions(canonical(s), t, actions);
  INFO(to_string(s));
  REQUIRE(all.size() == actions.size());
  for (const Action &a : actions)
    CHECK(std::count_if(all.begin(), all.end(),
                        [&](const Alternative &x) { return x.action == a; }) == 1);
  if (!best.solvable) {
    CHECK_FALSE(all.empty());
    for (const Alternative &a : all) CHECK_FALSE(a.solvable);
    return false;
  }
  REQUIRE(all.front().solvable);
  CHECK(all.front().action == best.action);
  CHECK(close(all.front().cost.cycles, best.cost.cycles));
  for (size_t i = 1; i < all.size(); ++i) {
    CHECK((all[i - 1].solvable || !all[i].solvable));
    if (all[i].solvable) CHECK_FALSE(cheaper(all[i].cost, all[i - 1].cost));
  }
  return true;
}

TEST_CASE("a spec's cheapest alternative is the solver's decision, at the solver's cost") {
  const Target &t = test::test_target();
  std::mt19937_64 rng(11);
  int solvable = 0;
  for (int trial = 0; trial < 16; ++trial) {
    const int m = 1 + int(rng() % 96), n = 1 + int(rng() % 96), k = 1 + int(rng() % 96);
    solvable += check_against_solver(
        matmul_spec(m, n, k, rng() & 1, rng() & 1, rng() & 1, trial % 4 == 0 ? 2 : 1, t.limits()),
        t);
  }
  CHECK(solvable == 16);
  // B's rows 16 KiB apart under a few rows of A, where staging, packing and k splits are close.
  CHECK(check_against_solver(matmul_spec(8, 4096, 512, false, false, false, 1, t.limits()), t));
}

TEST_CASE("a spec no action completes has only unsolvable alternatives") {
  const Target &t = test::test_target();
  MemoryLimits limits = t.limits();
  limits.vregs = 0;
  CHECK_FALSE(check_against_solver(matmul_spec(5, 8, 3, false, false, false, 1, limits), t));
}

}  // namespace
}  // namespace tessel
