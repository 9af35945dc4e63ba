// Edge sweeps of every kernel of the catalogue, XNNPACK style: shapes below, at and above the
// register blocks, k at 1, primes and unroll multiples, strided operands, accumulate on and
// off. The solver chooses the kernels; the sweep records which ones its plans used and
// asserts that every catalogue kernel was exercised (ZeroMemory, which the solver prefers
// not to use, through a plan forced by a pre-populated memo).
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <set>

#include "jit_harness.h"

namespace tessel {
namespace {

struct Sweep {
  std::vector<int64_t> m, n, k;
  std::vector<int> trans;  // bit 0: trans_a, bit 1: trans_b
};

void run_sweep(Solver &solver, const Sweep &s, std::vector<bool> &covered, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int64_t m : s.m)
    for (int64_t n : s.n)
      for (int64_t k : s.k)
        for (int t : s.trans)
          for (bool acc : {false, true}) {
            const test::JitCase c{m, n, k, bool(t & 1), bool(t & 2), acc, 1, acc ? -1.0f : 0.5f};
            Plan plan;
            const std::string r = test::run_jit_case(solver, c, rng, &plan);
            CHECK_MESSAGE(r.empty(), r);
            const std::vector<bool> used = test::kernels_in(plan);
            for (int i = 0; i < kKernelCount; ++i)
              if (used[size_t(i)]) covered[size_t(i)] = true;
          }
}

// Runs case `c` (whose spec is `spec`) with `pack` forced at the root, and checks the plan
// took it and its kernel matches the interpreter and the reference.
void check_forced_pack(Solver &solver, const test::JitCase &c, const Spec &spec, const Action &pack,
                       std::mt19937_64 &rng) {
  test::ForcedMemo memo(solver, spec, pack);
  REQUIRE(memo.solvable());
  Solver forced(solver.target(), memo);
  Plan plan;
  const std::string r = test::run_jit_case(forced, c, rng, &plan);
  CHECK_MESSAGE(r.empty(), to_string(pack) << ", " << test::describe(c) << ": " << r);
  CHECK(plan.nodes[size_t(plan.root)].action == pack);
}

// Forces each pack of `operand` into L2 that the search offers at the root of case `c`'s
// spec (panels along m or n only) and checks each plan's kernel; returns how many.
int run_forced_packs(Solver &solver, const test::JitCase &c, int operand, std::mt19937_64 &rng) {
  const Target &target = solver.target();
  const Spec spec =
      matmul_spec(c.m, c.n, c.k, c.trans_a, c.trans_b, c.accumulate, c.threads, target.limits());
  std::vector<Action> actions;
  enumerate_packs(canonical(spec), target, actions);
  int packs = 0;
  for (const Action &pack : actions) {
    if (pack.a != operand || pack.size2 != 0 || Level(pack.b) != Level::L2) continue;
    check_forced_pack(solver, c, spec, pack, rng);
    ++packs;
  }
  return packs;
}

}  // namespace

TEST_CASE("codegen: every catalogue kernel is emitted correctly across its edge sizes") {
  Solver &solver = test::shared_solver();
  const Target &target = solver.target();
  // A memo of its own for the forced plans, so that they do not leak into other tests.
  InMemoryMemo forced_memo;
  Solver forced_solver(target, forced_memo);
  std::vector<bool> covered(size_t(kKernelCount), false);

  // Broadcast tiles: m around 4 and 6, n around 8, 16, 24 (edges of 1, 2 and 4 floats load
  // without a mask, the others under one), k across the unroll.
  {
    run_sweep(solver,
              {{1, 3, 4, 5, 6, 7, 12, 13},
               {1, 2, 4, 7, 8, 9, 16, 17, 18, 24, 25, 33},
               {1, 4, 9, 17},
               test::kFullSweeps ? std::vector<int>{0, 3} : std::vector<int>{0}},
              covered, 1);
  }
  // Dot tiles and transposed operands: k at and around the vector width.
  {
    run_sweep(solver, {{1, 2, 3, 5}, {1, 2, 3, 4}, {1, 2, 3, 5, 7, 8, 9, 15, 16, 17}, {0, 1, 2, 3}},
              covered, 2);
  }
  // Column vectors: n == 1 (scalar FMAs).
  { run_sweep(solver, {{1, 2, 5, 6, 7, 13}, {1}, {1, 2, 3, 8, 11}, {0, 1, 2, 3}}, covered, 3); }
  // Packing: panels of A and B from both layouts.
  { run_sweep(solver, {{23, 48}, {40, 97}, {64}, {0, 1, 2, 3}}, covered, 4); }
  // Zeroing memory: a Matmul forced through ZeroAccum.
  {
    std::mt19937_64 rng(5);
    for (int64_t m : {1, 7, 9})
      for (int64_t n : {1, 3, 4, 7, 8, 13, 300})
        for (int t = 0; t < 4; ++t) {
          const test::JitCase c{m, n, 5, bool(t & 1), bool(t & 2), false, 1, 1.0f};
          const Spec s =
              matmul_spec(c.m, c.n, c.k, c.trans_a, c.trans_b, false, 1, target.limits());
          MemoEntry forced;
          forced.exact = true;
          forced.solvable = true;
          forced.action = Action{ActionKind::ZeroAccum, 0, 0, 0};
          forced_memo.put(canonical(s), forced);
          Plan plan;
          const std::string r = test::run_jit_case(forced_solver, c, rng, &plan);
          CHECK_MESSAGE(r.empty(), r);
          CHECK(test::kernels_in(plan)[size_t(KernelId::ZeroMemory)]);
          covered[size_t(KernelId::ZeroMemory)] = true;
        }
  }
  for (int i = 0; i < kKernelCount; ++i)
    CHECK_MESSAGE(covered[size_t(i)],
                  "kernel never exercised: " << std::string(kernel_name(KernelId(i))));
}

