// Interleaving a GEMV's reduction (interleave_k.cpp): where it is offered, what its body and
// the rows past its chunks are, what it costs, and that the search takes it for GEMVs over B
// in main memory.
#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "action.h"
#include "memo.h"
#include "plan.h"
#include "solver.h"
#include "target.h"

namespace tessel {
namespace {

// A 1 x n x k spec as the runtime makes it (B's rows ldb_floats apart; 0: tight), with B in
// main memory.
Spec gemv(const Target &t, int32_t n, int32_t k, int64_t ldb_floats = 0, int32_t m = 1,
          bool trans_a = false) {
  Spec s = matmul_spec(m, n, k, trans_a, false, false, 1, t.limits(), 0, ldb_floats * 4);
  s.operands[1].level = Level::GL;
  return canonical(s);
}

bool offered(const Spec &s, const Target &t) {
  std::vector<Action> out;
  enumerate_interleaves(s, t, out);
  return !out.empty();
}

int interleaves(const Plan &plan) {
  int found = 0;
  for (const PlanNode &n : plan.nodes) found += n.kind == NodeKind::Interleave;
  return found;
}

TEST_CASE("only a GEMV's B in whole rows starts contiguous, and tiles across its rows are not") {
  const Target t = avx2_target(HostCaches{});
  CHECK(gemv(t, 1000, 300).b().contiguous);
  CHECK(gemv(t, 1000, 300, 1000).b().contiguous);
  CHECK_FALSE(gemv(t, 1000, 300, 1024).b().contiguous);  // a gap after each row
  CHECK_FALSE(gemv(t, 1000, 300, 0, 2).b().contiguous);  // not a GEMV
  CHECK_FALSE(matmul_spec(1, 1000, 300, false, true, false, 1, t.limits()).b().contiguous);
  const Spec s = gemv(t, 1000, 300);
  Expansion e;
  expand_tile(s, {ActionKind::Tile, 1, 0, 256}, t, e);  // n: each tile has part of each row
  CHECK_FALSE(e.children[0].spec.b().contiguous);
  CHECK_FALSE(e.children[1].spec.b().contiguous);
  expand_k_split(s, {ActionKind::SplitK, 0, 0, 64}, t, e);  // k: whole rows still
  CHECK(e.children[0].spec.b().contiguous);
  CHECK(e.children[1].spec.b().contiguous);
  CHECK(e.children[2].spec.b().contiguous);
  Spec other = s;
  for (int i = 0; i < 3; ++i) {
    other = s;
    other.operands[i].contiguous = !other.operands[i].contiguous;
    CHECK(spec_key(other) != spec_key(s));
    CHECK(spec_from_key(spec_key(other)) == other);
  }
}

TEST_CASE("interleaving is offered for a single row of A over contiguous B in main memory") {
  const Target t = avx2_target(HostCaches{});
  CHECK(offered(gemv(t, 1000, 300), t));
  CHECK(offered(gemv(t, 1, 8), t));
  CHECK(offered(gemv(t, 1000, 300, 0, 1, /*trans_a=*/true), t));
  CHECK_FALSE(offered(gemv(t, 1, 7), t));  // fewer than two rows per chunk
  CHECK_FALSE(offered(gemv(t, 1000, 300, 1024), t));
  Spec in_l3 = gemv(t, 1000, 300);
  in_l3.operands[1].level = Level::L3;
  CHECK_FALSE(offered(in_l3, t));
  Spec parallel = gemv(t, 1000, 300);
  parallel.threads = 2;
  CHECK_FALSE(offered(parallel, t));
}

TEST_CASE("an interleave's body reads one row of each chunk, and the rows past them follow") {
  const Target t = avx2_target(HostCaches{});
  for (auto [k, op] : {std::tuple{300, Op::Matmul}, {302, Op::MatmulAccum}}) {
    Spec s = gemv(t, 1000, k);
    s.op = op;
    std::vector<Action> actions;
    enumerate_interleaves(s, t, actions);
    REQUIRE(actions.size() == 1);
    const int32_t runs = actions[0].size, kc = k / runs;
    const Expansion e = expand(s, actions[0], t);
    CHECK(e.node == NodeKind::Interleave);
    CHECK(e.step == runs);
    CHECK(e.trips == kc);
    const Spec &body = e.children[0].spec;
    CHECK(body.op == Op::MatmulAccum);
    CHECK(body.dims == std::array<int32_t, 3>{1, 1000, runs});
    CHECK(body.a().layout == col_major());
    CHECK(body.b().level == Level::L1);
    CHECK_FALSE(body.b().contiguous);
    CHECK(e.children[2].present == (op == Op::Matmul));  // only a Matmul overwrites C first
    CHECK(e.children[0].multiplicity == kc - (op == Op::Matmul ? 1 : 0));
    CHECK(e.children[1].present == (k % runs != 0));
    if (e.children[1].present) {
      CHECK(e.children[1].spec.op == Op::MatmulAccum);
      CHECK(e.children[1].spec.dims[2] == k % runs);
      CHECK(e.children[1].spec.b() == s.b());
    }
    // All of B as `runs` runs that never restart, half of it hidden behind the body.
    const double read = t.read_cost(s.b(), runs, int64_t{kc} * 1000, false);
    CHECK(e.local_cycles ==
          doctest::Approx(t.coef.loop_iteration * kc + read * (1 - t.coef.staged_read_hidden)));
  }
}

TEST_CASE("the search reads a GEMV's B in main memory in interleaved chunks") {
  // The plans stream B in four long runs; with a gap after each row they cannot, and the
  // search keeps to tiles of a few rows.
  const Target t = avx2_target(HostCaches{});
  InMemoryMemo memo;
  Solver solver(t, memo);
  for (auto [k, n] : {std::tuple{2048, 16384}, {4096, 4096}, {16384, 2048}}) {
    for (int64_t ldb : {int64_t{0}, int64_t{n} + 16}) {
      const Spec s = matmul_spec(1, n, k, false, false, false, 1, t.limits(), 0, ldb * 4);
      REQUIRE(s.b().level == Level::GL);
      Plan plan;
      REQUIRE(build_plan(solver, s, &plan));
      CHECK_MESSAGE((interleaves(plan) > 0) == (ldb == 0), format_plan(plan));
    }
  }
}

}  // namespace
}  // namespace tessel
