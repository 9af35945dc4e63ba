// Prints the emitted kernel's single-thread GFLOP/s on square shapes. Informational only (no
// timing assertion: machines and sanitizer builds differ); skipped unless asked for:
//   tessel_codegen_tests -tc="*throughput*" --no-skip
#include <chrono>
#include <cstdio>

#include "jit_harness.h"

namespace tessel {

TEST_CASE("codegen: throughput of emitted kernels (prints GFLOP/s)" * doctest::skip()) {
  const Target &target = test::test_target();
  InMemoryMemo memo;
  Solver solver(target, memo);
  std::mt19937_64 rng(7);
  for (int64_t s : {256, 512, 1024}) {
    const Spec spec = matmul_spec(s, s, s, false, false, false, 1, target.limits());
    Plan plan;
    REQUIRE(build_plan(solver, spec, &plan));
    EmitRequest req;
    req.plan = &plan;
    req.lda = req.ldb = req.ldc = s;
    std::unique_ptr<JitKernel> jit;
    std::string error;
    REQUIRE_MESSAGE(emit_kernel(req, &jit, &error), error);
    std::vector<float> a(size_t(s * s)), b(size_t(s * s)), c(size_t(s * s));
    test::fill_random(a, rng);
    test::fill_random(b, rng);
    std::unique_ptr<float, test::AlignedFree> ws(static_cast<float *>(
        std::aligned_alloc(64, size_t((jit->workspace_bytes() + 127) / 64 * 64))));
    KernelArgs args;
    args.a = a.data();
    args.b = b.data();
    args.c = c.data();
    args.workspace = ws.get();
    jit->fn()(&args);  // warm up
    const int reps = s <= 256 ? 200 : s <= 512 ? 20 : 4;
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      jit->fn()(&args);
      const auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    std::printf("%lldx%lldx%lld: %.1f GFLOP/s (best of %d, %zu bytes of code)\n",
                static_cast<long long>(s), static_cast<long long>(s), static_cast<long long>(s),
                2.0 * double(s) * double(s) * double(s) / best * 1e-9, reps, jit->code_size());
  }
}

}  // namespace tessel
