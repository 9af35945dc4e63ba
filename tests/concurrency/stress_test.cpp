// 16 threads x 200 calls of new and shared shapes at once, with the process's thread count
// (parallel kernels when the search picks them), every result checked against the reference.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "support.h"
#include "tessel/tessel.h"

namespace {

struct Call {
  bool col_major, trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
};

// Shared calls come from a pool every thread draws from (so many threads ask for the same new
// kernel at once); the others from a pool of the thread's own (n is the thread's).
Call make_call(int thread, int i, std::mt19937_64 &rng) {
  // Small shapes: the test is about concurrency, and each new one is a search.
  std::uniform_int_distribution<int> pick(0, 11);
  const bool shared = i % 2 == 0;
  Call c;
  if (shared) {
    const int s = pick(rng);  // 12 pool shapes, each with fixed flags
    c = {s % 2 == 1, s % 3 == 1, s % 4 == 2, 57 + s, 13 + 2 * s, 9 + 3 * s, 1.0f, 0.0f};
  } else {
    const int j = static_cast<int>(rng() % 24);  // one of 24 shapes of this thread's own
    c = {j % 2 == 1, j % 3 == 0, j % 5 == 1, 1 + j, 25 + thread, 1 + 3 * j % 17, 1.0f, 0.0f};
  }
  static const float kScalars[] = {0.0f, 1.0f, -1.0f, 0.5f};
  c.alpha = kScalars[rng() % 4 == 0 ? 3 : 1];
  c.beta = kScalars[rng() % 4];
  return c;
}

bool run_and_check(const Call &c, std::mt19937_64 &rng, std::string *why) {
  // Row-major view of the call: the reference works on C = op(A) op(B) with row-major C.
  const int64_t ldc = c.col_major ? c.m + 3 : c.n + 3;
  const int64_t a_rows = c.trans_a != c.col_major ? c.k : c.m;
  const int64_t a_cols = c.trans_a != c.col_major ? c.m : c.k;
  const int64_t b_rows = c.trans_b != c.col_major ? c.n : c.k;
  const int64_t b_cols = c.trans_b != c.col_major ? c.k : c.n;
  const int64_t lda = a_cols + 1, ldb = b_cols + 2;
  std::vector<float> a(a_rows * lda), b(b_rows * ldb);
  std::vector<float> cmat((c.col_major ? c.n : c.m) * ldc);
  tessel::test::fill_random(a, rng);
  tessel::test::fill_random(b, rng);
  tessel::test::fill_random(cmat, rng);
  if (c.beta == 0.0f)
    for (float &x : cmat) x = NAN;
  std::vector<float> want = cmat;
  if (c.col_major) {  // C^T = op(B)^T op(A)^T, all row-major
    tessel::test::reference_sgemm(c.trans_b, c.trans_a, c.n, c.m, c.k, c.alpha, b.data(), ldb,
                                  a.data(), lda, c.beta, want.data(), ldc);
  } else {
    tessel::test::reference_sgemm(c.trans_a, c.trans_b, c.m, c.n, c.k, c.alpha, a.data(), lda,
                                  b.data(), ldb, c.beta, want.data(), ldc);
  }
  const tessel_status st = tessel_sgemm(
      c.col_major ? TESSEL_COL_MAJOR : TESSEL_ROW_MAJOR, c.trans_a ? TESSEL_TRANS : TESSEL_NO_TRANS,
      c.trans_b ? TESSEL_TRANS : TESSEL_NO_TRANS, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(),
      ldb, c.beta, cmat.data(), ldc);
  if (st != TESSEL_OK) {
    *why = tessel_last_error();
    return false;
  }
  for (size_t i = 0; i < cmat.size(); ++i) {
    const bool both_nan = std::isnan(cmat[i]) && std::isnan(want[i]);
    if (!both_nan && !(std::abs(cmat[i] - want[i]) <= tessel::test::tolerance(c.k))) {
      *why = "element " + std::to_string(i) + " is " + std::to_string(cmat[i]) + ", expected " +
             std::to_string(want[i]);
      return false;
    }
  }
  return true;
}

TEST_CASE("16 threads x 200 calls of new and shared shapes all equal the reference") {
  constexpr int kThreads = 16, kCalls = 200;
  std::atomic<int> failures{0}, go{0};
  std::vector<std::string> first_failure(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      std::mt19937_64 rng(1000 + t);
      for (int i = 0; i < kCalls; ++i) {
        const Call c = make_call(t, i, rng);
        std::string why;
        if (!run_and_check(c, rng, &why)) {
          if (failures.fetch_add(1) < kThreads && first_failure[t].empty())
            first_failure[t] = "thread " + std::to_string(t) + " call " + std::to_string(i) + " (" +
                               std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                               std::to_string(c.k) + "): " + why;
        }
      }
    });
  go.store(1);
  for (std::thread &th : threads) th.join();
  for (const std::string &f : first_failure)
    if (!f.empty()) FAIL_CHECK(f);
  CHECK(failures.load() == 0);
}

}  // namespace
