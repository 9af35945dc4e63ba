// tessel_sgemm's repeat path (capi.cpp): a call that repeats the shape arguments of one of
// the thread's recent calls skips the shape checks and the kernel lookup. Everything that may
// still differ between two such calls (operands, alpha, beta, leading dimensions, the thread
// count, a bad argument) is varied here between otherwise identical calls.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support.h"
#include "tessel/tessel.h"

namespace {

constexpr float kCanary = -12345.5f;

struct Shape {
  bool col = false, ta = false, tb = false;
  int64_t m = 4, n = 4, k = 4;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // leading dimensions beyond the tightest
};

// A call's operands, stored as in sgemm_differential_test (element (i, j) of a buffer at
// i * ld + j, in the row-major view), with canaries in C's row padding.
struct Operands {
  int64_t a_rows, a_cols, b_rows, b_cols, c_rows, c_cols, lda, ldb, ldc;
  std::vector<float> a, b, c;

  Operands(const Shape &s, uint64_t seed) {
    a_rows = s.col != s.ta ? s.k : s.m, a_cols = s.col != s.ta ? s.m : s.k;
    b_rows = s.col != s.tb ? s.n : s.k, b_cols = s.col != s.tb ? s.k : s.n;
    c_rows = s.col ? s.n : s.m, c_cols = s.col ? s.m : s.n;
    lda = a_cols + s.pad_a, ldb = b_cols + s.pad_b, ldc = c_cols + s.pad_c;
    std::mt19937_64 rng(seed);
    a.resize(a_rows * lda);
    b.resize(b_rows * ldb);
    c.resize(c_rows * ldc);
    tessel::test::fill_random(a, rng);
    tessel::test::fill_random(b, rng);
    tessel::test::fill_random(c, rng);
    for (int64_t i = 0; i < c_rows; ++i)
      for (int64_t j = c_cols; j < ldc; ++j) c[i * ldc + j] = kCanary;
  }
  void fill_c(float v) {
    for (int64_t i = 0; i < c_rows; ++i)
      for (int64_t j = 0; j < c_cols; ++j) c[i * ldc + j] = v;
  }
};

tessel_status call(const Shape &s, float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc) {
  return tessel_sgemm(s.col ? TESSEL_COL_MAJOR : TESSEL_ROW_MAJOR,
                      s.ta ? TESSEL_TRANS : TESSEL_NO_TRANS, s.tb ? TESSEL_TRANS : TESSEL_NO_TRANS,
                      s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Runs the call on `x` (through `handle` when one is given, made for `s` and x's leading
// dimensions) and checks C against the reference and the padding untouched.
void check(const Shape &s, Operands &x, float alpha, float beta,
           tessel_sgemm_kernel handle = nullptr) {
  INFO((s.col ? "col" : "row") << " m=" << s.m << " n=" << s.n << " k=" << s.k << " ta=" << s.ta
                               << " tb=" << s.tb << " lda=" << x.lda << " ldb=" << x.ldb
                               << " ldc=" << x.ldc << " alpha=" << alpha << " beta=" << beta);
  std::vector<float> want = x.c;
  // A column-major call is the transposed row-major call.
  if (s.col) {
    tessel::test::reference_sgemm(s.tb, s.ta, s.n, s.m, s.k, alpha, x.b.data(), x.ldb, x.a.data(),
                                  x.lda, beta, want.data(), x.ldc);
  } else {
    tessel::test::reference_sgemm(s.ta, s.tb, s.m, s.n, s.k, alpha, x.a.data(), x.lda, x.b.data(),
                                  x.ldb, beta, want.data(), x.ldc);
  }
  REQUIRE((handle ? tessel_sgemm_kernel_run(handle, alpha, x.a.data(), x.b.data(), beta, x.c.data())
                  : call(s, alpha, x.a.data(), x.lda, x.b.data(), x.ldb, beta, x.c.data(),
                         x.ldc)) == TESSEL_OK);
  const float tol = 4 * tessel::test::tolerance(s.k);
  for (int64_t i = 0; i < x.c_rows; ++i)
    for (int64_t j = 0; j < x.ldc; ++j) {
      const float got = x.c[i * x.ldc + j];
      if (j >= x.c_cols) {
        REQUIRE(got == kCanary);
      } else if (!(std::abs(got - want[i * x.ldc + j]) <= tol)) {
        FAIL("C(" << i << "," << j << ") = " << got << ", expected " << want[i * x.ldc + j]);
      }
    }
}

void expect_invalid(tessel_status st, const char *fragment) {
  CHECK(st == TESSEL_INVALID_ARGUMENT);
  const std::string message = tessel_last_error();
  INFO("message: " << message);
  CHECK(message.find(fragment) != std::string::npos);
}

tessel_stats stats() {
  tessel_stats s{};
  REQUIRE(tessel_get_stats(&s) == TESSEL_OK);
  return s;
}

struct OneThread {
  OneThread() { REQUIRE(tessel_set_num_threads(1) == TESSEL_OK); }
  ~OneThread() { tessel_set_num_threads(0); }
};

std::vector<Shape> shapes() {
  std::vector<Shape> list(6);
  list[1].m = list[1].n = list[1].k = 8;
  list[2].col = true, list[2].m = 5, list[2].n = 7, list[2].k = 3;
  list[3].ta = true, list[3].m = 6, list[3].n = 3, list[3].k = 9, list[3].pad_a = 2;
  list[4].col = true, list[4].tb = true, list[4].m = 9, list[4].n = 4, list[4].k = 6;
  list[4].pad_b = 1, list[4].pad_c = 3;
  list[5].ta = list[5].tb = true, list[5].m = 3, list[5].n = 10, list[5].k = 5, list[5].pad_c = 2;
  return list;
}

TEST_CASE("repeats with other operands, alpha and beta equal the reference") {
  OneThread one;
  for (const Shape &s : shapes()) {
    Operands x(s, 1), y(s, 2);
    // Alternating buffers: a repeat must run on this call's pointers, not the last ones.
    for (int round = 0; round < 2; ++round) {
      check(s, x, 1, 0);
      check(s, y, 1, 0);
      check(s, x, 2, 1);
      check(s, y, -1, 0.5f);
      check(s, x, 0.5f, -2);
      check(s, y, 1, 1);
      check(s, x, 1, 0);
      check(s, y, -0.0f, 0.5f);  // alpha == -0: C = beta * C only
      check(s, x, 1, -0.0f);     // beta == -0 overwrites like 0
    }
  }
}

TEST_CASE("a kernel handle's repeats equal the reference for each beta and thread count") {
  // A handle runs the kernel it ran last for its kind of beta (0 or not) and thread count
  // without a lookup (capi.cpp): alternating kinds, thread counts and operands must each
  // run the right kernel on this run's pointers, and count as hits.
  for (const Shape &s : shapes()) {
    Operands x(s, 3), y(s, 4);
    tessel_sgemm_kernel h = nullptr;
    REQUIRE(tessel_sgemm_kernel_create(s.col ? TESSEL_COL_MAJOR : TESSEL_ROW_MAJOR,
                                       s.ta ? TESSEL_TRANS : TESSEL_NO_TRANS,
                                       s.tb ? TESSEL_TRANS : TESSEL_NO_TRANS, s.m, s.n, s.k, x.lda,
                                       x.ldb, x.ldc, &h) == TESSEL_OK);
    const int64_t hits = stats().hits;
    for (int threads : {1, 2, 1}) {
      REQUIRE(tessel_set_num_threads(threads) == TESSEL_OK);
      x.fill_c(std::nanf(""));
      check(s, x, 1, 0, h);
      y.fill_c(std::nanf(""));
      check(s, y, 2, 0, h);
      check(s, x, 1, 1, h);
      check(s, y, -1, 0.5f, h);
      check(s, x, 0.5f, -2, h);
    }
    // Of the fifteen runs, the first of each kind and thread count looked its kernel up.
    CHECK(stats().hits - hits >= 9);
    tessel_sgemm_kernel_destroy(h);
  }
  tessel_set_num_threads(0);
}

TEST_CASE("beta == 0 never reads C, alpha == 0 never reads A or B, on repeats as on first calls") {
  OneThread one;
  for (const Shape &s : shapes()) {
    Operands x(s, 3);
    check(s, x, 1, 0);
    for (int i = 0; i < 3; ++i) {
      x.fill_c(std::nanf(""));
      check(s, x, 1, 0);  // no NaN may survive
    }
    // The shape is cached; alpha == 0 must still not touch A or B (NULL is legal then, and
    // NaN in them must not reach C).
    x.fill_c(2);
    REQUIRE(call(s, 0, nullptr, x.lda, nullptr, x.ldb, 0.5f, x.c.data(), x.ldc) == TESSEL_OK);
    for (int64_t i = 0; i < x.c_rows; ++i)
      for (int64_t j = 0; j < x.c_cols; ++j) REQUIRE(x.c[i * x.ldc + j] == 1.0f);
    check(s, x, 1, 0.5f);
    const std::vector<float> a = x.a, b = x.b;
    std::fill(x.a.begin(), x.a.end(), std::nanf(""));
    std::fill(x.b.begin(), x.b.end(), std::nanf(""));
    x.fill_c(2);
    REQUIRE(call(s, 0, x.a.data(), x.lda, x.b.data(), x.ldb, 0.5f, x.c.data(), x.ldc) == TESSEL_OK);
    for (int64_t i = 0; i < x.c_rows; ++i)
      for (int64_t j = 0; j < x.c_cols; ++j) REQUIRE(x.c[i * x.ldc + j] == 1.0f);
    x.a = a, x.b = b;
    x.fill_c(std::nanf(""));
    REQUIRE(call(s, 0, nullptr, x.lda, nullptr, x.ldb, 0, x.c.data(), x.ldc) == TESSEL_OK);
    for (int64_t i = 0; i < x.c_rows; ++i)
      for (int64_t j = 0; j < x.c_cols; ++j) REQUIRE(x.c[i * x.ldc + j] == 0.0f);
    check(s, x, 1, 1);
  }
}

TEST_CASE("a repeat with other leading dimensions runs with those") {
  OneThread one;
  Shape s;
  s.m = 7, s.n = 5, s.k = 6;
  for (int round = 0; round < 2; ++round)
    for (int64_t pad : {0, 3, 1}) {
      Shape p = s;
      p.pad_a = pad, p.pad_b = 2 - pad % 2, p.pad_c = pad;
      Operands x(p, uint64_t(10 + pad));
      check(p, x, 1, 0);
      check(p, x, 1, 0.5f);
    }
}

TEST_CASE("bad arguments right after a cached call fail with their message") {
  OneThread one;
  // Each bad call repeats the cached call's arguments but for the bad one.
  for (const Shape &s : shapes()) {
    Operands x(s, 4);
    const float *a = x.a.data(), *b = x.b.data();
    float *c = x.c.data();
    check(s, x, 1, 0);
    check(s, x, 1, 0);
    expect_invalid(call(s, 1, nullptr, x.lda, b, x.ldb, 0, c, x.ldc), "a is NULL");
    check(s, x, 1, 0);
    expect_invalid(call(s, 1, a, x.lda, nullptr, x.ldb, 0, c, x.ldc), "b is NULL");
    check(s, x, 1, 0);
    expect_invalid(call(s, 1, a, x.lda, b, x.ldb, 0, nullptr, x.ldc), "c is NULL");
    check(s, x, 1, 1);
    expect_invalid(call(s, 1, a, x.lda, b, x.ldb, 1, nullptr, x.ldc), "c is NULL");
    check(s, x, 1, 1);
    expect_invalid(call(s, 1, nullptr, x.lda, b, x.ldb, 1, c, x.ldc), "a is NULL");
    check(s, x, 1, 0);
    // The tightest leading dimensions of each shape, less one.
    expect_invalid(call(s, 1, a, x.lda - s.pad_a - 1, b, x.ldb, 0, c, x.ldc), "lda");
    check(s, x, 1, 0);
    expect_invalid(call(s, 1, a, x.lda, b, x.ldb - s.pad_b - 1, 0, c, x.ldc), "ldb");
    check(s, x, 1, 0);
    expect_invalid(call(s, 1, a, x.lda, b, x.ldb, 0, c, x.ldc - s.pad_c - 1), "ldc");
    check(s, x, 1, 0);
    expect_invalid(call(s, 1, a, -x.lda, b, x.ldb, 0, c, x.ldc), "lda");
    check(s, x, 1, 0);
  }
}

TEST_CASE("enum values beyond the enumerators never match a cached call") {
  OneThread one;
  Shape s;
  Operands x(s, 5);
  check(s, x, 1, 0);
  // The cache keeps each enum in 16 bits: values equal to a valid one in their low bits must
  // still be rejected.
  const int layout = TESSEL_ROW_MAJOR + 65536, trans = TESSEL_NO_TRANS + 65536;
  tessel_layout bad_layout;
  tessel_transpose bad_trans;
  static_assert(sizeof bad_layout == sizeof layout && sizeof bad_trans == sizeof trans);
  std::memcpy(&bad_layout, &layout, sizeof layout);
  std::memcpy(&bad_trans, &trans, sizeof trans);
  expect_invalid(tessel_sgemm(bad_layout, TESSEL_NO_TRANS, TESSEL_NO_TRANS, 4, 4, 4, 1, x.a.data(),
                              4, x.b.data(), 4, 0, x.c.data(), 4),
                 "layout");
  expect_invalid(tessel_sgemm(TESSEL_ROW_MAJOR, bad_trans, TESSEL_NO_TRANS, 4, 4, 4, 1, x.a.data(),
                              4, x.b.data(), 4, 0, x.c.data(), 4),
                 "trans_a");
  expect_invalid(tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, bad_trans, 4, 4, 4, 1, x.a.data(),
                              4, x.b.data(), 4, 0, x.c.data(), 4),
                 "trans_b");
  check(s, x, 1, 0);
}

TEST_CASE("a thread count change takes effect at the next identical call") {
  Shape s;  // a shape no other test uses, so its kernels are new to this process
  s.m = 11, s.n = 13, s.k = 7, s.pad_c = 5;
  Operands x(s, 6);
  REQUIRE(tessel_set_num_threads(1) == TESSEL_OK);
  check(s, x, 1, 0);
  const tessel_stats one = stats();
  check(s, x, 1, 0);
  CHECK(stats().misses == one.misses);
  CHECK(stats().hits == one.hits + 1);
  // The thread count is part of the kernel key: the same call now needs another kernel.
  REQUIRE(tessel_set_num_threads(2) == TESSEL_OK);
  CHECK(tessel_get_num_threads() == 2);
  check(s, x, 1, 0);
  const tessel_stats two = stats();
  CHECK(two.misses == one.misses + 1);
  check(s, x, 1, 0);
  CHECK(stats().misses == two.misses);
  REQUIRE(tessel_set_num_threads(1) == TESSEL_OK);
  check(s, x, 1, 0);
  CHECK(stats().misses == two.misses);
  tessel_set_num_threads(0);
  check(s, x, 1, 0);
}

TEST_CASE("repeats count as registry hits") {
  OneThread one;
  Shape s;
  s.m = 3, s.n = 3, s.k = 3;
  Operands x(s, 7);
  check(s, x, 1, 0);
  check(s, x, 1, 1);  // both kernels exist from here on
  const tessel_stats before = stats();
  for (int i = 0; i < 10; ++i) check(s, x, 1, i % 2 ? 0.0f : 1.0f);
  const tessel_stats after = stats();
  CHECK(after.hits == before.hits + 10);
  CHECK(after.misses == before.misses);
}

TEST_CASE("more shapes in turn than the thread remembers stay correct") {
  OneThread one;
  // Twelve shapes, more than the eight kernels a thread keeps: cached calls whose kernel the
  // thread lets go must be forgotten with it.
  std::vector<Shape> list;
  for (int i = 0; i < 12; ++i) {
    Shape s;
    s.col = i % 3 == 0;
    s.m = 2 + i, s.n = 3 + (i * 5) % 7, s.k = 1 + (i * 3) % 5;
    list.push_back(s);
  }
  std::vector<Operands> operands;
  for (size_t i = 0; i < list.size(); ++i) operands.emplace_back(list[i], 100 + i);
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < list.size(); ++i) check(list[i], operands[i], 1, round == 1 ? 1 : 0);
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < 3; ++i) check(list[i], operands[i], 1, 0.5f);
}

TEST_CASE("a kernel handle between repeats leaves both correct") {
  OneThread one;
  Shape s;
  s.m = 6, s.n = 6, s.k = 6;
  Operands x(s, 8), y(s, 9);
  check(s, x, 1, 0);
  tessel_sgemm_kernel h = nullptr;
  REQUIRE(tessel_sgemm_kernel_create(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, 6, 6, 6, 6,
                                     6, 6, &h) == TESSEL_OK);
  std::vector<float> want = y.c;
  tessel::test::reference_sgemm(false, false, 6, 6, 6, 1, y.a.data(), 6, y.b.data(), 6, 0.5f,
                                want.data(), 6);
  REQUIRE(tessel_sgemm_kernel_run(h, 1, y.a.data(), y.b.data(), 0.5f, y.c.data()) == TESSEL_OK);
  for (size_t i = 0; i < want.size(); ++i)
    REQUIRE(std::abs(y.c[i] - want[i]) <= 4 * tessel::test::tolerance(6));
  check(s, x, 1, 0);
  tessel_sgemm_kernel_destroy(h);
  check(s, x, 1, 0.5f);
}

}  // namespace
