// tessel_sgemm against the naive reference on seeded random problems: sizes 1..300 (1, primes,
// multiples of 8 +- 1), both layouts, all transposes, non-tight leading dimensions, alpha and
// beta in {0, 1, -1, 0.5}, NaN in C when beta = 0, guard canaries around C. Large problems
// too: a few rows against operands past L2 or in main memory, on one thread or two, where the
// plans stream, pack ahead, interleave and split k as no small problem's do.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
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

// Up to `cap`, near powers of two and the benchmark's sizes more often than not.
int64_t pick_large_size(std::mt19937_64 &rng, int64_t cap) {
  static const int64_t special[] = {511,  512,  513,  767,  768,  769,   1000,
                                    1023, 1024, 1025, 2047, 2048, 2049,  3071,
                                    3072, 4095, 4096, 4097, 8192, 11008, 16384};
  const int64_t v = rng() % 2 ? special[rng() % std::size(special)] : 1 + int64_t(rng() % cap);
  return std::min(v, cap);
}

enum class Scale { Small, Large };

// A seed as regression_seeds.txt names it: "17" for a small case, "large 17" for a large one.
constexpr std::string_view kLargePrefix = "large ";
std::string seed_name(uint64_t seed, Scale scale) {
  return (scale == Scale::Large ? std::string(kLargePrefix) : std::string()) + std::to_string(seed);
}

// A few rows (1..64) by two large dimensions, at most kLargeVolume multiply-adds: with up to
// four rows, B is often 16-300 MiB, past any L3 share. Otherwise m and n trade places half the
// time.
constexpr int64_t kLargeVolume = 80'000'000;
void pick_large_shape(std::mt19937_64 &rng, int64_t *m, int64_t *n, int64_t *k) {
  static const int64_t rows[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 24, 31, 32, 33, 48};
  int64_t cap = 4200;
  const uint64_t kind = rng() % 4;
  switch (kind) {
    case 0:  // matrix-vector and the thinnest products: B streamed from main memory
      *m = 1 + int64_t(rng() % 4);
      cap = 17000;
      break;
    case 1:
      *m = 1 + int64_t(rng() % 64);
      break;
    default:
      *m = rows[rng() % std::size(rows)];
  }
  *n = pick_large_size(rng, cap);
  *k = pick_large_size(rng, cap);
  while (*m * *n * *k > kLargeVolume) {
    int64_t &halved = rng() % 2 ? *n : *k;
    halved = std::max<int64_t>(halved / 2, 1);
  }
  if (kind != 0 && rng() % 2) std::swap(*m, *n);
}

// Returns "" on success, else a description of the first failure.
std::string run_case(uint64_t seed, Scale scale = Scale::Small) {
  std::mt19937_64 rng(seed);
  int64_t m, n, k;
  int threads = 0;  // the default
  if (scale == Scale::Small) {
    // Keep the volume moderate so two thousand cases stay quick: one big dimension at most.
    m = pick_size(rng, 300), n = pick_size(rng, 300), k = pick_size(rng, 300);
    if (m * n * k > 2'000'000) k = std::max<int64_t>(1, 2'000'000 / (m * n));
  } else {
    pick_large_shape(rng, &m, &n, &k);
    threads = 1 + int(rng() % 2);
  }
  // Large problems are mostly the plain row-major product, whose plans are the most varied
  // (transposes are copied or read across; column-major is the transposed row-major call).
  auto coin = [&] { return scale == Scale::Small ? (rng() & 1) != 0 : rng() % 4 == 0; };
  const bool col = coin(), ta = coin(), tb = coin();
  static const float scalars[] = {0.0f, 1.0f, -1.0f, 0.5f};
  const float alpha = scalars[rng() % 4], beta = scalars[rng() % 4];
  const int64_t a_rows = (col != ta) ? k : m, a_cols = (col != ta) ? m : k;  // stored shape
  const int64_t b_rows = (col != tb) ? n : k, b_cols = (col != tb) ? k : n;
  const int64_t c_rows = col ? n : m, c_cols = col ? m : n;
  // In the stored (row-major-view) sense: element (i, j) of a buffer at i * ld + j.
  // (large rows padded one time in four: padding moves where rows start among the L1 sets, and
  // with it the plan, while most callers pass tight rows)
  auto padding = [&] { return scale == Scale::Small || rng() % 4 == 0 ? int64_t(rng() % 4) : 0; };
  const int64_t lda = a_cols + padding(), ldb = b_cols + padding(), ldc = c_cols + padding();
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
  REQUIRE(tessel_set_num_threads(threads) == TESSEL_OK);
  const tessel_status st =
      tessel_sgemm(col ? TESSEL_COL_MAJOR : TESSEL_ROW_MAJOR, ta ? TESSEL_TRANS : TESSEL_NO_TRANS,
                   tb ? TESSEL_TRANS : TESSEL_NO_TRANS, m, n, k, alpha, a.data(), lda, b.data(),
                   ldb, beta, c0, ldc);
  REQUIRE(tessel_set_num_threads(0) == TESSEL_OK);
  std::ostringstream what;
  what << "seed " << seed_name(seed, scale)
       << (threads ? " threads=" + std::to_string(threads) : "") << ": " << (col ? "col" : "row")
       << " m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb
       << " alpha=" << alpha << " beta=" << beta << " lda=" << lda << " ldb=" << ldb
       << " ldc=" << ldc << ": ";
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
    const bool large = line.rfind(kLargePrefix, 0) == 0;
    const std::string failure = run_case(std::stoull(line.substr(large ? kLargePrefix.size() : 0)),
                                         large ? Scale::Large : Scale::Small);
    CHECK_MESSAGE(failure.empty(), failure);
    ++count;
  }
  MESSAGE(count << " regression seeds");
}

// 2000 cases in four parts, so CTest can run them in parallel.
void run_seeds(uint64_t first, uint64_t last, Scale scale = Scale::Small) {
  int failures = 0;
  for (uint64_t seed = first; seed <= last; ++seed) {
    const std::string failure = run_case(seed, scale);
    if (failure.empty()) continue;
    FAIL_CHECK(failure);
    std::fprintf(stderr, "failing seed %s (add it to tests/runtime/regression_seeds.txt)\n",
                 seed_name(seed, scale).c_str());
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

TEST_CASE("seeded random large problems 1-30 equal the reference") {
  run_seeds(1, 30, Scale::Large);
}
TEST_CASE("seeded random large problems 31-60 equal the reference") {
  run_seeds(31, 60, Scale::Large);
}
TEST_CASE("seeded random large problems 61-90 equal the reference") {
  run_seeds(61, 90, Scale::Large);
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