TEST_CASE("codegen: packing copies whole source rows of up to 32 panels, then the rest") {
  // A copy along the panels reads each source row across up to 32 panels at a time; widths
  // around one group (32 panels of B, 16 wide; of A, 6 high), several groups, a remainder
  // and a partial last panel. Transposed sources go one panel at a time. Each pack is forced
  // at the root, and the whole plan is checked against the interpreter and the reference.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(21);
  int packs = 0;
  auto run = [&](int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, int operand) {
    packs += run_forced_packs(solver, {m, n, k, trans_a, trans_b, true, 1, 0.5f}, operand, rng);
  };
  std::vector<int64_t> widths = {15, 16, 17, 511, 512, 513, 533, 1040};
  if (test::kFullSweeps) widths.insert(widths.end(), {527, 1033});
  for (int64_t n : widths)
    for (bool trans_b : {false, true}) run(5, n, 12, false, trans_b, 1);
  std::vector<int64_t> heights = {5, 6, 7, 191, 192, 193, 199, 390};
  for (int64_t m : heights)
    for (bool trans_a : {false, true}) run(m, 9, 12, trans_a, false, 0);
  CHECK(packs >= 2 * int(widths.size() + heights.size()));
}

TEST_CASE("codegen: transposing packs move four k at a time and leave no edge behind") {
  // Row-major A into 6-row panels and column-major B into 16-column panels read four k of
  // each source row at once and transpose them in registers: in fours, a pair and a single
  // row per panel. Heights and widths cover each of those ends with full and partial
  // panels, k the loop of fours with and without a tail, and shorter than four.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(23);
  int packs = 0;
  const int64_t ks[] = {1, 3, 4, 5, 8, 13};
  for (int64_t k : ks) {
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 9, 12, 13, 23})
      packs += run_forced_packs(solver, {m, 9, k, false, false, true, 1, 0.5f}, 0, rng);
    for (int64_t n : {1, 2, 3, 6, 15, 16, 17, 19, 34, 46})
      packs += run_forced_packs(solver, {5, n, k, false, true, true, 1, 0.5f}, 1, rng);
  }
  CHECK(packs >= int(std::size(ks)) * (11 + 10));
}

TEST_CASE("codegen: C narrower than a vector packs operands along k for dot tiles") {
  // Row-major B and column-major A are not contiguous along k; with fewer than 8 columns of C
  // the search may copy them into panels of 8 k. Each such pack is forced at the root, over
  // k from under one panel to several with a partial last one, and the whole plan is checked
  // against the interpreter and the reference.
  Solver &solver = test::shared_solver();
  const Target &target = solver.target();
  std::mt19937_64 rng(23);
  int forced[2] = {0, 0};
  for (int64_t n : {1, 2, 3, 7})
    for (int64_t k : {1, 5, 8, 9, 16, 33, 130})
      for (int64_t m : {1, 4, 13})
        for (int t = 0; t < 4; ++t) {
          const bool trans_a = t & 1, trans_b = t & 2, accumulate = (m + k) % 2 == 0;
          const test::JitCase c{m, n, k, trans_a, trans_b, accumulate, 1, -0.5f};
          const Spec spec = test::case_spec(solver, c);
          std::vector<Action> actions;
          enumerate_packs(spec, target, actions);
          for (const Action &pack : actions) {
            if (pack.size2 == 0) continue;
            // Only an operand not already contiguous along k gets k-panels.
            CHECK((pack.a == 0 ? trans_a : !trans_b));
            check_forced_pack(solver, c, spec, pack, rng);
            ++forced[pack.a];
          }
        }
  CHECK(forced[0] > 50);
  CHECK(forced[1] > 50);
  // Unforced, a matrix-vector product with row-major B takes the dot tiles: one FMA per row
  // and 8 k rather than one per row and k.
  Plan plan;
  REQUIRE(build_plan(solver, test::case_spec(solver, test::JitCase{64, 1, 64}), &plan));
  bool k_panel = false, dot_tile = false;
  for (const PlanNode &node : plan.nodes) {
    k_panel |= node.action.kind == ActionKind::Pack && node.action.size2 != 0;
    dot_tile |= node.action.kind == ActionKind::RegisterTile &&
                LayoutKind(node.action.a) == LayoutKind::VecDot;
  }
  CHECK_MESSAGE((k_panel && dot_tile), format_plan(plan));
}

