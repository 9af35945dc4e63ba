// The AVX2 target: its derived tables, its memory costs, and where the user's operands are
// taken to live.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "memo.h"
#include "plan.h"
#include "solver.h"
#include "target.h"
#include "test_target.h"

namespace tessel {
namespace {

// The documented list, built the obvious way.
std::vector<int32_t> reference_tile_sizes(const Target &t, int64_t extent, bool output_dim) {
  std::set<int32_t> sizes;
  for (int64_t s = 1; s < extent; s *= 2) sizes.insert(static_cast<int32_t>(s));
  if (output_dim)
    for (int base : t.tile_bases)
      for (int64_t s = base; s < extent && s <= t.register_tile_span; s *= 2)
        sizes.insert(static_cast<int32_t>(s));
  return {sizes.begin(), sizes.end()};
}

TEST_CASE("tile sizes are the ascending union of powers of two and each base's run") {
  Target tabulated = avx2_target(HostCaches{});
  // The target's own bases, several, and one whose run repeats powers of two.
  const std::vector<std::vector<int>> bases = {tabulated.tile_bases, {3, 5}, {4}, {5, 3, 7}, {}};
  for (const std::vector<int> &b : bases) {
    tabulated.tile_bases = b;
    tabulated.tabulate();
    Target computed;  // never tabulated: lists built on each call
    computed.tile_bases = b;
    computed.register_tile_span = tabulated.register_tile_span;
    for (const Target *t : {&tabulated, &computed})
      for (int64_t extent : {0,
                             1,
                             2,
                             3,
                             4,
                             5,
                             6,
                             7,
                             16,
                             17,
                             24,
                             25,
                             96,
                             97,
                             100,
                             129,
                             1000,
                             4096,
                             (1 << 30) + 1,
                             INT32_MAX}) {
        for (bool output_dim : {false, true}) {
          const TileSizes got = t->tile_sizes(extent, output_dim);
          CHECK(std::vector<int32_t>(got.begin(), got.end()) ==
                reference_tile_sizes(*t, extent, output_dim));
        }
      }
  }
}

TEST_CASE("the tabulated best cycles per FMA equal the minimum over every tile that fits") {
  Target tabulated = avx2_target(HostCaches{});
  // Coefficients that make different tiles win (latency-bound, load-bound, loop-heavy).
  for (int variant = 0; variant < 3; ++variant) {
    if (variant == 1) tabulated.coef.fma_latency = 9;
    if (variant == 2) {
      tabulated.coef.loads_per_cycle = 1;
      tabulated.coef.loop_iteration = 7;
    }
    tabulated.tabulate();
    Target computed;  // never tabulated: each answer is a search over tiles
    computed.lanes = tabulated.lanes;
    computed.vregs = tabulated.vregs;
    computed.coef = tabulated.coef;
    for (int64_t m = 1; m <= tabulated.vregs + 3; ++m)
      for (int64_t n = 1; n <= tabulated.vregs * tabulated.lanes + 9; ++n)
        for (bool in_loop : {false, true}) {
          INFO("variant " << variant << ", " << m << " x " << n << ", in loop " << in_loop);
          CHECK(tabulated.best_cycles_per_fma(m, n, in_loop) ==
                computed.best_cycles_per_fma(m, n, in_loop));
        }
  }
}

TEST_CASE("the cache sizes read from CPUID are the ones Linux lists in sysfs") {
  // Linux derives /sys/devices/system/cpu/cpu0/cache from the same CPUID leaves; a decoding
  // mistake (a field off by one, a level taken for another) shows as a difference here.
  const HostCaches host = read_host_caches();
  int compared = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_in(dir + "/level"), type_in(dir + "/type"), size_in(dir + "/size");
    int level = 0;
    std::string type, size;
    if (!(level_in >> level) || !(type_in >> type) || !(size_in >> size)) break;
    if (type == "Instruction" || level < 1 || level > 3) continue;
    const int64_t kib = std::stoll(size);  // sysfs writes "32K", "32768K"
    REQUIRE(size.back() == 'K');
    INFO("level " << level);
    CHECK((level == 1 ? host.l1_bytes : level == 2 ? host.l2_bytes : host.l3_bytes) == kib * 1024);
    ++compared;
  }
  if (compared == 0) MESSAGE("no sysfs cache directories here: nothing to compare");
}

TEST_CASE("operands that fit a cache together live there, larger ones in memory") {
  // A core with a 512 KiB L2, whose usable share (448 KiB) holds 128^3's three 64 KiB
  // operands but not 256^3's three 256 KiB ones.
  const Target t = avx2_target(HostCaches{32 * 1024, 512 * 1024, 32 * 1024 * 1024});
  const Spec mid = matmul_spec(256, 256, 256, false, false, false, 1, t.limits());
  for (const TensorSpec &op : mid.operands) CHECK(op.level == Level::L3);
  // 3 x 64 KiB fit the calling core's L2, which a call on two threads does not all run on;
  // run serially it is on that core again.
  const Spec small = matmul_spec(128, 128, 128, false, false, false, 1, t.limits());
  for (const TensorSpec &op : small.operands) CHECK(op.level == Level::L2);
  const Spec parallel = matmul_spec(128, 128, 128, false, false, false, 2, t.limits());
  for (const TensorSpec &op : parallel.operands) CHECK(op.level == Level::L3);
  const Expansion serial = expand(parallel, Action{ActionKind::Serial}, t);
  CHECK(serial.children[0].spec == small);
  // 4096 x 65536 floats of B: 1 GiB, beyond any last-level cache.
  const Spec big = matmul_spec(1, 65536, 4096, false, false, false, 1, t.limits());
  for (const TensorSpec &op : big.operands) CHECK(op.level == Level::GL);
  MemoryLimits no_l3 = t.limits();
  no_l3.l3_kib = 0;
  CHECK(matmul_spec(256, 256, 256, false, false, false, 1, no_l3).a().level == Level::GL);
}

TEST_CASE("reading from memory: a few long rows at once cost least per line") {
  const Target &t = test::test_target();
  const TensorSpec memory{Level::GL, row_major()};
  // The same 1024 lines as 4 rows of 4096 floats, 1 row of 16384, and 64 rows of 256.
  const double four = t.read_cost(memory, 4, 4096, true);
  const double one = t.read_cost(memory, 1, 16384, true);
  const double many_short = t.read_cost(memory, 64, 256, true);
  CHECK(four < one);
  CHECK(four < many_short);
  // A run start is charged per stored row: column-major tiles count columns.
  const TensorSpec columns{Level::GL, col_major()};
  CHECK(t.read_cost(columns, 4096, 4, true) == doctest::Approx(four));
  // Read one row after another (a copy), rows pay their starts but no side-by-side factor.
  CHECK(t.read_cost(memory, 64, 256, false) < many_short);
  // Inside L2 neither starts nor streams cost anything beyond the lines.
  const TensorSpec l2{Level::L2, row_major()};
  CHECK(t.read_cost(l2, 64, 256, true) ==
        doctest::Approx(t.lines(l2, 64, 256) * t.coef.line_cycles[int(Level::L2)]));
}

TEST_CASE("a walked strip costs a few strided streams, not a run per row") {
  const Target &t = test::test_target();
  TensorSpec strip{Level::L3, row_major(), stride_class(1268)};  // rows in every L1 set
  const double unwalked = t.read_cost(strip, 256, 48, true);
  strip.walked = true;
  // 256 rows of 192 bytes: four streams (a row may straddle a fourth line), started once.
  const double lines = t.lines(strip, 256, 48);
  CHECK(t.read_cost(strip, 256, 48, true) ==
        doctest::Approx(lines * t.coef.line_cycles[int(Level::L3)] * t.coef.walked_line_factor +
                        4 * t.coef.run_start_cycles[int(Level::L3)]));
  CHECK(t.read_cost(strip, 256, 48, true) < unwalked / 2);
  // Staged into L1, its rows cost nothing each; rows that crowd a few sets still do.
  CHECK(t.strided_rows_cost(strip, 256, 48) == 0);
  TensorSpec crowded{Level::L3, row_major(), stride_class(4096)};
  crowded.walked = true;
  CHECK(t.strided_rows_cost(crowded, 256, 48) == doctest::Approx(256 * t.coef.strided_row_cycles));
}

TEST_CASE("operands over half the L3 are taken to come from main memory") {
  // 32 MiB of L3, of which a working set over 16 MiB is read at DRAM speed (usable_l3_share).
  const Target t = avx2_target(HostCaches{48 * 1024, 1024 * 1024, 32 * 1024 * 1024});
  CHECK(matmul_spec(6, 1500, 2000, false, false, false, 1, t.limits()).b().level == Level::L3);
  CHECK(matmul_spec(6, 1703, 3370, false, false, false, 1, t.limits()).b().level == Level::GL);
}

// Where the one-thread plan for an m x n x k product stages B or reads it in interleaved
// chunks: the specs below each such node (only those whose B comes from main memory, if
// `from_memory`). Not empty.
std::vector<Spec> b_stages(int64_t m, int64_t n, int64_t k, bool from_memory) {
  const Target &t = test::test_target();
  InMemoryMemo memo;
  Solver solver(t, memo);
  Plan plan;
  REQUIRE(build_plan(solver, matmul_spec(m, n, k, false, false, false, 1, t.limits()), &plan));
  std::vector<Spec> stages;
  for (const PlanNode &node : plan.nodes)
    if ((node.kind == NodeKind::Stage || node.kind == NodeKind::Interleave) && node.operand == 1 &&
        (!from_memory || node.spec.b().level == Level::GL))
      stages.push_back(plan.nodes[size_t(node.children[0])].spec);
  REQUIRE(!stages.empty());
  return stages;
}

TEST_CASE("a GEMV over B in main memory streams whole rows of B a few at a time") {
  // The plan a GEMV expert writes: no tile of B narrower than its rows, read from memory
  // with at most 16 rows at once (more overflow the prefetchers, see target.h); here, rows of
  // four interleaved chunks of k (interleave_k.cpp).
  for (const Spec &s : b_stages(1, 4096, 4096, true)) {
    CHECK(s.dims[1] == 4096);
    CHECK(s.dims[2] <= 16);
  }
}

TEST_CASE("a GEMV reads whole rows of B wherever B lives") {
  // Under one row of A nothing reuses B (actions.cpp, read_once): its rows stream through
  // the caches whole, whatever their width.
  for (int n : {1000, 2048, 4096}) {
    INFO("n = ", n);
    for (const Spec &s : b_stages(1, n, n, false)) CHECK(s.dims[1] == n);
  }
}

TEST_CASE("a few rows of A over B in main memory read at most 16 of B's rows at once") {
  // Packing more rows of B at a time from memory, each in short runs, overflows the
  // prefetchers (target.h, stream_factor): the plans for 6 to 12 rows take 16.
  for (int m : {6, 8, 12}) {
    INFO("m = ", m);
    for (const Spec &s : b_stages(m, 4096, 4096, true)) CHECK(s.dims[2] <= 16);
  }
}

TEST_CASE("four rows of A over B in main memory read B's rows in place, not packed") {
  // Their tiles add into C in L2 every few k, paying one line transfer a line of C (target.h,
  // accumulate_line_transfers): at two, B was packed for 2x32 tiles, 27-44% slower on the
  // Zen 4 VM. Both L1 sizes of the VMs measured.
  for (const int64_t l1 : {32 * 1024, 48 * 1024}) {
    const Target t = avx2_target(HostCaches{l1, 1024 * 1024, 32 * 1024 * 1024});
    for (auto [k, n] : {std::pair{4096, 4096}, {11008, 4096}}) {
      INFO("L1 ", l1, ", 4x", k, "x", n);
      InMemoryMemo memo;
      Solver solver(t, memo);
      const Spec s = matmul_spec(4, n, k, false, false, false, 1, t.limits());
      REQUIRE(s.b().level == Level::GL);
      Plan plan;
      REQUIRE(build_plan(solver, s, &plan));
      CHECK(plan.workspace_bytes == 0);
    }
  }
}

TEST_CASE("broadcast kernels read A's rows and B's panels from L2, B's rows from L1 only") {
  const Target t = avx2_target(HostCaches{});
  // One k step of a 6x16 register tile.
  auto step = [&](TensorSpec a, TensorSpec b) {
    Spec s;
    s.op = Op::MatmulAccum;
    s.dims = {6, 16, 1};
    s.operands = {a, b, {Level::VRF, vec_rows()}};
    s.limits = t.limits();
    return s;
  };
  const TensorSpec b_panels{Level::L2, panel_cols(16)}, b_rows{Level::L2, row_major()};
  const TensorSpec a_l1{Level::L1, row_major()};
  CHECK(t.kernel_applies(KernelId::FmaBroadcast, step({Level::L2, row_major()}, b_panels)));
  CHECK(t.kernel_applies(KernelId::FmaBroadcast, step({Level::L2, panel_rows(6)}, b_panels)));
  CHECK(t.kernel_applies(KernelId::FmaBroadcast, step(a_l1, {Level::L1, row_major()})));
  // Strided at every k step: B's rows, A's columns. Nor from L3.
  CHECK_FALSE(t.kernel_applies(KernelId::FmaBroadcast, step(a_l1, b_rows)));
  CHECK_FALSE(t.kernel_applies(KernelId::FmaBroadcast, step({Level::L2, col_major()}, b_panels)));
  CHECK_FALSE(t.kernel_applies(KernelId::FmaBroadcast, step(a_l1, {Level::L3, panel_cols(16)})));
  // Streaming from L2 costs its lines beyond what L1 costs: a row of B's panel and 6 floats
  // of A per step.
  const double in_l1 =
      t.kernel_cost(KernelId::FmaBroadcast, step(a_l1, {Level::L1, panel_cols(16)}));
  CHECK(t.kernel_cost(KernelId::FmaBroadcast, step({Level::L2, row_major()}, b_panels)) ==
        doctest::Approx(in_l1 + (1 + 6.0 / 16) * t.coef.l2_stream_line_cycles));
}

TEST_CASE("register tiles under B's panels in L2 run a reduction deeper than L1 holds") {
  // A 16-column panel of B 1024 deep is 64 KiB, twice Zen 4's L1: kernels that read B from
  // L1 only split k, and stored C four times.
  const Target t = avx2_target(HostCaches{32 * 1024, 1024 * 1024, 32 * 1024 * 1024});
  InMemoryMemo memo;
  Solver solver(t, memo);
  Plan plan;
  REQUIRE(
      build_plan(solver, matmul_spec(384, 512, 1024, false, false, false, 1, t.limits()), &plan));
  int tiles = 0;
  for (const PlanNode &node : plan.nodes) {
    CHECK_FALSE((node.kind == NodeKind::Loop && node.dim == 2 && node.spec.dims[0] > 1 &&
                 !node.spec.c().layout.is_register()));
    if (node.kind == NodeKind::Alloc && node.spec.op == Op::Matmul &&
        plan.tensors[static_cast<size_t>(node.new_tensor)].role == PlanTensor::Role::Registers) {
      CHECK(node.spec.dims[2] == 1024);
      ++tiles;
    }
  }
  CHECK(tiles > 0);
}

TEST_CASE("a tile's footprint is its lines rounded up to whole lines") {
  const Target t = avx2_target(HostCaches{});
  std::mt19937_64 rng(23);
  const Layout layouts[] = {row_major(), col_major(), panel_rows(6), panel_cols(16), panel_cols(5)};
  for (int i = 0; i < 20000; ++i) {
    // Small tiles, and extents up to int32's, whose products pass 2^53.
    const int64_t rows = i % 2 ? 1 + int64_t(rng() % 300) : 1 + int64_t(rng() % INT32_MAX);
    const int64_t cols = i % 3 ? 1 + int64_t(rng() % 300) : 1 + int64_t(rng() % INT32_MAX);
    const TensorSpec ts{Level::L2, layouts[rng() % 5]};
    INFO(to_string(ts), " ", rows, "x", cols);
    const double bytes = std::min(std::ceil(t.lines(ts, rows, cols)) * 64, Target::kFootprintCap);
    CHECK(t.footprint(ts, rows, cols) == static_cast<int64_t>(bytes));
  }
}

TEST_CASE("the applicable kernels are those the catalogue says apply") {
  const Target t = avx2_target(HostCaches{});
  std::mt19937_64 rng(29);
  static constexpr uint8_t kStrips[] = {1, 4, 6, 8, 16};
  int any = 0;
  for (int i = 0; i < 20000; ++i) {
    Spec s;
    s.op = Op(rng() % 4);
    s.accumulate = rng() & 1;
    for (int32_t &d : s.dims) d = 1 + int32_t(rng() % 20);
    for (TensorSpec &ts : s.operands)
      ts = {Level(rng() % kLevelCount), Layout{LayoutKind(rng() % 6), kStrips[rng() % 5]}};
    uint32_t expected = 0;
    for (int k = 0; k < kKernelCount; ++k)
      if (t.kernel_applies(KernelId(k), s)) expected |= 1u << k;
    CHECK(t.applicable_kernels(s) == expected);
    any += expected != 0;
  }
  CHECK(any > 1000);
}

}  // namespace

