// Plans that split k among threads: every part but the first writes a copy of C in its caller's
// memory, which the caller adds into C after the join. Several callers at once, so parts of
// different calls share the workers while each caller's copies must stay its own.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "compiler.h"
#include "support.h"
#include "tessel/tessel.h"

namespace {

struct Shape {
  int64_t m, n, k;
};
// Small outputs over long reductions, k a multiple of the part or not (a shorter last part).
constexpr Shape kShapes[] = {{1, 512, 512},  {16, 128, 2048}, {2, 256, 3001},
                             {1, 700, 1001}, {3, 200, 2049},  {1, 128, 4097}};

bool splits_k(const Shape &s, bool trans_a, bool trans_b, bool accumulate) {
  tessel::runtime::KernelKey key;
  key.m = static_cast<int32_t>(s.m);
  key.n = static_cast<int32_t>(s.n);
  key.k = static_cast<int32_t>(s.k);
  key.trans_a = trans_a;
  key.trans_b = trans_b;
  key.accumulate = accumulate;
  key.threads = 2;
  key.lda = trans_a ? s.m : s.k;
  key.ldb = trans_b ? s.k : s.n;
  key.ldc = s.n;
  tessel::Plan plan;
  return tessel::runtime::plan_of(key, &plan) == TESSEL_OK && plan.reduction_parts() > 0;
}

std::string one_call(const Shape &s, int variant, std::mt19937_64 &rng) {
  const bool trans_a = variant & 1, trans_b = variant & 2;
  const float beta = variant & 4 ? 0.5f : 0.0f, alpha = variant & 8 ? -1.25f : 1.0f;
  const int64_t lda = trans_a ? s.m : s.k, ldb = trans_b ? s.k : s.n, ldc = s.n;
  std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n), want;
  tessel::test::fill_random(a, rng);
  tessel::test::fill_random(b, rng);
  tessel::test::fill_random(c, rng);
  if (beta == 0.0f)
    for (float &x : c) x = std::nanf("");
  want = c;
  tessel::test::reference_sgemm(trans_a, trans_b, s.m, s.n, s.k, alpha, a.data(), lda, b.data(),
                                ldb, beta, want.data(), ldc);
  const tessel_status st = tessel_sgemm(TESSEL_ROW_MAJOR, trans_a ? TESSEL_TRANS : TESSEL_NO_TRANS,
                                        trans_b ? TESSEL_TRANS : TESSEL_NO_TRANS, s.m, s.n, s.k,
                                        alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                           std::to_string(s.k) + " variant " + std::to_string(variant);
  if (st != TESSEL_OK) return what + ": " + tessel_last_error();
  for (size_t i = 0; i < c.size(); ++i)
    if (!(std::abs(c[i] - want[i]) <= 1.25f * tessel::test::tolerance(s.k)))
      return what + ": C[" + std::to_string(i) + "] = " + std::to_string(c[i]) + ", expected " +
             std::to_string(want[i]);
  return "";
}

TEST_CASE("splits of k from several callers at once each sum their own copies of C") {
  REQUIRE(tessel_set_num_threads(2) == TESSEL_OK);
  // The test covers splits only while the search picks them for most of these shapes.
  int split = 0, uneven = 0;
  for (const Shape &s : kShapes)
    if (splits_k(s, false, false, false)) {
      ++split;
      uneven += s.k % 2 != 0;
    }
  CHECK(split >= 4);
  CHECK(uneven >= 2);

  constexpr int kCallers = 4, kRounds = 1;
  std::atomic<int> failures{0};
  std::vector<std::string> first(kCallers);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&, t] {
      std::mt19937_64 rng(900 + t);
      for (int r = 0; r < kRounds; ++r)
        for (const Shape &s : kShapes)
          for (int variant = t % 2; variant < 16; variant += 2) {
            const std::string why = one_call(s, variant, rng);
            if (!why.empty() && failures.fetch_add(1) == 0) first[t] = why;
          }
    });
  for (std::thread &th : callers) th.join();
  tessel_set_num_threads(0);
  CHECK(failures == 0);
  for (const std::string &why : first)
    if (!why.empty()) FAIL_CHECK(why);
}

}  // namespace