// Columns of the widest dot tile of `plan` that holds A's rows (fewer rows than columns; 0:
// none).
int64_t widest_row_dot_tile(const Plan &plan) {
  int64_t widest = 0;
  for (const PlanNode &n : plan.nodes)
    if (n.kind == NodeKind::Kernel && n.kernel == KernelId::FmaDot &&
        n.spec.dims[0] < n.spec.dims[1])
      widest = std::max<int64_t>(widest, n.spec.dims[1]);
  return widest;
}

TEST_CASE("codegen: dot tiles of few rows hold A and stream B's columns") {
  // With B transposed (k contiguous in its columns), a GEMV or a batch of a few rows reads
  // B's columns straight into dot tiles up to 13 wide: A's rows stay in registers and each
  // column streams through one; a transposed A is packed along k first. The search must
  // choose such tiles here; k covers whole vectors, their masked ends and fewer than eight,
  // with alpha -0.75 and C overwritten or accumulated.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(29);
  int64_t widest = 0;
  for (bool trans_a : {false, true})
    for (int64_t m : {1, 2, 3})
      for (int64_t n : {8, 9, 13, 40, 1000})
        for (int64_t k : {5, 8, 9, 64, 300}) {
          const test::JitCase c{m, n, k, trans_a, true, (m + n + k) % 2 == 0, 1, -0.75f};
          Plan plan;
          const std::string r = test::run_jit_case(solver, c, rng, &plan);
          CHECK_MESSAGE(r.empty(), r);
          const int64_t columns = widest_row_dot_tile(plan);
          if (k >= 64) CHECK_MESSAGE(columns >= 8, test::describe(c));
          widest = std::max(widest, columns);
        }
  CHECK(widest >= 12);
}

TEST_CASE("codegen: accumulating tiles whose C rows alias in the low 12 address bits") {
  // Rows ldc = 1024 floats apart (4 KiB), or 2, 4 or 3 rows apart for 512, 256 and 3072, are
  // read as a whole tile before any is written; the others row by row. Both orders, tiles
  // with masked edges and several alphas, against the interpreter and the reference.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(33);
  for (int64_t ldc : {256, 512, 1024, 3072, 1000})
    for (int64_t m : {2, 5, 6, 13})
      for (int64_t n : {8, 13, 16, 24, 40})
        for (float alpha : {1.0f, -1.0f, 0.5f}) {
          const test::JitCase c{m, n, 9, false, false, true, 1, alpha, ldc};
          const std::string r = test::run_jit_case(solver, c, rng);
          CHECK_MESSAGE(r.empty(), r);
        }
}