TEST_CASE("a pack reads each source row in one run per group of panels, which memory charges") {
  // Panels a multiple of 4 KiB apart share their lines' L1 set: 8 side by side. 6400 bytes
  // apart, 16 panels fall in 16 different sets (100 lines apart, 64 sets): all 16.
  CHECK(pack_group_panels(16 * 128 * 4) == 8);
  CHECK(pack_group_panels(16 * 64 * 4) == 8);
  CHECK(pack_group_panels(16 * 100 * 4) == 16);
  // So panel buffers whose panels would be a multiple of 4 KiB apart get one more row (B) or
  // column (A) each, and the others none; their buffers hold the padding.
  CHECK(panel_extent(panel_cols(16), 64, 2048) == 65);
  CHECK(panel_extent(panel_cols(16), 128, 512) == 129);
  CHECK(panel_extent(panel_cols(16), 100, 2048) == 100);
  CHECK(panel_extent(panel_rows(6), 12, 512) == 513);
  CHECK(panel_extent(panel_rows(6), 12, 300) == 300);
  CHECK(pack_group_panels(16 * 65 * 4) == 16);
  for (int strip : {3, 6, 8, 16})
    for (int64_t k = 1; k <= 4200; ++k) {
      const int64_t ext = panel_extent(panel_cols(strip), k, 64);
      CHECK(ext - k < 4);
      CHECK(pack_group_panels(4 * strip * ext) == 16);
    }
  CHECK(buffer_elements(panel_cols(16), 64, 2040) == 2048 * 65);
  CHECK(buffer_elements(panel_rows(6), 13, 512) == 18 * 513);
  const Target t = avx2_target(HostCaches{});
  auto pack = [&](Level from, int32_t rows, int32_t cols) {
    Spec move;
    move.op = Op::Move;
    move.dims = {rows, cols, 1};
    move.operands[0] = {from, row_major()};
    move.operands[1] = {Level::L2, panel_cols(16)};
    move.limits = t.limits();
    return t.kernel_cost(KernelId::PackPanels, move);
  };
  // From memory against from L3: the lines and row starts cost more, and 64 rows of 2048
  // floats packed into 128 panels (padded to 65 rows, so not 4 KiB apart) are read in 8 runs
  // a row, 7 of them restarting the row's stream. From L3 restarts are not charged (see
  // target.cpp).
  const double *line = t.coef.line_cycles, *start = t.coef.run_start_cycles;
  const int gl = int(Level::GL), l3 = int(Level::L3);
  auto extra = [&](int32_t cols, double restarts) {
    return t.lines({Level::GL, row_major()}, 64, cols) * (line[gl] - line[l3]) +
           64 * (start[gl] - start[l3]) + restarts * 64 * start[gl];
  };
  CHECK(pack(Level::GL, 64, 2048) - pack(Level::L3, 64, 2048) == doctest::Approx(extra(2048, 7)));
  // 256 columns, 16 panels: one run a row.
  CHECK(pack(Level::GL, 64, 256) - pack(Level::L3, 64, 256) == doctest::Approx(extra(256, 0)));
}

}  // namespace tessel
