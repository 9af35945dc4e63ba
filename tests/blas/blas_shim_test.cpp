// libtessel_blas.so: reference argument checking, BLAS edge semantics, sizes past the
// reference tester's, concurrent callers.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support.h"

extern "C" {
void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
            const float *beta, float *c, const int *ldc);
void cblas_sgemm(int layout, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);

// The test's own error handlers take precedence over the library's weak defaults, as an
// application's or the reference tester's do.
#define EXPORTED __attribute__((visibility("default")))
int g_xerbla_info = 0;
std::string g_xerbla_name;
EXPORTED void xerbla_(const char *srname, const int *info, int len) {
  g_xerbla_info = *info;
  g_xerbla_name.assign(srname, static_cast<size_t>(len));
}
// Like the reference tester's: map a row-major call's numbers back to CBLAS positions.
extern int RowMajorStrg;
EXPORTED void cblas_xerbla(int info, const char *rout, const char *, ...) {
  if (RowMajorStrg) {
    if (info == 4 || info == 5)
      info = 9 - info;
    else if (info == 9 || info == 11)
      info = 20 - info;
  }
  g_xerbla_info = info;
  g_xerbla_name = rout;
}
}

namespace {

constexpr int kRow = 101, kCol = 102, kN = 111, kT = 112, kC = 113;

int fortran_error(const char *ta, const char *tb, int m, int n, int k, int lda, int ldb, int ldc) {
  g_xerbla_info = 0;
  float a[64] = {}, b[64] = {}, c[64] = {};
  const float one = 1;
  sgemm_(ta, tb, &m, &n, &k, &one, a, &lda, b, &ldb, &one, c, &ldc);
  return g_xerbla_info;
}

int cblas_error(int layout, int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
  g_xerbla_info = 0;
  float a[64] = {}, b[64] = {}, c[64] = {};
  cblas_sgemm(layout, ta, tb, m, n, k, 1, a, lda, b, ldb, 1, c, ldc);
  return g_xerbla_info;
}

TEST_CASE("sgemm_ reports bad arguments with the reference parameter numbers") {
  CHECK(fortran_error("X", "N", 2, 2, 2, 2, 2, 2) == 1);
  CHECK(fortran_error("N", "?", 2, 2, 2, 2, 2, 2) == 2);
  CHECK(fortran_error("N", "N", -1, 2, 2, 2, 2, 2) == 3);
  CHECK(fortran_error("N", "N", 2, -1, 2, 2, 2, 2) == 4);
  CHECK(fortran_error("N", "N", 2, 2, -1, 2, 2, 2) == 5);
  CHECK(fortran_error("N", "N", 3, 2, 2, 2, 3, 3) == 8);   // lda < m
  CHECK(fortran_error("t", "N", 3, 2, 4, 3, 4, 3) == 8);   // lda < k
  CHECK(fortran_error("N", "n", 2, 2, 3, 2, 2, 2) == 10);  // ldb < k
  CHECK(fortran_error("N", "c", 2, 5, 3, 2, 4, 2) == 10);  // ldb < n
  CHECK(fortran_error("N", "N", 3, 2, 2, 3, 2, 2) == 13);  // ldc < m
  CHECK(g_xerbla_name == "SGEMM ");
  CHECK(fortran_error("C", "T", 0, 0, 0, 1, 1, 1) == 0);
}

TEST_CASE("cblas_sgemm reports bad arguments with the reference parameter numbers") {
  CHECK(cblas_error(7, kN, kN, 2, 2, 2, 2, 2, 2) == 1);
  CHECK(cblas_error(kCol, 0, kN, 2, 2, 2, 2, 2, 2) == 2);
  CHECK(cblas_error(kRow, kN, 114, 2, 2, 2, 2, 2, 2) == 3);
  CHECK(cblas_error(kCol, kN, kN, -1, 2, 2, 2, 2, 2) == 4);
  CHECK(cblas_error(kCol, kN, kN, 2, -1, 2, 2, 2, 2) == 5);
  CHECK(cblas_error(kRow, kN, kN, -1, -1, 2, 2, 2, 2) == 5);  // row-major checks n first
  CHECK(cblas_error(kCol, kN, kN, 2, 2, -1, 2, 2, 2) == 6);
  CHECK(cblas_error(kCol, kN, kN, 3, 2, 2, 2, 2, 3) == 9);
  CHECK(cblas_error(kRow, kN, kN, 3, 2, 4, 3, 2, 2) == 9);   // lda < k
  CHECK(cblas_error(kRow, kN, kN, 3, 5, 4, 3, 4, 5) == 11);  // both bad: ldb reported first
  CHECK(cblas_error(kCol, kN, kT, 3, 5, 4, 3, 4, 3) == 11);  // ldb < n
  CHECK(cblas_error(kRow, kT, kC, 3, 5, 4, 3, 4, 4) == 14);  // ldc < n
  CHECK(g_xerbla_name == "cblas_sgemm");
}

TEST_CASE("beta == 0 never reads C, alpha == 0 never reads A or B") {
  const int m = 7, n = 9, k = 5;
  std::vector<float> a(m * k, 1), b(k * n, 1), c(m * n, std::nanf(""));
  const float one = 1, zero = 0;
  sgemm_("N", "N", &m, &n, &k, &one, a.data(), &m, b.data(), &k, &zero, c.data(), &m);
  for (float v : c) CHECK(v == 5.0f);
  std::vector<float> nan_a(m * k, std::nanf("")), nan_b(k * n, std::nanf(""));
  const float half = 0.5f;
  sgemm_("N", "N", &m, &n, &k, &zero, nan_a.data(), &m, nan_b.data(), &k, &half, c.data(), &m);
  for (float v : c) CHECK(v == 2.5f);
  cblas_sgemm(kRow, kN, kN, m, n, k, 0, nan_a.data(), k, nan_b.data(), n, 0, c.data(), n);
  for (float v : c) CHECK(v == 0.0f);
  // alpha == 0 and beta == 1 is a quick return: C stays bit for bit.
  std::fill(c.begin(), c.end(), std::nanf(""));
  cblas_sgemm(kCol, kN, kN, m, n, k, 0, nan_a.data(), m, nan_b.data(), k, 1, c.data(), m);
  for (float v : c) CHECK(std::isnan(v));
}

TEST_CASE("sizes past the reference tester's, every layout and transpose") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 24; ++trial) {
    const int m = 66 + int(rng() % 90), n = 66 + int(rng() % 90), k = 66 + int(rng() % 90);
    const bool row = trial & 1, ta = trial & 2, tb = trial & 4;
    const float alpha = trial % 3 ? 1.0f : -0.7f, beta = trial % 5 ? 0.0f : 1.3f;
    // Row-major view of each stored matrix: rows x cols with ld >= cols.
    const int a_rows = (row != ta) ? m : k, a_cols = (row != ta) ? k : m;
    const int b_rows = (row != tb) ? k : n, b_cols = (row != tb) ? n : k;
    const int c_rows = row ? m : n, c_cols = row ? n : m;
    const int lda = a_cols + 3, ldb = b_cols + 1, ldc = c_cols + 2;
    std::vector<float> a(size_t(a_rows) * lda), b(size_t(b_rows) * ldb), c(size_t(c_rows) * ldc);
    tessel::test::fill_random(a, rng);
    tessel::test::fill_random(b, rng);
    tessel::test::fill_random(c, rng);
    std::vector<float> want = c;
    if (row) {
      tessel::test::reference_sgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
                                    want.data(), ldc);
      cblas_sgemm(kRow, ta ? kT : kN, tb ? kT : kN, m, n, k, alpha, a.data(), lda, b.data(), ldb,
                  beta, c.data(), ldc);
    } else {
      tessel::test::reference_sgemm(tb, ta, n, m, k, alpha, b.data(), ldb, a.data(), lda, beta,
                                    want.data(), ldc);
      const char *t[2] = {"N", "T"};
      sgemm_(t[ta], t[tb], &m, &n, &k, &alpha, a.data(), &lda, b.data(), &ldb, &beta, c.data(),
             &ldc);
    }
    for (int i = 0; i < c_rows; ++i)
      for (int j = 0; j < c_cols; ++j)
        REQUIRE(std::abs(c[size_t(i) * ldc + j] - want[size_t(i) * ldc + j]) <=
                tessel::test::tolerance(k));
  }
}

TEST_CASE("concurrent callers of sgemm_ get correct results") {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 6; ++i) {
        const int m = 20 + (t + i) % 5, n = 30 + i, k = 17;
        std::vector<float> a(m * k), b(k * n), c(m * n), want(m * n);
        tessel::test::fill_random(a, rng);
        tessel::test::fill_random(b, rng);
        // Column-major C = A B is row-major C^T = B^T A^T on the same memory.
        tessel::test::reference_sgemm(false, false, n, m, k, 1, b.data(), k, a.data(), m, 0,
                                      want.data(), m);
        const float one = 1, zero = 0;
        sgemm_("N", "N", &m, &n, &k, &one, a.data(), &m, b.data(), &k, &zero, c.data(), &m);
        for (int x = 0; x < m * n; ++x)
          if (!(std::abs(c[x] - want[x]) <= tessel::test::tolerance(k))) {
            ++failures;
            break;
          }
      }
    });
  for (auto &th : threads) th.join();
  CHECK(failures == 0);
}

}  // namespace