TEST_CASE("codegen: C staged from main memory with aliasing rows runs in a padded copy") {
  // Operands in main memory and C staged into L2 at the root: with ldc a multiple of 1024
  // floats the emitter accumulates in a workspace copy of C with a padded stride and writes
  // it back; with ldc = 1000 it works in place. Overwrite and accumulate, edges of every
  // vector width, checked against the interpreter and the reference (and the workspace's
  // canaries past the copy). At 25x300x64 the 6x16 tiles recur and are called as
  // subroutines, whose bodies see C's padded stride. Which tiles recur depends on the
  // blocking, so on the caches: these are a Zen 3 core's, whatever the host.
  const Target target = avx2_target(HostCaches{32 * 1024, 512 * 1024, 32 * 1024 * 1024});
  InMemoryMemo base;
  Solver solver(target, base);
  std::mt19937_64 rng(44);
  int copies = 0, tile_calls = 0;
  for (int64_t ldc : {1024, 2048, 1000})
    for (int64_t m : {2, 7, 25})
      for (int64_t n : {5, 16, 37, 300})
        for (bool accumulate : {false, true}) {
          const int64_t k = m == 25 && n == 300 ? 64 : 9;
          const test::JitCase c{m,   n,   k, false, false, accumulate, 1, accumulate ? 0.5f : 1.0f,
                                ldc, true};
          const Spec spec = test::case_spec(solver, c);
          REQUIRE(spec.c().level == Level::GL);
          test::ForcedMemo memo(solver, spec, Action{ActionKind::Stage, 2, uint8_t(Level::L2), 0});
          REQUIRE(memo.solvable());
          Solver forced(target, memo);
          Plan plan;
          const std::string r = test::run_jit_case(forced, c, rng, &plan);
          CHECK_MESSAGE(r.empty(), r);
          CHECK(plan.nodes[size_t(plan.root)].kind == NodeKind::Stage);
          copies += ldc % 1024 == 0;
          if (ldc % 1024 == 0 && k == 64) {
            std::unique_ptr<JitKernel> jit;
            std::string error;
            REQUIRE(emit_kernel({&plan, k, n, ldc, "copied"}, &jit, &error));
            CHECK(jit->workspace_bytes() > plan.workspace_bytes);
            tile_calls += jit->tile_calls();
          }
        }
  CHECK(copies == 48);
  CHECK(tile_calls > 0);
}

namespace {

// Rows of the biggest pack of B below a stage of B from main memory (0: none), where the
// emitter prefetches ahead along the source rows once they are many (pack_panels.cpp).
int64_t streamed_pack_rows(const Plan &plan, int id, bool streamed) {
  if (id < 0) return 0;
  const PlanNode &n = plan.nodes[size_t(id)];
  if (n.kind == NodeKind::Stage && n.operand == 1 && n.spec.b().level == Level::GL) streamed = true;
  int64_t rows = 0;
  if (streamed && n.kind == NodeKind::Alloc && n.operand == 1 && n.children[0] >= 0 &&
      plan.tensors[size_t(n.new_tensor)].spec.layout.kind == LayoutKind::PanelCols) {
    const PlanNode &prologue = plan.nodes[size_t(n.children[0])];
    if (prologue.kind == NodeKind::Kernel && prologue.kernel == KernelId::PackPanels)
      rows = prologue.spec.dims[0];
  }
  for (int c : n.children) rows = std::max(rows, streamed_pack_rows(plan, c, streamed));
  return rows;
}

}  // namespace

TEST_CASE("codegen: packs of many B rows streamed from main memory prefetch and stay exact") {
  // Few rows of A against a B in main memory whose rows are 8 or 16 KiB apart (too crowded
  // in L1 to stage unpacked): B is staged through L2 and packed 16 to 100 rows at a time (5
  // and 8 rows of A take 16 or 31, 24 take 32 and more), each source row prefetched ahead
  // once they are 32 or more. Depths around that, checked against the interpreter and the
  // reference. The plans depend on the caches: these are a Zen 3 core's, whatever the host.
  const Target target = avx2_target(HostCaches{32 * 1024, 512 * 1024, 32 * 1024 * 1024});
  InMemoryMemo base;
  Solver solver(target, base);
  std::mt19937_64 rng(61);
  int prefetched = 0;
  for (int64_t m : {5, 8, 24})
    for (int64_t n : {2048, 4096})
      for (int64_t k : {31, 32, 33, 64, 100}) {
        const test::JitCase c{m, n, k, false, false, k % 2 == 0, 1, 0.5f, 0, true};
        Plan plan;
        const std::string r = test::run_jit_case(solver, c, rng, &plan);
        CHECK_MESSAGE(r.empty(), r);
        prefetched += streamed_pack_rows(plan, plan.root, false) >= 32;
      }
  CHECK(prefetched > 0);
}

