// Seeded random differential tests of the whole pipeline: spec -> search -> emit -> run,
// compared with the plan interpreter and the naive reference, with guard canaries around C,
// the workspace, and bitwise checks that A and B are untouched.
#include <cstdio>
#include <fstream>

#include "jit_harness.h"

namespace tessel {
namespace {

// Sizes that stress edges: 1, primes, multiples of 8 and 6 and their neighbours.
constexpr int64_t kSpecialSizes[] = {1,  2,  3,  5,  6,  7,  8,  9,  11, 12, 13, 15, 16, 17, 23,
                                     24, 25, 31, 32, 33, 37, 47, 48, 49, 61, 64, 65, 89, 96, 97};

test::JitCase random_case(std::mt19937_64 &rng, int64_t max_size) {
  auto pick = [&] {
    if (rng() % 2) {
      int64_t s;
      do s = kSpecialSizes[rng() % std::size(kSpecialSizes)];
      while (s > max_size);
      return s;
    }
    return int64_t(1 + rng() % uint64_t(max_size));
  };
  static const float kAlphas[] = {1.0f, -1.0f, 0.5f};
  test::JitCase c;
  c.m = pick();
  c.n = pick();
  c.k = pick();
  c.trans_a = rng() & 1;
  c.trans_b = rng() & 1;
  c.accumulate = rng() & 1;
  c.alpha = kAlphas[rng() % 3];
  return c;
}

// One seed is one case: a failure prints its seed, which goes into regression_seeds.txt.
std::string run_seed(Solver &solver, uint64_t seed, int64_t max_size) {
  std::mt19937_64 rng(seed);
  const test::JitCase c = random_case(rng, max_size);
  return test::run_jit_case(solver, c, rng);
}

}  // namespace

TEST_CASE(
    "codegen: emitted kernels equal the interpreter and the reference on seeded random shapes") {
  Solver &solver = test::shared_solver();
  const uint64_t base_seed = 0x7e55e1;
  int failures = 0;
  const uint64_t cases = test::kFullSweeps ? 200 : 40;
  for (uint64_t i = 0; i < cases; ++i) {
    const uint64_t seed = base_seed + i;
    const std::string r = run_seed(solver, seed, 100);
    if (!r.empty() && failures++ < 3)
      FAIL_CHECK("seed " << seed << " (add it to tests/codegen/regression_seeds.txt): " << r);
  }
  CHECK(failures == 0);
}

TEST_CASE("codegen: regression seeds stay fixed") {
  Solver &solver = test::shared_solver();
  // Next to this file, wherever the build directory is.
  std::string dir = __FILE__;
  dir = dir.substr(0, dir.find_last_of('/'));
  std::ifstream in(dir + "/regression_seeds.txt");
  REQUIRE(in.good());
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const uint64_t seed = std::stoull(line);
    const std::string r = run_seed(solver, seed, 100);
    CHECK_MESSAGE(r.empty(), "regression seed " << seed << ": " << r);
    ++count;
  }
  MESSAGE(count << " regression seeds");
}

TEST_CASE("codegen: square and edge shapes around the register tile") {
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(42);
  std::vector<int64_t> sizes = {1, 5, 6, 7, 8, 15, 16, 17, 47, 48, 49};
  if (test::kFullSweeps) sizes.insert(sizes.end(), {95, 96, 97, 100});
  for (int64_t s : sizes)
    for (int t = 0; t < 4; ++t)
      for (bool acc : {false, true}) {
        const test::JitCase c{s, s, s, bool(t & 1), bool(t & 2), acc, 1, acc ? 0.5f : -1.0f};
        const std::string r = test::run_jit_case(solver, c, rng);
        CHECK_MESSAGE(r.empty(), r);
      }
}

TEST_CASE("codegen: register tiles that recur are emitted once and called where they occur") {
  // Irregular extents repeat their boundary tiles, and the first k block repeats the rest's:
  // such tiles become subroutines, called with the operands' registers moved by their static
  // displacements. Every variant runs against the interpreter and the reference.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(11);
  struct Shape {
    int64_t m, k, n;
  };
  const Shape shapes[] = {{200, 300, 250}, {97, 300, 211}};
  for (const Shape &s : shapes) {
    for (int t = 0; t < 4; ++t)
      for (bool acc : {false, true}) {
        const test::JitCase c{s.m, s.n, s.k, bool(t & 1), bool(t & 2), acc, 1, acc ? -1.0f : 0.5f};
        Plan plan;
        const std::string r = test::run_jit_case(solver, c, rng, &plan);
        CHECK_MESSAGE(r.empty(), r);
        if (t != 0 || acc) continue;
        EmitRequest req{&plan, s.k, s.n, s.n, "recurring tiles"};
        std::unique_ptr<JitKernel> jit;
        std::string error;
        REQUIRE_MESSAGE(emit_kernel(req, &jit, &error), error);
        CHECK(jit->outlined_tiles() > 0);
        CHECK(jit->tile_calls() >= 2 * jit->outlined_tiles());
      }
    if (!test::kFullSweeps) break;
  }
  // Two threads: the tiles are called from inside a parallel grid's tiles.
  const test::JitCase parallel{200, 250, 300, false, false, true, 2, 1.0f};
  const std::string r = test::run_jit_case(solver, parallel, rng, nullptr, {1, 3});
  CHECK_MESSAGE(r.empty(), r);
}

TEST_CASE("codegen: a register tile that occurs once stays inline") {
  Solver &solver = test::shared_solver();
  Plan plan;
  // One 6x16x200 register tile, long enough to be outlined were it to recur.
  REQUIRE(build_plan(
      solver, matmul_spec(6, 16, 200, false, false, false, 1, solver.target().limits()), &plan));
  EmitRequest req{&plan, 200, 16, 16, "one tile"};
  std::unique_ptr<JitKernel> jit;
  std::string error;
  REQUIRE_MESSAGE(emit_kernel(req, &jit, &error), error);
  CHECK(jit->outlined_tiles() == 0);
  CHECK(jit->tile_calls() == 0);
}

}  // namespace tessel
