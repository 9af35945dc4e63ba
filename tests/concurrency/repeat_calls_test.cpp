// Repeated calls from several threads at once (each thread caches its own recent calls and
// counts its own hits), while another thread changes the thread count and reads the stats.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "support.h"
#include "tessel/tessel.h"

namespace {

TEST_CASE("threads repeating calls get their own results while the thread count changes") {
  constexpr int kThreads = 4, kCalls = 300;
  constexpr int64_t m = 6, n = 5, k = 7;
  tessel_stats before{};
  REQUIRE(tessel_get_stats(&before) == TESSEL_OK);
  std::atomic<int> failures{0}, running{kThreads};
  std::vector<std::string> first_failure(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(500 + t);
      std::vector<float> a(m * k), b(k * n), c(m * n), want(m * n);
      tessel::test::fill_random(a, rng);
      tessel::test::fill_random(b, rng);
      for (int i = 0; i < kCalls; ++i) {
        const float beta = i % 3 == 0 ? 0.0f : 0.5f;
        tessel::test::fill_random(c, rng);
        want = c;
        tessel::test::reference_sgemm(false, false, m, n, k, 1, a.data(), k, b.data(), n, beta,
                                      want.data(), n);
        const tessel_status st = tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m,
                                              n, k, 1, a.data(), k, b.data(), n, beta, c.data(), n);
        bool ok = st == TESSEL_OK;
        for (size_t x = 0; ok && x < c.size(); ++x)
          ok = std::abs(c[x] - want[x]) <= tessel::test::tolerance(k);
        if (!ok && failures.fetch_add(1) == 0)
          first_failure[t] = "thread " + std::to_string(t) + " call " + std::to_string(i);
      }
      running.fetch_sub(1);
    });
  for (int i = 0; running.load() > 0; ++i) {
    tessel_set_num_threads(1 + i % 2);
    tessel_stats s{};
    REQUIRE(tessel_get_stats(&s) == TESSEL_OK);
    CHECK(s.hits >= before.hits);
    std::this_thread::yield();
  }
  for (std::thread &th : threads) th.join();
  tessel_set_num_threads(0);
  for (const std::string &f : first_failure)
    if (!f.empty()) FAIL_CHECK(f);
  CHECK(failures.load() == 0);
  tessel_stats after{};
  REQUIRE(tessel_get_stats(&after) == TESSEL_OK);
  // Every call is a hit or a miss, whichever path served it and whichever thread exited.
  CHECK(after.hits + after.misses - before.hits - before.misses == kThreads * kCalls);
}

}  // namespace
