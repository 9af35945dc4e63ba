// The C and C++ APIs: argument checking, BLAS quick returns, handles.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tessel/tessel.h"
#include "tessel/tessel.hpp"

namespace {

constexpr tessel_layout R = TESSEL_ROW_MAJOR, C = TESSEL_COL_MAJOR;
constexpr tessel_transpose N = TESSEL_NO_TRANS, T = TESSEL_TRANS;

struct Buffers {
  std::vector<float> a = std::vector<float>(64, 1.0f), b = std::vector<float>(64, 1.0f),
                     c = std::vector<float>(64, 0.0f);
};

void expect_invalid(tessel_status st, const char *fragment) {
  CHECK(st == TESSEL_INVALID_ARGUMENT);
  const std::string message = tessel_last_error();
  INFO("message: " << message);
  CHECK(message.find(fragment) != std::string::npos);
}

TEST_CASE("bad arguments return TESSEL_INVALID_ARGUMENT with a message") {
  Buffers x;
  const float *a = x.a.data(), *b = x.b.data();
  float *c = x.c.data();
  expect_invalid(tessel_sgemm(R, N, N, -1, 2, 2, 1, a, 2, b, 2, 0, c, 2), "m is -1");
  expect_invalid(tessel_sgemm(R, N, N, 2, -3, 2, 1, a, 2, b, 2, 0, c, 2), "n is -3");
  expect_invalid(tessel_sgemm(R, N, N, 2, 2, -1, 1, a, 2, b, 2, 0, c, 2), "k is -1");
  expect_invalid(tessel_sgemm(R, N, N, 3, 2, 4, 1, a, 3, b, 2, 0, c, 2), "lda");
  expect_invalid(tessel_sgemm(R, T, N, 3, 2, 4, 1, a, 2, b, 2, 0, c, 2), "lda");
  expect_invalid(tessel_sgemm(R, N, N, 3, 5, 4, 1, a, 4, b, 4, 0, c, 5), "ldb");
  expect_invalid(tessel_sgemm(R, N, T, 3, 5, 4, 1, a, 4, b, 3, 0, c, 5), "ldb");
  expect_invalid(tessel_sgemm(R, N, N, 3, 5, 4, 1, a, 4, b, 5, 0, c, 4), "ldc");
  expect_invalid(tessel_sgemm(C, N, N, 3, 5, 4, 1, a, 2, b, 4, 0, c, 3), "lda");
  expect_invalid(tessel_sgemm(C, N, N, 3, 5, 4, 1, a, 3, b, 4, 0, c, 2), "ldc");
  expect_invalid(tessel_sgemm(R, N, N, 0, 0, 0, 1, a, 0, b, 1, 0, c, 1), "lda");
  expect_invalid(tessel_sgemm(R, N, N, 2, 2, 2, 1, nullptr, 2, b, 2, 0, c, 2), "a is NULL");
  expect_invalid(tessel_sgemm(R, N, N, 2, 2, 2, 1, a, 2, nullptr, 2, 0, c, 2), "b is NULL");
  expect_invalid(tessel_sgemm(C, N, N, 2, 2, 2, 1, a, 2, nullptr, 2, 0, c, 2), "b is NULL");
  expect_invalid(tessel_sgemm(R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, nullptr, 2), "c is NULL");
  expect_invalid(tessel_sgemm(R, N, N, int64_t(1) << 32, 1, 1, 1, a, 1, b, 1, 0, c, 1), "2^31");
  // Leading dimensions whose rows (or columns) would not fit any address space: the kernels'
  // addresses would wrap around.
  const int64_t huge = int64_t(1) << 53, too_far = (int64_t(1) << 54) / 2 + 1;
  expect_invalid(tessel_sgemm(R, N, N, 8, 8, 8, 1, a, INT64_MAX, b, 8, 0, c, 8), "lda");
  expect_invalid(tessel_sgemm(R, N, N, 3, 8, 8, 1, a, too_far, b, 8, 0, c, 8), "rows that far");
  expect_invalid(tessel_sgemm(R, T, N, 8, 8, 3, 1, a, too_far, b, 8, 0, c, 8), "lda");
  expect_invalid(tessel_sgemm(C, N, N, 8, 8, 3, 1, a, too_far, b, 8, 0, c, 8), "columns");
  expect_invalid(tessel_sgemm(R, N, N, 8, 8, 3, 1, a, 8, b, too_far, 0, c, 8), "ldb");
  expect_invalid(tessel_sgemm(C, N, T, 8, 3, 8, 1, a, 8, b, too_far, 0, c, 8), "ldb");
  expect_invalid(tessel_sgemm(R, N, N, 3, 8, 8, 1, a, 8, b, 8, 0, c, too_far), "ldc");
  expect_invalid(tessel_sgemm(C, N, N, 8, 3, 8, 1, a, 8, b, 8, 0, c, too_far), "ldc");
  tessel_sgemm_kernel handle = nullptr;
  expect_invalid(tessel_sgemm_kernel_create(R, N, N, 3, 8, 8, too_far, 8, 8, &handle), "lda");
  CHECK(handle == nullptr);
  // Two rows that far apart still fit (a handle is made, nothing is read); so does any stride
  // of an operand the call never reads.
  REQUIRE(tessel_sgemm_kernel_create(R, N, N, 2, 8, 8, huge, 8, 8, &handle) == TESSEL_OK);
  tessel_sgemm_kernel_destroy(handle);
  CHECK(tessel_sgemm(R, N, N, 0, 0, 0, 1, a, huge, b, huge, 0, c, huge) == TESSEL_OK);
  CHECK(tessel_sgemm(R, N, N, 2, 2, 0, 1, a, INT64_MAX, b, INT64_MAX, 0, c, 2) == TESSEL_OK);
  CHECK(tessel_set_num_threads(-1) == TESSEL_INVALID_ARGUMENT);
  CHECK(tessel_set_num_threads(256) == TESSEL_INVALID_ARGUMENT);
  CHECK(tessel_get_stats(nullptr) == TESSEL_INVALID_ARGUMENT);
}

extern "C" void tessel_test_call_with_bad_enums(tessel_status out[4], const char **status_text);

TEST_CASE("enum arguments outside the enumerators are rejected, not trusted") {
  tessel_status st[4];
  const char *text = nullptr;
  tessel_test_call_with_bad_enums(st, &text);
  for (tessel_status s : st) CHECK(s == TESSEL_INVALID_ARGUMENT);
  REQUIRE(text != nullptr);
  CHECK(std::string(text) == "unknown status");
}

TEST_CASE("empty problems and alpha == 0 follow BLAS quick returns") {
  std::vector<float> c = {1, 2, 3, 4};
  // m or n == 0: nothing happens, pointers may be NULL.
  CHECK(tessel_sgemm(R, N, N, 0, 2, 2, 1, nullptr, 2, nullptr, 2, 0, nullptr, 2) == TESSEL_OK);
  CHECK(tessel_sgemm(R, N, N, 2, 0, 2, 1, nullptr, 2, nullptr, 1, 0, nullptr, 1) == TESSEL_OK);
  // k == 0: C = beta * C, A and B unread.
  CHECK(tessel_sgemm(R, N, N, 2, 2, 0, 1, nullptr, 1, nullptr, 2, 2, c.data(), 2) == TESSEL_OK);
  CHECK(c == std::vector<float>{2, 4, 6, 8});
  // alpha == 0 with beta == 0 writes zeros over NaN without reading A or B.
  std::vector<float> nan_c(4, std::nanf(""));
  CHECK(tessel_sgemm(R, N, N, 2, 2, 3, 0, nullptr, 3, nullptr, 2, 0, nan_c.data(), 2) == TESSEL_OK);
  CHECK(nan_c == std::vector<float>(4, 0.0f));
  // beta == 1 and alpha == 0: C untouched.
  CHECK(tessel_sgemm(R, N, N, 2, 2, 3, 0, nullptr, 3, nullptr, 2, 1, c.data(), 2) == TESSEL_OK);
  CHECK(c == std::vector<float>{2, 4, 6, 8});
}

TEST_CASE("every status has a description") {
  for (int s = 0; s <= 6; ++s) {
    const char *text = tessel_status_string(tessel_status(s));
    REQUIRE(text != nullptr);
    CHECK(std::strlen(text) > 0);
  }
  CHECK(std::string(tessel_status_string(TESSEL_OK)) == "success");
}

TEST_CASE("a kernel handle runs repeatedly, with any beta, and rejects bad use") {
  const int64_t m = 5, n = 7, k = 3;
  std::vector<float> a(m * k), b(k * n), c(m * n, std::nanf(""));
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 5) - 2;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 3) - 1;
  tessel_sgemm_kernel h = nullptr;
  REQUIRE(tessel_sgemm_kernel_create(R, N, N, m, n, k, k, n, n, &h) == TESSEL_OK);
  REQUIRE(h != nullptr);
  REQUIRE(tessel_sgemm_kernel_run(h, 1, a.data(), b.data(), 0, c.data()) == TESSEL_OK);
  std::vector<float> once = c;
  REQUIRE(tessel_sgemm_kernel_run(h, 1, a.data(), b.data(), 1, c.data()) == TESSEL_OK);
  for (size_t i = 0; i < c.size(); ++i) CHECK(c[i] == doctest::Approx(2 * once[i]));
  REQUIRE(tessel_sgemm_kernel_run(h, 2, a.data(), b.data(), -0.5f, c.data()) == TESSEL_OK);
  for (size_t i = 0; i < c.size(); ++i) CHECK(c[i] == doctest::Approx(once[i]));
  CHECK(tessel_sgemm_kernel_run(h, 1, nullptr, b.data(), 0, c.data()) == TESSEL_INVALID_ARGUMENT);
  CHECK(tessel_sgemm_kernel_run(nullptr, 1, a.data(), b.data(), 0, c.data()) ==
        TESSEL_INVALID_ARGUMENT);
  tessel_sgemm_kernel_destroy(h);
  tessel_sgemm_kernel_destroy(nullptr);
  CHECK(tessel_sgemm_kernel_create(R, N, N, m, n, k, k - 1, n, n, &h) == TESSEL_INVALID_ARGUMENT);
  CHECK(h == nullptr);
  CHECK(tessel_sgemm_kernel_create(R, N, N, m, n, k, k, n, n, nullptr) == TESSEL_INVALID_ARGUMENT);
}

TEST_CASE("the C++ layer throws tessel::Error carrying the status and the message") {
  tessel::GemmShape shape;
  shape.m = shape.n = shape.k = 4;
  shape.lda = 3;  // too small
  shape.ldb = shape.ldc = 4;
  std::vector<float> a(16, 1), b(16, 1), c(16, 0);
  try {
    tessel::sgemm(shape, 1, a.data(), b.data(), 0, c.data());
    FAIL("no exception");
  } catch (const tessel::Error &e) {
    CHECK(e.status() == TESSEL_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("lda") != std::string::npos);
  }
  shape.lda = 4;
  tessel::SgemmKernel kernel(shape);
  kernel(1, a.data(), b.data(), 0, c.data());
  CHECK(c == std::vector<float>(16, 4.0f));
  tessel::SgemmKernel moved = std::move(kernel);
  moved(0.5f, a.data(), b.data(), 1, c.data());
  CHECK(c == std::vector<float>(16, 6.0f));
}

}  // namespace
