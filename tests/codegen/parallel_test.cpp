// A parallel-root kernel is a function of its iteration range: any split of [0, iterations)
// into consecutive ranges computes exactly (bitwise) what one call over everything computes.
#include "jit_harness.h"

namespace tessel {

TEST_CASE("codegen: parallel roots run any split of their iteration range") {
  Solver &solver = test::shared_solver();
  const Target &target = solver.target();
  std::mt19937_64 rng(11);
  int parallel_plans = 0;
  std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes = {{97, 61, 33}, {64, 200, 17}};
  if (test::kFullSweeps) shapes.insert(shapes.end(), {{200, 64, 48}, {150, 150, 64}});
  for (auto [m, n, k] : shapes)
    for (bool acc : {false, true}) {
      const test::JitCase c{m, n, k, false, true, acc, 2, 0.5f};
      const Spec spec = matmul_spec(m, n, k, false, true, acc, 2, target.limits());
      Plan plan;
      REQUIRE(build_plan(solver, spec, &plan));
      // A split of k writes copies of C too: the next test case runs those.
      if (!plan.parallel_root() || plan.reduction_parts() > 0) continue;
      ++parallel_plans;
      const int64_t iterations = plan.grid_iterations();
      // Against the references, split at every point (a few in slow builds).
      for (int64_t x = 0; x <= iterations; x += test::kFullSweeps ? 1 : 1 + iterations / 3) {
        const std::string r = test::run_jit_case(solver, c, rng, nullptr, {x});
        CHECK_MESSAGE(r.empty(), "split at " << x << ": " << r);
      }
      // Bitwise against one call, with one range per iteration, and with out-of-range ends.
      EmitRequest req{&plan, k, k, n + 3, "parallel"};
      std::unique_ptr<JitKernel> jit;
      std::string error;
      REQUIRE_MESSAGE(emit_kernel(req, &jit, &error), error);
      CHECK(jit->parallel_iterations() == iterations);
      std::vector<float> a(size_t(m * k)), b(size_t(n * k)), whole(size_t(m * (n + 3)));
      test::fill_random(a, rng);
      test::fill_random(b, rng);
      test::fill_random(whole, rng);
      std::vector<float> pieces = whole;
      std::unique_ptr<float, test::AlignedFree> ws(static_cast<float *>(
          std::aligned_alloc(64, size_t((jit->workspace_bytes() + 127) / 64 * 64))));
      KernelArgs args;
      args.a = a.data();
      args.b = b.data();
      args.c = whole.data();
      args.alpha = 0.5f;
      args.workspace = ws.get();
      args.begin = -5;            // clamped to 0
      args.end = iterations + 7;  // clamped to the iteration count
      jit->fn()(&args);
      args.c = pieces.data();
      for (int64_t i = iterations - 1; i >= 0; --i) {  // any order
        args.begin = i;
        args.end = i + 1;
        jit->fn()(&args);
      }
      args.begin = 3;
      args.end = 2;  // empty
      jit->fn()(&args);
      CHECK(std::memcmp(whole.data(), pieces.data(), whole.size() * 4) == 0);
    }
  CHECK(parallel_plans > 0);
}

TEST_CASE("codegen: every parallel grid the search offers runs any split of its range") {
  // Grids over m, n and both, with last rows, last columns and a corner: each forced as the
  // root, emitted, and run in ranges of every length against the interpreter and reference.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(12);
  int grids = 0, corners = 0;
  for (int threads : {2, 3})
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{37, 29, 9}, {8, 70, 5}}) {
      const test::JitCase c{m, n, k, true, false, false, threads, -1.5f};
      const Spec spec = matmul_spec(m, n, k, true, false, false, threads, solver.target().limits());
      std::vector<Action> actions;
      enumerate_parallel_tiles(spec, solver.target(), actions);
      for (const Action &grid : actions) {
        test::ForcedMemo memo(solver, spec, grid);
        REQUIRE(memo.solvable());
        Solver forced(solver.target(), memo);
        Plan plan;
        const std::string r = test::run_jit_case(forced, c, rng, &plan, {1, 2, 4});
        CHECK_MESSAGE(r.empty(), to_string(grid) << ": " << r);
        REQUIRE(plan.parallel_root());
        CHECK(plan.nodes[size_t(plan.root)].action == grid);
        ++grids;
        corners += plan.nodes[size_t(plan.root)].children[3] >= 0;
      }
    }
  CHECK(grids > 20);
  CHECK(corners > 0);
}

TEST_CASE("codegen: every split of k the search offers runs any split of its parts") {
  // Parts of k into C and into copies of C (summed after, as the runtime does), with and without
  // a shorter last part, transposed operands, accumulation and NaN in an overwritten C:
  // each split forced as the root, run in ranges of every length, against the interpreter
  // (which sums its own copies) and the reference.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(13);
  int splits = 0, last_parts = 0, middle_parts = 0;
  for (int threads : {2, 3})
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 40, 700},
                           {3, 17, 1001},
                           {5, 8, 300},
                           {4, 64, 512}})
      for (bool trans : {false, true})
        for (bool acc : {false, true}) {
          const test::JitCase c{m, n, k, trans, !trans, acc, threads, acc ? 0.75f : -1.25f};
          const Spec spec =
              matmul_spec(m, n, k, trans, !trans, acc, threads, solver.target().limits());
          std::vector<Action> actions;
          enumerate_parallel_k_splits(spec, solver.target(), actions);
          REQUIRE(actions.size() == 1);
          test::ForcedMemo memo(solver, spec, actions[0]);
          REQUIRE(memo.solvable());
          Solver forced(solver.target(), memo);
          Plan plan;
          const std::string r = test::run_jit_case(forced, c, rng, &plan, {1, 2});
          CHECK_MESSAGE(r.empty(), to_string(actions[0]) << ": " << r);
          REQUIRE(plan.parallel_root());
          const PlanNode &root = plan.nodes[size_t(plan.root)];
          CHECK(root.action == actions[0]);
          CHECK(plan.reduction_parts() == threads);
          ++splits;
          middle_parts += root.children[1] >= 0;
          last_parts += root.children[2] >= 0;
        }
  CHECK(splits == 32);
  CHECK(middle_parts > 0);
  CHECK(last_parts > 0);
}

}  // namespace tessel
