// tessel called from inside an application's own parallelism: oneTBB tasks and plain
// threads, with tessel itself using two threads. It must neither deadlock nor compute wrong.
#include <doctest/doctest.h>

#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "support.h"
#include "tessel/tessel.h"

namespace {

bool one_product(int seed) {
  std::mt19937_64 rng(seed);
  const int64_t m = 96 + seed % 7, n = 80, k = 64;
  std::vector<float> a(m * k), b(k * n), c(m * n), want(m * n);
  tessel::test::fill_random(a, rng);
  tessel::test::fill_random(b, rng);
  tessel::test::reference_sgemm(false, false, m, n, k, 1, a.data(), k, b.data(), n, 0, want.data(),
                                n);
  if (tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1, a.data(), k,
                   b.data(), n, 0, c.data(), n) != TESSEL_OK)
    return false;
  for (size_t i = 0; i < c.size(); ++i)
    if (!(std::abs(c[i] - want[i]) <= tessel::test::tolerance(k))) return false;
  return true;
}

TEST_CASE("two-thread calls from inside oneTBB tasks and from many threads finish correctly") {
  REQUIRE(tessel_set_num_threads(2) == TESSEL_OK);
  std::atomic<int> failures{0};
  tbb::parallel_for(0, 16, [&](int i) {
    if (!one_product(i)) ++failures;
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i)
        if (!one_product(100 + t * 4 + i)) ++failures;
    });
  for (auto &th : threads) th.join();
  tessel_set_num_threads(0);
  CHECK(failures == 0);
}

}  // namespace
