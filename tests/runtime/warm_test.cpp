// tessel_warm: kernels prepared ahead of time are lookups afterwards; bad lists fail whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "support.h"
#include "tessel/tessel.h"
#include "tessel/tessel.hpp"

namespace {

tessel_stats stats() {
  tessel_stats s{};
  REQUIRE(tessel_get_stats(&s) == TESSEL_OK);
  return s;
}

tessel_sgemm_shape shape(int64_t m, int64_t k, int64_t n, tessel_transpose ta = TESSEL_NO_TRANS,
                         float beta = 0) {
  return {TESSEL_ROW_MAJOR, ta, TESSEL_NO_TRANS, m, n, k, 0, 0, 0, beta};
}

TEST_CASE("a bad shape fails the whole warm before any work") {
  const tessel_stats before = stats();
  const tessel_sgemm_shape list[] = {shape(23, 19, 29), shape(5, -1, 7)};
  CHECK(tessel_warm(list, 2, nullptr, nullptr) == TESSEL_INVALID_ARGUMENT);
  CHECK(std::string(tessel_last_error()).find("shape 1") != std::string::npos);
  tessel_sgemm_shape bad_enum = shape(3, 3, 3);
  bad_enum.trans_b = static_cast<tessel_transpose>(42);
  CHECK(tessel_warm(&bad_enum, 1, nullptr, nullptr) == TESSEL_INVALID_ARGUMENT);
  tessel_sgemm_shape tight_ld = shape(4, 8, 4);
  tight_ld.lda = 7;  // below k
  CHECK(tessel_warm(&tight_ld, 1, nullptr, nullptr) == TESSEL_INVALID_ARGUMENT);
  CHECK(tessel_warm(nullptr, 3, nullptr, nullptr) == TESSEL_INVALID_ARGUMENT);
  CHECK(tessel_warm(nullptr, 0, nullptr, nullptr) == TESSEL_OK);
  CHECK(stats().misses == before.misses);
}

struct Seen {
  std::mutex mutex;
  std::vector<size_t> done, index;
};

TEST_CASE("warmed shapes are registry hits afterwards, and progress hears of each") {
  REQUIRE(tessel_set_num_threads(1) == TESSEL_OK);
  const std::vector<tessel_sgemm_shape> list = {shape(31, 17, 45), shape(9, 64, 40, TESSEL_TRANS),
                                                shape(31, 17, 45, TESSEL_NO_TRANS, 1.0f),
                                                shape(0, 5, 5), shape(64, 33, 7)};
  Seen seen;
  auto progress = [](size_t done, size_t total, size_t index, tessel_status st, void *user) {
    CHECK(total == 5);
    CHECK(st == TESSEL_OK);
    auto &s = *static_cast<Seen *>(user);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.done.push_back(done);
    s.index.push_back(index);
  };
  REQUIRE(tessel_warm(list.data(), list.size(), progress, &seen) == TESSEL_OK);
  CHECK(seen.done == std::vector<size_t>{1, 2, 3, 4, 5});
  std::sort(seen.index.begin(), seen.index.end());
  CHECK(seen.index == std::vector<size_t>{0, 1, 2, 3, 4});

  const tessel_stats before = stats();
  std::mt19937_64 rng(3);
  for (const tessel_sgemm_shape &s : list) {
    if (!s.m) continue;
    const bool ta = s.trans_a == TESSEL_TRANS;
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n), ref(s.m * s.n);
    tessel::test::fill_random(a, rng);
    tessel::test::fill_random(b, rng);
    tessel::test::fill_random(c, rng);
    ref = c;
    REQUIRE(tessel_sgemm(s.layout, s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a.data(),
                         ta ? s.m : s.k, b.data(), s.n, s.beta, c.data(), s.n) == TESSEL_OK);
    tessel::test::reference_sgemm(ta, false, s.m, s.n, s.k, 1.0f, a.data(), ta ? s.m : s.k,
                                  b.data(), s.n, s.beta, ref.data(), s.n);
    for (size_t i = 0; i < c.size(); ++i)
      REQUIRE(std::abs(c[i] - ref[i]) <= tessel::test::tolerance(s.k));
  }
  const tessel_stats after = stats();
  CHECK(after.misses == before.misses);
  CHECK(after.hits == before.hits + 4);
  tessel_set_num_threads(0);
}

TEST_CASE("tessel::warm reports progress and throws on a bad shape") {
  REQUIRE(tessel_set_num_threads(1) == TESSEL_OK);
  std::vector<tessel::GemmShape> shapes(2);
  shapes[0].m = 13, shapes[0].n = 11, shapes[0].k = 7;
  shapes[1].m = 2, shapes[1].n = 300, shapes[1].k = 5;
  size_t calls = 0;
  tessel::warm(shapes, 0.0f, [&](size_t done, size_t total) {
    ++calls;
    CHECK(done <= total);
  });
  CHECK(calls == 2);
  shapes[1].k = -5;
  CHECK_THROWS_AS(tessel::warm(shapes), tessel::Error);
  tessel_set_num_threads(0);
}

}  // namespace
