// The registry under concurrent first calls.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "registry.h"
#include "support.h"
#include "tessel/tessel.h"

namespace {

TEST_CASE("16 threads asking for the same and different new shapes compile each key once") {
  tessel_stats before{};
  REQUIRE(tessel_get_stats(&before) == TESSEL_OK);
  REQUIRE(tessel_set_num_threads(1) == TESSEL_OK);
  constexpr int kThreads = 16;
  // Shapes no other test uses: 4 shared by all threads, 1 private to each.
  auto shape_of = [](int t, int i) -> std::array<int64_t, 3> {
    if (i < 4) return {41 + i, 43, 29};
    return {51 + t, 19, 23};
  };
  std::atomic<int> failures{0};
  std::atomic<int> go{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      std::mt19937_64 rng(t);
      for (int i = 0; i < 5; ++i) {
        const auto [m, n, k] = shape_of(t, i);
        std::vector<float> a(m * k), b(k * n), c(m * n), want(m * n);
        tessel::test::fill_random(a, rng);
        tessel::test::fill_random(b, rng);
        tessel::test::reference_sgemm(false, false, m, n, k, 1, a.data(), k, b.data(), n, 0,
                                      want.data(), n);
        if (tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1, a.data(),
                         k, b.data(), n, 0, c.data(), n) != TESSEL_OK) {
          ++failures;
          continue;
        }
        for (size_t x = 0; x < c.size(); ++x)
          if (!(std::abs(c[x] - want[x]) <= tessel::test::tolerance(k))) {
            ++failures;
            break;
          }
      }
    });
  go = 1;
  for (auto &th : threads) th.join();
  tessel_set_num_threads(0);
  CHECK(failures == 0);
  tessel_stats after{};
  REQUIRE(tessel_get_stats(&after) == TESSEL_OK);
  // 4 shared + 16 private keys: 20 compilations, however the 80 calls interleaved.
  CHECK(after.kernels - before.kernels == 20);
  CHECK(after.hits + after.misses - before.hits - before.misses == kThreads * 5);
}

TEST_CASE("a bounded registry evicts old kernels and keeps serving") {
  tessel::runtime::Registry registry(1);  // one kernel per shard at most
  std::vector<std::shared_ptr<const tessel::runtime::CompiledKernel>> held;
  for (int i = 0; i < 200; ++i) {
    tessel::runtime::KernelKey key;
    key.m = 1 + i % 7;
    key.n = 1 + i;
    key.k = 3;
    key.lda = 3;
    key.ldb = key.n;
    key.ldc = key.n;
    std::shared_ptr<const tessel::runtime::CompiledKernel> kernel;
    REQUIRE(registry.get(key, &kernel) == TESSEL_OK);
    if (i < 3) held.push_back(kernel);  // evicted later, but must stay callable
  }
  const auto stats = registry.stats();
  CHECK(stats.kernels <= 64);
  CHECK(stats.evictions == 200 - stats.kernels);
  for (const auto &k : held) CHECK(k->jit->code_size() > 0);
}

}  // namespace
