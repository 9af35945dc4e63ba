// emit_kernel: each thread's code buffer and emitter, reused from kernel to kernel, give every
// plan the bytes a fresh thread gives it (after other plans, after a failed emission, after
// the buffer grew), and threads emit and free kernels at once.
#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "executable_memory.h"
#include "jit_harness.h"

namespace tessel {
namespace {

Plan plan_for(int64_t m, int64_t k, int64_t n, bool trans_a = false, bool trans_b = false,
              int threads = 1) {
  Solver &solver = test::shared_solver();
  Plan plan;
  REQUIRE(build_plan(
      solver, matmul_spec(m, n, k, trans_a, trans_b, false, threads, solver.target().limits()),
      &plan));
  return plan;
}

// The code emit_kernel makes for `plan` on the calling thread ("" and a message on failure).
std::string code_of(const Plan &plan, int64_t lda, int64_t ldb, int64_t ldc,
                    std::string *error = nullptr) {
  EmitRequest req{&plan, lda, ldb, ldc, "bytes"};
  std::unique_ptr<JitKernel> jit;
  std::string ignored;
  if (!emit_kernel(req, &jit, error != nullptr ? error : &ignored)) return "";
  return std::string(reinterpret_cast<const char *>(jit->code()), jit->code_size());
}

// Runs `f` on a new thread: a fresh buffer and emitter.
template <class F>
void on_new_thread(F f) {
  std::thread(f).join();
}

}  // namespace

TEST_CASE("codegen: a thread's emitter gives each plan the bytes a fresh thread gives it") {
  const Plan small = plan_for(17, 23, 19), other = plan_for(64, 48, 40);
  std::string fresh;
  on_new_thread([&] { fresh = code_of(small, 23, 19, 19); });
  REQUIRE(!fresh.empty());
  std::string after_others, after_failure, error;
  on_new_thread([&] {
    CHECK(!code_of(other, 48, 40, 40).empty());
    after_others = code_of(small, 23, 19, 19);
    // A leading dimension too small fails half-way through the emitter's setup.
    CHECK(code_of(other, 48, 10, 40, &error).empty());
    after_failure = code_of(small, 23, 19, 19);
  });
  CHECK(error.find("leading dimension") != std::string::npos);
  CHECK(after_others == fresh);
  CHECK(after_failure == fresh);
}

TEST_CASE("codegen: a kernel bigger than the thread's code buffer is emitted after a retry") {
  if (!test::kFullSweeps) return;  // its search takes ~1 s in a release build
  // 2999x1999x1999 with both operands transposed, for two threads of a core with a 32 KiB
  // L1, emits ~94 KiB (its recurring register tiles outlined), more than the buffer's first
  // 64 KiB: the first emission fills the buffer, grows it and starts again; the second fits
  // at once. Both give the same bytes, and a small kernel after them is unaffected.
  const Target small_l1 = avx2_target(HostCaches{32 * 1024, 1024 * 1024, 32 * 1024 * 1024});
  InMemoryMemo memo;
  Solver solver(small_l1, memo);
  Plan big;
  REQUIRE(build_plan(solver, matmul_spec(2999, 1999, 1999, true, true, false, 2, small_l1.limits()),
                     &big));
  const Plan small = plan_for(17, 23, 19);
  std::string fresh_small;
  on_new_thread([&] { fresh_small = code_of(small, 23, 19, 19); });
  on_new_thread([&] {
    const std::string retried = code_of(big, 2999, 1999, 1999);
    CHECK(retried.size() > 64 * 1024);
    CHECK(code_of(big, 2999, 1999, 1999) == retried);
    CHECK(code_of(small, 23, 19, 19) == fresh_small);
  });
}

TEST_CASE("codegen: kernels emitted and freed by several threads at once") {
  // The process's executable pool and each thread's buffer and emitter.
  constexpr int kThreads = 4, kRounds = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(uint64_t(t) + 100);
      Solver &solver = test::shared_solver();
      static std::mutex solver_mutex;  // the shared solver is not thread-safe
      for (int r = 0; r < kRounds; ++r) {
        test::JitCase c;
        c.m = int64_t(1 + rng() % 40);
        c.n = int64_t(1 + rng() % 40);
        c.k = int64_t(1 + rng() % 40);
        Plan plan;
        {
          std::lock_guard<std::mutex> lock(solver_mutex);
          if (!build_plan(
                  solver,
                  matmul_spec(c.m, c.n, c.k, false, false, false, 1, solver.target().limits()),
                  &plan)) {
            ++failures;
            continue;
          }
        }
        EmitRequest req{&plan, c.k, c.n, c.n, "threads"};
        std::unique_ptr<JitKernel> jit;
        std::string error;
        if (!emit_kernel(req, &jit, &error)) {
          ++failures;
          continue;
        }
        std::vector<float> a(size_t(c.m * c.k)), b(size_t(c.k * c.n)), got(size_t(c.m * c.n));
        std::vector<float> want(got.size());
        test::fill_random(a, rng);
        test::fill_random(b, rng);
        std::vector<float> ws(size_t(jit->workspace_bytes() / 4 + 16));
        KernelArgs args;
        args.a = a.data();
        args.b = b.data();
        args.c = got.data();
        args.workspace = reinterpret_cast<void *>((uintptr_t(ws.data()) + 63) / 64 * 64);
        test::run_whole(*jit, args);
        test::reference_sgemm(false, false, c.m, c.n, c.k, 1, a.data(), c.k, b.data(), c.n, 0,
                              want.data(), c.n);
        for (size_t i = 0; i < got.size(); ++i)
          if (std::fabs(got[i] - want[i]) > test::tolerance(c.k)) {
            ++failures;
            break;
          }
      }
    });
  for (std::thread &th : threads) th.join();
  CHECK(failures == 0);
}

}  // namespace tessel