namespace {

// For each node that `picks` (given whether a stage above it read B from L3 or beyond), the
// bytes from its tile of a row-major B (`ldb`) to the one the innermost loop moving B visits
// next (0: none).
template <class Pick>
void next_b_tiles(const Plan &plan, int id, int64_t ldb, int64_t next, const Pick &picks,
                  std::vector<int64_t> *out, bool staged_far = false) {
  if (id < 0) return;
  const PlanNode &n = plan.nodes[size_t(id)];
  if (n.kind == NodeKind::Loop) {
    const auto b_dims = n.spec.operand_dims(1);
    const int64_t step = n.dim == b_dims[1]   ? 4 * n.step
                         : n.dim == b_dims[0] ? 4 * n.step * ldb
                                              : 0;
    if (step != 0) {
      next_b_tiles(plan, n.children[0], ldb, step, picks, out, staged_far);
      next_b_tiles(plan, n.children[2], ldb, step, picks, out, staged_far);
      // the remainder is the last tile
      next_b_tiles(plan, n.children[1], ldb, 0, picks, out, staged_far);
      return;
    }
  }
  if (picks(n, staged_far)) out->push_back(next);
  staged_far |= n.kind == NodeKind::Stage && n.operand == 1 && n.spec.b().level >= Level::L3;
  for (int c : n.children) next_b_tiles(plan, c, ldb, next, picks, out, staged_far);
}

// Packs of 32 or more rows of B from L3 or main memory, where B lives or a stage read it from.
void next_pack_tiles(const Plan &plan, int64_t ldb, std::vector<int64_t> *out,
                     bool only_staged = false) {
  auto big_pack = [&](const PlanNode &n, bool staged_far) {
    if (n.kind != NodeKind::Alloc || n.operand != 1 || n.children[0] < 0) return false;
    const PlanNode &prologue = plan.nodes[size_t(n.children[0])];
    const bool far = prologue.spec.operands[0].level >= Level::L3;
    return prologue.kind == NodeKind::Kernel && prologue.kernel == KernelId::PackPanels &&
           (only_staged ? !far && staged_far : far || staged_far) && prologue.spec.dims[0] >= 32;
  };
  next_b_tiles(plan, plan.root, ldb, 0, big_pack, out);
}

// A prefetcht<hint> [base + disp] (0f 18 /(hint + 1), no index register).
struct Prefetch {
  int hint;
  int64_t disp;
};

// The length of the prefetch at code[start] (0 if there is none), and what it is.
size_t prefetch_at(const uint8_t *code, size_t size, size_t start, Prefetch *out) {
  size_t i = start;
  if (i < size && (code[i] & 0xf0) == 0x40) ++i;  // a REX prefix names r8-r15
  if (i + 8 > size || code[i] != 0x0f || code[i + 1] != 0x18) return 0;
  const int hint = (code[i + 2] >> 3 & 7) - 1, mod = code[i + 2] >> 6;
  if (hint < 0 || hint > 2 || mod == 0 || mod == 3) return 0;
  const size_t at = i + 3 + ((code[i + 2] & 7) == 4 ? 1 : 0);  // a SIB byte names rsp, r12
  int32_t d32 = 0;
  std::memcpy(&d32, code + at, 4);
  *out = {hint, mod == 1 ? int8_t(code[at]) : d32};
  return at - start + (mod == 1 ? 1 : 4);
}

// Whether `code` holds these prefetches one right after another.
bool has_prefetches(const uint8_t *code, size_t size, std::initializer_list<Prefetch> run) {
  for (size_t i = 0; i < size; ++i) {
    size_t at = i, len = 0;
    bool match = true;
    for (const Prefetch &want : run) {
      Prefetch p{};
      len = prefetch_at(code, size, at, &p);
      if (len == 0 || p.hint != want.hint || p.disp != want.disp) {
        match = false;
        break;
      }
      at += len;
    }
    if (match) return true;
  }
  return false;
}

bool has_prefetch(const uint8_t *code, size_t size, int hint, int64_t disp) {
  return has_prefetches(code, size, {{hint, disp}});
}

// The fewest bytes from one such prefetch to the next in `code` (SIZE_MAX: fewer than two).
size_t closest_prefetches(const uint8_t *code, size_t size, int hint, int64_t disp) {
  size_t closest = SIZE_MAX, last = SIZE_MAX;
  for (size_t i = 0; i < size; ++i) {
    Prefetch p{};
    const size_t len = prefetch_at(code, size, i, &p);
    if (len == 0 || p.hint != hint || p.disp != disp) continue;
    if (last != SIZE_MAX) closest = std::min(closest, i - last);
    last = i;
    i += len - 1;
  }
  return closest;
}

bool has_prefetcht1(const uint8_t *code, size_t size, int64_t disp) {
  return has_prefetch(code, size, 1, disp);
}

// Runs `c` (checked exact) and emits its plan with B's rows `ldb` apart: each pack of 32 or more
// rows of B from L3 or main memory (only those below a stage, if `only_staged`) must prefetch
// the tile its loop packs next. Returns how many such prefetches it checked.
int check_next_pack_prefetches(Solver &solver, const test::JitCase &c, std::mt19937_64 &rng,
                               int64_t ldb, bool only_staged) {
  Plan plan;
  const std::string r = test::run_jit_case(solver, c, rng, &plan);
  CHECK_MESSAGE(r.empty(), r);
  std::vector<int64_t> next;
  next_pack_tiles(plan, ldb, &next, only_staged);
  std::unique_ptr<JitKernel> jit;
  std::string error;
  REQUIRE(emit_kernel({&plan, c.k, ldb, c.n, "next pack"}, &jit, &error));
  int checked = 0;
  for (int64_t bytes : next)
    if (bytes != 0) {
      CHECK_MESSAGE(has_prefetcht1(jit->code(), jit->code_size(), bytes), format_plan(plan));
      ++checked;
    }
  return checked;
}

}  // namespace

