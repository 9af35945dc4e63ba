// tessel_sgemm against the naive reference on seeded random problems: sizes 1..300 (1, primes,
// multiples of 8 +- 1), both layouts, all transposes, non-tight leading dimensions, alpha and
// beta in {0, 1, -1, 0.5}, NaN in C when beta = 0, guard canaries around C.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support.h"
#include "tessel/tessel.h"

namespace {

constexpr float kCanary = -12345.5f;
constexpr int64_t kGuard = 37;  // floats of canary before and after C

int64_t pick_size(std::mt19937_64 &rng, int64_t cap) {
  static const int64_t special[] = {
      1,  2,  3,  5,  7,  8,  9,  11, 13, 15,  16,  17,  23,  24,  25,  31,  32,  33,  37,  39, 40,
      41, 47, 48, 49, 61, 63, 64, 65, 97, 127, 128, 129, 131, 191, 193, 255, 257, 263, 293, 300};
  int64_t v;
  switch (rng() % 4) {
    case 0:
      v = special[rng() % std::size(special)];
      break;
    case 1:
      v = 1 + int64_t(rng() % 300);
      break;
    default:
      v = 1 + int64_t(rng() % 48);
      break;
  }
  return std::min(v, cap);
}

// Returns "" on success, else a description of the first failure.
std::string run_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Keep the volume moderate so two thousand cases stay quick: one big dimension at most.
  int64_t m = pick_size(rng, 300), n = pick_size(rng, 300), k = pick_size(rng, 300);
  if (m * n * k > 2'000'000) k = std::max<int64_t>(1, 2'000'000 / (m * n));
  const bool col = rng() & 1, ta = rng() & 1, tb = rng() & 1;
  static const float scalars[] = {0.0f, 1.0f, -1.0f, 0.5f};
  const float alpha = scalars[rng() % 4], beta = scalars[rng() % 4];
  const int64_t a_rows = (col != ta) ? k : m, a_cols = (col != ta) ? m : k;  // stored shape
  const int64_t b_rows = (col != tb) ? n : k, b_cols = (col != tb) ? k : n;
  const int64_t c_rows = col ? n : m, c_cols = col ? m : n;
  // In the stored (row-major-view) sense: element (i, j) of a buffer at i * ld + j.
  const int64_t lda = a_cols + int64_t(rng() % 4), ldb = b_cols + int64_t(rng() % 4),
                ldc = c_cols + int64_t(rng() % 4);
  std::vector<float> a(a_rows * lda), b(b_rows * ldb), c(c_rows * ldc + 2 * kGuard);
  tessel::test::fill_random(a, rng);
  tessel::test::fill_random(b, rng);
  tessel::test::fill_random(c, rng);
  float *c0 = c.data() + kGuard;
  for (int64_t i = 0; i < kGuard; ++i) c[i] = c[c.size() - 1 - i] = kCanary;
  for (int64_t i = 0; i < c_rows; ++i)
    for (int64_t j = c_cols; j < ldc; ++j) c0[i * ldc + j] = kCanary;  // row padding
  if (beta == 0.0f)
    for (int64_t i = 0; i < c_rows; ++i)
      for (int64_t j = 0; j < c_cols; ++j) c0[i * ldc + j] = std::nanf("");
  // Reference in row-major terms: a column-major call is the transposed row-major call.
  std::vector<float> want(c.begin() + kGuard, c.end() - kGuard);
  if (col) {
    tessel::test::reference_sgemm(tb, ta, n, m, k, alpha, b.data(), ldb, a.data(), lda, beta,
                                  want.data(), ldc);
  } else {
    tessel::test::reference_sgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
                                  want.data(), ldc);
  }
  const std::vector<float> a_before = a, b_before = b;
  const tessel_status st =
      tessel_sgemm(col ? TESSEL_COL_MAJOR : TESSEL_ROW_MAJOR, ta ? TESSEL_TRANS : TESSEL_NO_TRANS,
                   tb ? TESSEL_TRANS : TESSEL_NO_TRANS, m, n, k, alpha, a.data(), lda, b.data(),
                   ldb, beta, c0, ldc);
  std::ostringstream what;
  what << "seed " << seed << ": " << (col ? "col" : "row") << " m=" << m << " n=" << n << " k=" << k
       << " ta=" << ta << " tb=" << tb << " alpha=" << alpha << " beta=" << beta << " lda=" << lda
       << " ldb=" << ldb << " ldc=" << ldc << ": ";
  if (st != TESSEL_OK) return what.str() + "status " + tessel_last_error();
  for (int64_t i = 0; i < kGuard; ++i)
    if (c[i] != kCanary || c[c.size() - 1 - i] != kCanary) return what.str() + "guard overwritten";
  if (a != a_before || b != b_before) return what.str() + "A or B modified";
  for (int64_t i = 0; i < c_rows; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c0[i * ldc + j], ref = want[i * ldc + j];
      if (j >= c_cols) {
        if (got != kCanary) return what.str() + "row padding overwritten";
        continue;
      }
      if (!(std::abs(got - ref) <= tessel::test::tolerance(k))) {
        std::ostringstream o;
        o << what.str() << "C(" << i << "," << j << ") = " << got << ", expected " << ref;
        return o.str();
      }
    }
  return "";
}

