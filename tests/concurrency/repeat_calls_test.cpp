// Repeated calls from several threads at once (each thread caches its own recent calls and
// counts its own hits), or runs of one shared kernel handle, while another thread changes the
// thread count and reads the stats.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "support.h"
#include "tessel/tessel.h"

namespace {

// Runs kThreads threads of kCalls calls of an m x n x k product each, every thread on its own
// operands through `call` (a * b -> c with beta), while this thread changes the thread count
// and reads the stats; checks every result and that every call counted once.
template <class Call>
void repeat_from_threads(int64_t m, int64_t n, int64_t k, Call call) {
  constexpr int kThreads = 4, kCalls = 300;
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
        bool ok = call(a.data(), b.data(), beta, c.data()) == TESSEL_OK;
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

TEST_CASE("threads repeating calls get their own results while the thread count changes") {
  constexpr int64_t m = 6, n = 5, k = 7;
  repeat_from_threads(m, n, k, [](const float *a, const float *b, float beta, float *c) {
    return tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1, a, k, b, n,
                        beta, c, n);
  });
}

TEST_CASE("threads sharing a kernel handle get their own results while the thread count changes") {
  // The handle publishes the kernel each kind of run ran last while other threads read it
  // (capi.cpp): both kinds and both thread counts change hands all the time here.
  constexpr int64_t m = 7, n = 9, k = 5;
  tessel_sgemm_kernel h = nullptr;
  REQUIRE(tessel_sgemm_kernel_create(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, k,
                                     n, n, &h) == TESSEL_OK);
  repeat_from_threads(m, n, k, [h](const float *a, const float *b, float beta, float *c) {
    return tessel_sgemm_kernel_run(h, 1, a, b, beta, c);
  });
  tessel_sgemm_kernel_destroy(h);
}

}  // namespace