TEST_CASE("codegen: loops over packs of B from L3 copy the next tile as they multiply") {
  // B in L3 is packed 128 rows at a time inside loops over n and k: each iteration copies
  // the next tile into the other of two buffers as it multiplies, prefetching two rows of B
  // ahead; a first iteration of its own (overwriting C) copies the body's first tile. Under
  // 17 rows of A, a panel row per kernel-loop step would leave part of each tile for after
  // the body: each step copies two (back to back in the code). Under 22 rows the steps are
  // as many as the tile's panel rows; under 384 they are done early in the body. Odd and
  // even counts of tiles, overwriting and accumulating C: all exact.
  const Target target = avx2_target(HostCaches{48 * 1024, 1024 * 1024, 32 * 1024 * 1024});
  InMemoryMemo base;
  Solver solver(target, base);
  std::mt19937_64 rng(64);
  int ahead = 0;
  for (int64_t m : {17, 22, 32, 41, 384})
    for (int64_t n : {1536, 2048})
      for (bool accumulate : {false, true}) {
        if (m == 384 && n != 1536) continue;
        const test::JitCase c{m, n, 512, false, false, accumulate, 1, 0.5f, 0, false};
        Plan plan;
        const std::string r = test::run_jit_case(solver, c, rng, &plan);
        CHECK_MESSAGE(r.empty(), r);
        const int64_t ldb = n + 4;
        std::unique_ptr<JitKernel> jit;
        std::string error;
        REQUIRE(emit_kernel({&plan, c.k, ldb, c.n, "pack ahead"}, &jit, &error));
        const bool copies = has_prefetch(jit->code(), jit->code_size(), 0, 2 * 4 * ldb);
        CHECK_MESSAGE(copies, format_plan(plan));
        // A copy step is 80-100 bytes of code, a kernel loop's four k steps ~300.
        const size_t closest = closest_prefetches(jit->code(), jit->code_size(), 0, 2 * 4 * ldb);
        CHECK_MESSAGE((closest < 128) == (m == 17), closest, "\n", format_plan(plan));
        ahead += copies;
      }
  CHECK(ahead == 18);
}

TEST_CASE("codegen: the last tile of a loop packing ahead copies the next loop's first, exactly") {
  // Few rows of A over a wide B: loops over k (a Matmul's with a first iteration of their
  // own) hold loops over n that pack B ahead. Each such loop's last iteration copies the
  // first tile of the next loop packing the same tiles, the enclosing loop's next iteration
  // (an inner k loop's if it has one left, else the outer's), and that loop starts on it.
  const Target target = avx2_target(HostCaches{48 * 1024, 1024 * 1024, 32 * 1024 * 1024});
  InMemoryMemo base;
  Solver solver(target, base);
  std::mt19937_64 rng(65);
  for (int threads : {1, 2})
    for (int64_t m : {17, 32})
      for (bool accumulate : {false, true}) {
        const test::JitCase c{m, 3072, 768, false, false, accumulate, threads, 0.5f, 0, false};
        Plan plan;
        const std::string r = test::run_jit_case(solver, c, rng, &plan);
        CHECK_MESSAGE(r.empty(), r);
        std::unique_ptr<JitKernel> jit;
        std::string error;
        REQUIRE(emit_kernel({&plan, c.k, c.n, c.n, "carried packs"}, &jit, &error));
        CHECK_MESSAGE(jit->carried_packs() > 0, test::describe(c), "\n", format_plan(plan));
      }
}

