// Plans found by the search, executed by the plan interpreter, compute a matmul.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "interpreter.h"
#include "memo.h"
#include "plan.h"
#include "solver.h"
#include "support.h"
#include "test_target.h"

namespace tessel {
namespace {

struct Case {
  int64_t m, n, k;
  bool trans_a, trans_b, accumulate;
  int threads;
  float alpha;
};

// Runs one case; returns the largest error against the reference (NaN counts as failure).
void check_case(Solver &solver, const Case &c, std::mt19937_64 &rng) {
  const Spec spec = matmul_spec(c.m, c.n, c.k, c.trans_a, c.trans_b, c.accumulate, c.threads,
                                solver.target().limits());
  Plan plan;
  REQUIRE(build_plan(solver, spec, &plan));
  // Non-tight leading dimensions catch a plan that confuses extents with strides.
  const int64_t lda = (c.trans_a ? c.m : c.k) + int64_t(rng() % 3);
  const int64_t ldb = (c.trans_b ? c.k : c.n) + int64_t(rng() % 3);
  const int64_t ldc = c.n + int64_t(rng() % 3);
  std::vector<float> a((c.trans_a ? c.k : c.m) * lda), b((c.trans_b ? c.n : c.k) * ldb),
      got(c.m * ldc), want;
  test::fill_random(a, rng);
  test::fill_random(b, rng);
  if (c.accumulate) {
    test::fill_random(got, rng);
  } else {
    std::fill(got.begin(), got.end(), std::nanf(""));  // a Matmul must never read C
  }
  want = got;
  interpret(plan, MatmulArgs{a.data(), b.data(), got.data(), lda, ldb, ldc, c.alpha});
  test::reference_sgemm(c.trans_a, c.trans_b, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb,
                        c.accumulate ? 1.0f : 0.0f, want.data(), ldc);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const float g = got[i * ldc + j], w = want[i * ldc + j];
      if (!(std::abs(g - w) <= test::tolerance(c.k))) {
        FAIL_CHECK("mismatch at (" << i << "," << j << "): " << g << " vs " << w << " for "
                                   << to_string(spec) << "\n"
                                   << format_plan(plan));
        return;
      }
    }
  // Padding columns between rows (ld > n) are not C: they must be untouched.
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = c.n; j < ldc; ++j) {
      const float g = got[i * ldc + j], w = want[i * ldc + j];
      CHECK((g == w || (std::isnan(g) && std::isnan(w))));
    }
}

TEST_CASE("interpreted plans equal a naive matmul on seeded random shapes up to 40") {
  const Target &target = test::test_target();
  InMemoryMemo memo;
  Solver solver(target, memo);
  const int64_t special[] = {1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 31, 33, 37, 40};
  const uint64_t seed = 20261122;
  std::mt19937_64 rng(seed);
  auto pick = [&] {
    return rng() % 2 ? special[rng() % std::size(special)] : int64_t(1 + rng() % 40);
  };
  for (int i = 0; i < 120; ++i) {
    const Case c{pick(),
                 pick(),
                 pick(),
                 bool(rng() & 1),
                 bool(rng() & 1),
                 bool(rng() & 1),
                 i % 5 == 0 ? 2 : 1,
                 i % 3 == 0 ? -0.5f : 1.0f};
    INFO("seed " << seed << " case " << i);
    check_case(solver, c, rng);
  }
}

TEST_CASE("interpreted plans for benchmark-like shapes pack, stage and tile correctly") {
  const Target &target = test::test_target();
  InMemoryMemo memo;
  Solver solver(target, memo);
  std::mt19937_64 rng(3);
  for (const Case &c :
       {Case{64, 64, 64, false, false, false, 1, 1}, Case{96, 130, 70, true, false, true, 1, 2},
        Case{17, 65, 33, false, true, false, 2, 1}, Case{1, 300, 257, false, false, false, 1, 1},
        Case{130, 1, 150, true, true, true, 1, -1}}) {
    check_case(solver, c, rng);
  }
}

}  // namespace
}  // namespace tessel
