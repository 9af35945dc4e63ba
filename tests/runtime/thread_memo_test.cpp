// A compiling thread's memo stays bounded however many shapes it meets (compiler.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "compiler.h"
#include "tessel/tessel.h"

using namespace tessel::runtime;

TEST_CASE("a thread's memo starts over past its bound, however many new shapes it searches") {
  // Every shape searched here, none replayed from a database (CTest runs each test case in
  // a process of its own, so this comes before the configuration is read).
  setenv("TESSEL_DB", "off", 1);
  std::mt19937 rng(3);
  std::vector<float> a(300 * 300, 1.0f), b(300 * 300, 1.0f), c(300 * 300);
  size_t largest = 0, drops = 0, before = thread_memo_entries();
  for (int i = 0; i < 40; ++i) {
    const int64_t m = 100 + rng() % 200, n = 100 + rng() % 200, k = 100 + rng() % 200;
    REQUIRE(tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1.0f,
                         a.data(), k, b.data(), n, 0.0f, c.data(), n) == TESSEL_OK);
    const size_t now = thread_memo_entries();
    if (now < before) ++drops;
    largest = std::max(largest, now);
    before = now;
  }
  // The searches filled the memo past its bound (so without one it would keep growing), and
  // it started over; it never holds more than the bound and one search's entries (50-120k
  // for these shapes; 40 of them add 3.4 million).
  CHECK(largest > kMaxThreadMemoEntries);
  CHECK(drops >= 3);
  CHECK(largest < kMaxThreadMemoEntries + 200000);
}