TEST_CASE("codegen: packs of B from L3 prefetch the tile their loop packs next, and stay exact") {
  // Few rows of A against a B in L3: B is packed 128 rows at a time inside loops over n and
  // k. Each pack fetches the next tile into L2 as it goes; the plans depend on the caches:
  // these are a Zen 4 core's, whatever the host.
  const Target target = avx2_target(HostCaches{48 * 1024, 1024 * 1024, 32 * 1024 * 1024});
  InMemoryMemo base;
  Solver solver(target, base);
  std::mt19937_64 rng(62);
  int checked = 0;
  for (int64_t m : {24, 32, 41})
    for (bool accumulate : {false, true}) {
      const test::JitCase c{m, 1536, 512, false, false, accumulate, 1, 0.5f, 0, false};
      checked += check_next_pack_prefetches(solver, c, rng, 1540, /*only_staged=*/false);
    }
  CHECK(checked >= 6);
}

TEST_CASE("codegen: packs below a stage of B from L3 prefetch as packs from L3 do") {
  // Many rows of A over B in L3: B is staged into L2 a block of columns at a time, all of k,
  // and packed there. Staging copies nothing, so the pack still reads L3: it fetches the next
  // block into L2 as it goes. A Zen 4 core's caches, whatever the host.
  const Target target = avx2_target(HostCaches{32 * 1024, 1024 * 1024, 32 * 1024 * 1024});
  InMemoryMemo base;
  Solver solver(target, base);
  std::mt19937_64 rng(63);
  int checked = 0;
  for (int64_t k : {512, 515}) {
    const test::JitCase c{384, 512, k, false, false, false, 1, 0.5f, 0, false};
    checked += check_next_pack_prefetches(solver, c, rng, 516, /*only_staged=*/true);
  }
  CHECK(checked >= 2);
}

TEST_CASE("codegen: tiles of B streamed from main memory into L2 read the next tile if both fit") {
  // GEMVs and 2- and 8-row products against a B beyond L3 (a Zen 4 core's L1 and L2, L3 2
  // MiB so that B stays small): B's rows are staged a few at a time from main memory, into L1
  // for the FMAs to read (1 row) or into L2 for the tiles staged or packed from there (2 and 8
  // rows). When a tile staged into L2 and the next fit in half of L2, each line read or packed
  // also prefetches the same line of the next tile (and a pack, again three quarters of a
  // tile on, also where a loop copies its next pack while it multiplies); rows of 16384
  // floats make tiles too big for that, and rows staged straight into L1 leave the streaming
  // to the hardware. Exact either way. A GEMV's B has padded rows: over whole rows it would
  // read them in interleaved chunks instead (interleave_k.cpp).
  const Target target = avx2_target(HostCaches{32 * 1024, 1024 * 1024, 2 * 1024 * 1024});
  InMemoryMemo base;
  Solver solver(target, base);
  std::mt19937_64 rng(63);
  int looked_ahead = 0, not_ahead = 0, into_l1 = 0, packed = 0, copied_ahead = 0;
  int copied_unannounced = 0;
  for (int64_t m : {1, 2, 8})
    for (int64_t n : {2048, 3001, 4096, 16384}) {
      const int64_t k = n == 16384 ? 64 : m == 8 && n == 4096 ? 2048 : 512;
      const int64_t ldb = n + 4;
      const test::JitCase c{m, n, k, false, false, m == 2, 1, 0.5f, 0, false, m == 1 ? ldb : 0};
      Plan plan;
      const std::string r = test::run_jit_case(solver, c, rng, &plan);
      CHECK_MESSAGE(r.empty(), r);
      const bool packs = streamed_pack_rows(plan, plan.root, false) > 0;
      packed += m == 8 && packs;
      auto streamed_b = [&](const PlanNode &s, bool ahead) {
        if (s.kind != NodeKind::Stage || s.operand != 1 || s.spec.b().level != Level::GL)
          return false;
        const int64_t tile = s.spec.rows(1) * s.spec.cols(1) * 4;
        const bool to_l2 =
            plan.nodes[static_cast<size_t>(s.children[0])].spec.b().level == Level::L2;
        into_l1 += !to_l2 && ahead;
        return (to_l2 && 2 * tile <= target.caches.l2_bytes / 2) == ahead;
      };
      std::unique_ptr<JitKernel> jit;
      std::string error;
      REQUIRE(emit_kernel({&plan, k, ldb, n, "look ahead", target.caches.l2_bytes}, &jit, &error));
      // A loop copying its next pack while it multiplies prefetches into L1 from its copy
      // steps: a row on where the next tile is on its way into L2, else two rows on. (The
      // copy's start prefetches its first rows too, the second a row on: a row on marks the
      // steps only where the plan looks ahead.)
      const int64_t row = 4 * ldb;
      const bool near_steps = has_prefetch(jit->code(), jit->code_size(), 0, row);
      const bool far_steps = has_prefetch(jit->code(), jit->code_size(), 0, 2 * row);
      bool plan_looks_ahead = false;
      for (bool ahead : {true, false}) {
        std::vector<int64_t> next;
        next_b_tiles(
            plan, plan.root, ldb, 0, [&](const PlanNode &s, bool) { return streamed_b(s, ahead); },
            &next);
        for (int64_t bytes : next) {
          if (bytes == 0) continue;
          CHECK_MESSAGE(has_prefetcht1(jit->code(), jit->code_size(), bytes) == ahead,
                        format_plan(plan));
          const int64_t rows = bytes / (4 * ldb), second = rows * 3 / 4 * 4 * ldb;
          if (packs && ahead) CHECK(has_prefetcht1(jit->code(), jit->code_size(), second));
          // Such copy steps look ahead too.
          if (packs && ahead && near_steps) {
            CHECK_MESSAGE(
                has_prefetches(jit->code(), jit->code_size(), {{0, row}, {1, second}, {1, bytes}}),
                format_plan(plan));
            ++copied_ahead;
          }
          plan_looks_ahead |= ahead;
          ++(ahead ? looked_ahead : not_ahead);
        }
      }
      // Its steps copy several panel rows each (back to back in the code: a step is 80-100
      // bytes, a kernel loop's four k steps ~300) where the next tile is on its way into L2,
      // and one where each waits on main memory.
      if (plan_looks_ahead) {
        CHECK_MESSAGE(!far_steps, format_plan(plan));
        if (near_steps)
          CHECK_MESSAGE(closest_prefetches(jit->code(), jit->code_size(), 0, row) < 128,
                        format_plan(plan));
      } else if (far_steps) {
        CHECK_MESSAGE(closest_prefetches(jit->code(), jit->code_size(), 0, 2 * row) >= 128,
                      format_plan(plan));
        ++copied_unannounced;
      }
    }
  CHECK(looked_ahead >= 4);
  CHECK(not_ahead >= 4);
  CHECK(into_l1 >= 2);
  CHECK(packed >= 2);
  CHECK(copied_ahead >= 1);
  CHECK(copied_unannounced >= 1);
}