TEST_CASE("seeds that once failed still pass") {
  std::ifstream in(TESSEL_TEST_DATA_DIR "/runtime/regression_seeds.txt");
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::string failure = run_case(std::stoull(line));
    CHECK_MESSAGE(failure.empty(), failure);
    ++count;
  }
  MESSAGE(count << " regression seeds");
}

// 2000 cases in four parts, so CTest can run them in parallel.
void run_seeds(uint64_t first, uint64_t last) {
  int failures = 0;
  for (uint64_t seed = first; seed <= last; ++seed) {
    const std::string failure = run_case(seed);
    if (failure.empty()) continue;
    FAIL_CHECK(failure);
    std::fprintf(stderr, "failing seed %llu (add it to tests/runtime/regression_seeds.txt)\n",
                 static_cast<unsigned long long>(seed));
    if (++failures >= 10) break;
  }
  CHECK(failures == 0);
}

TEST_CASE("seeded random problems 1-500 equal the reference") {
  run_seeds(1, 500);
}
TEST_CASE("seeded random problems 501-1000 equal the reference") {
  run_seeds(501, 1000);
}
TEST_CASE("seeded random problems 1001-1500 equal the reference") {
  run_seeds(1001, 1500);
}
TEST_CASE("seeded random problems 1501-2000 equal the reference") {
  run_seeds(1501, 2000);
}

TEST_CASE("matrix-vector products with a contiguous vector equal the reference") {
  // Both layouts, both forms of the vector, NaN in y with beta = 0 and accumulation.
  std::mt19937_64 rng(31);
  for (int64_t m : {1, 7, 64, 129})
    for (int64_t k : {1, 8, 33, 300})
      for (const bool row : {true, false})
        for (const float beta : {0.0f, 0.5f}) {
          std::vector<float> a(static_cast<size_t>(m * k)), v(static_cast<size_t>(k)),
              y(static_cast<size_t>(m)), want(static_cast<size_t>(m));
          tessel::test::fill_random(a, rng);
          tessel::test::fill_random(v, rng);
          tessel::test::fill_random(y, rng);
          if (beta == 0) std::fill(y.begin(), y.end(), std::nanf(""));
          // Column-major A is the row-major reference's transposed A.
          want = y;
          tessel::test::reference_sgemm(!row, false, m, 1, k, 1, a.data(), row ? k : m, v.data(), 1,
                                        beta, want.data(), 1);
          const tessel_status st =
              row ? tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, 1, k, 1,
                                 a.data(), k, v.data(), 1, beta, y.data(), 1)
                  : tessel_sgemm(TESSEL_COL_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, 1, k, 1,
                                 a.data(), m, v.data(), k, beta, y.data(), m);
          REQUIRE(st == TESSEL_OK);
          for (int64_t i = 0; i < m; ++i)
            CHECK_MESSAGE(
                std::fabs(y[size_t(i)] - want[size_t(i)]) <= tessel::test::tolerance(k) + 1e-5f,
                m << "x" << k << (row ? " row" : " col") << " beta " << beta << " i " << i);
        }
}

}  // namespace
