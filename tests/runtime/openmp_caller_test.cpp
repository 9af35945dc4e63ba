// tessel called from inside an OpenMP parallel region of the application (libgomp): every
// OpenMP thread's call joins tessel's own oneTBB arena, so the region neither deadlocks nor
// multiplies threads, and every result is right.
#include <doctest/doctest.h>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <vector>

#include "support.h"
#include "tessel/tessel.h"

namespace {

TEST_CASE("calls from an OpenMP parallel region, with tessel on two threads, are correct") {
  REQUIRE(tessel_set_num_threads(2) == TESSEL_OK);
  std::atomic<int> wrong{0}, calls{0};
#pragma omp parallel num_threads(4)
  {
    std::mt19937_64 rng(omp_get_thread_num());
    for (int i = 0; i < 6; ++i) {
      const int64_t m = 90 + 3 * i, n = 72, k = 40 + omp_get_thread_num();
      std::vector<float> a(m * k), b(k * n), c(m * n), want(m * n);
      tessel::test::fill_random(a, rng);
      tessel::test::fill_random(b, rng);
      tessel::test::reference_sgemm(false, false, m, n, k, 1, a.data(), k, b.data(), n, 0,
                                    want.data(), n);
      if (tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1, a.data(), k,
                       b.data(), n, 0, c.data(), n) != TESSEL_OK)
        ++wrong;
      for (size_t j = 0; j < c.size(); ++j)
        if (!(std::abs(c[j] - want[j]) <= tessel::test::tolerance(k))) {
          ++wrong;
          break;
        }
      ++calls;
    }
  }
  CHECK(calls.load() == 24);
  CHECK(wrong.load() == 0);
  tessel_set_num_threads(0);
}

}  // namespace