TEST_CASE("codegen: GEMVs over B in main memory read k in interleaved chunks, exactly") {
  // The interleave forced at the root: chunks of 2 and 3 rows with and without rows past
  // them, 1 to 333 columns (below, at and past the vector width and the 48-wide tiles), A as
  // a row or transposed, overwriting (C full of NaN) and accumulating; B's rows padded
  // (run_jit_case), so its views stride by chunks of ldb, not of n.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(65);
  int checked = 0;
  for (int64_t k : {8, 9, 13, 67, 260})
    for (int64_t n : {1, 7, 8, 9, 48, 100, 333})
      for (bool trans_a : {false, true})
        for (bool accumulate : {false, true}) {
          const float alpha = accumulate ? -1.0f : 0.5f;
          const test::JitCase c{1, n, k, trans_a, false, accumulate, 1, alpha, 0, true};
          const Spec spec = test::case_spec(solver, c);
          std::vector<Action> actions;
          enumerate_interleaves(spec, solver.target(), actions);
          REQUIRE(actions.size() == 1);
          test::ForcedMemo memo(solver, spec, actions[0]);
          REQUIRE(memo.solvable());
          Solver forced(solver.target(), memo);
          Plan plan;
          const std::string r = test::run_jit_case(forced, c, rng, &plan);
          CHECK_MESSAGE(r.empty(), test::describe(c) << ": " << r);
          CHECK(plan.nodes[size_t(plan.root)].kind == NodeKind::Interleave);
          ++checked;
        }
  CHECK(checked == 140);
}

TEST_CASE("codegen: GEMVs over B in main memory on two threads interleave each part of k") {
  // Each thread's part of k is whole rows of B: the search reads it in interleaved chunks,
  // each part run apart (as the team would) and summed; exact.
  Solver &solver = test::shared_solver();
  std::mt19937_64 rng(66);
  int interleaved = 0;
  for (auto [k, n] : {std::pair{260, 333}, {301, 100}, {1031, 48}})
    for (bool accumulate : {false, true}) {
      const test::JitCase c{1, n, k, false, false, accumulate, 2, 0.5f, 0, true};
      Plan plan;
      const std::string r = test::run_jit_case(solver, c, rng, &plan, {1});
      CHECK_MESSAGE(r.empty(), test::describe(c) << ": " << r);
      CHECK(plan.reduction_parts() == 2);
      for (const PlanNode &node : plan.nodes) interleaved += node.kind == NodeKind::Interleave;
    }
  CHECK(interleaved >= 6);
}

}  // namespace tessel
