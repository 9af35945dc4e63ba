// Target: everything the search knows about the machine. Levels and their capacities, the
// kernel catalogue (when each kernel applies, the registers it needs, what it costs) and the
// cost coefficients. The search is target-agnostic: it only asks these questions and adds
// the answers up. Nothing here is specific to 8 lanes or 16 registers except the values that
// avx2_target() fills in, so an AVX-512 target is another constructor.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels.h"
#include "spec.h"

namespace tessel {

struct HostCaches {
  int64_t l1_bytes = 48 * 1024;  // defaults: the Zen 5 machines this project targets
  int64_t l2_bytes = 1024 * 1024;
  int64_t l3_bytes = 32 * 1024 * 1024;
};
// The data cache sizes of the calling core's L1 and L2 and of its L3 (host_caches.cpp), each
// falling back to its default.
HostCaches read_host_caches();

// Affine cost coefficients, in core cycles.
struct CostCoefficients {
  double fma_per_cycle = 2;  // vector FMAs issued per cycle (Zen 3/4/5: two FMA pipes)
  // Cycles until an FMA result can feed the next FMA: 4 on Zen, plus one for the scheduling
  // slack a loop of dependent FMAs sees in practice (8 chains measured below peak, 12 at it).
  double fma_latency = 5;
  double loads_per_cycle = 2;  // vector loads per cycle (Zen: 2 x 256-bit)
  // Vector loads per cycle in a dot tile, which loads a column of B (k contiguous, columns
  // strided) per FMA. Measured (tessel run --trans-b, one thread): a 1x8 dot step takes ~9
  // cycles, not the 5 that two loads a cycle gave, and at 2 the search read B's columns
  // into one-row dot tiles for 8 and 16 rows too, 10-30% slower than packing B for
  // broadcast tiles (8x4096x4096 36 -> 29 GFLOP/s); at 1 it keeps those and still takes dot
  // tiles for 1 to 4 rows (1x4096x4096 6.5 -> 12 GFLOP/s).
  double dot_loads_per_cycle = 1;
  double stores_per_cycle = 1;  // vector stores per cycle (Zen 3: 1 x 256-bit)
  double masked_extra = 1;      // extra cycles of a vmaskmov* over a plain move (Agner Fog)
  // Cycles per element of a transposing copy (the emitter transposes four k of four rows in
  // registers). Its real cost fell when it stopped moving scalars, but 0.25 and 0.15 here
  // moved the plans of 512^3, 1024^3, 1000^3 and, B transposed, 128x768x768 on two threads,
  // without a gain beyond noise (-2% to +3% by shape).
  double transposed_copy = 0.5;
  // Cycles to bring one 64-byte line to the core from each level, at the best number of rows
  // read side by side (index by Level; VRF and L1 accesses are paid by the kernels). Measured
  // with perf/memory_costs on the 4.1 GHz Zen 5 machines: L2 1.05-1.4, L3 2.5-2.7, DRAM (GL)
  // 7.0-7.8 (a 3.2 GHz Zen 3 gave 2.0, 2.9-3.3 and 7.3-7.6). With L2 at 2 the search staged
  // 1024-column pieces of B's rows straight into L1 for 1x4096x4096; at 1.4 it streams whole
  // rows through L2, 15% faster there and no shape slower (#7 closing note, stop 17).
  double line_cycles[5] = {0, 0, 1.4, 2.7, 7.5};
  // Extra cycles each run of consecutive lines costs when it starts (a tile row that does not
  // continue the previous one): the prefetchers must see a few misses before they run ahead.
  // perf/memory_costs, runs of 1 KiB: ~250 cycles in a random order, ~150 when rows follow a
  // stride (tessel's tiles), DRAM; 45 and ~30 for L3 (Zen 3). On Zen 5, 261-315 cycles from
  // DRAM in a random order; at 250 the GEMVs on two threads read B in longer runs (8 rows of
  // 2048 through L2 rather than of 1024 straight into L1: 1x4096x4096 +6-11%), and
  // 2x4096x4096 +22% on one thread, 1x16384x2048 +11% (paired over 7-9 rounds).
  double run_start_cycles[5] = {0, 0, 0, 30, 250};
  // Line cost factor when 2^i rows are read side by side (i = 0..7), from L3 ([0]) or DRAM
  // ([1]): one or two streams cannot keep enough misses in flight, more than 16 overflow
  // the prefetchers' stream tables (perf/memory_costs on Zen 3: DRAM 1.39 1.10 1.03 1.00
  // 1.16 1.81, L3 1.60 1.22 1.08 1.12 1.00 1.28). Beyond 128 rows each doubling costs
  // another half. On Zen 5 that loop reads DRAM fastest one row at a time (1.00 1.05 1.12
  // 1.20 1.27 1.40), but the GEMV plans do not: factors from it made 1x4096x4096 5% and
  // 8x4096x4096 14% slower, and 4 rows at 1.05 made 1x4096x4096 on two threads take 4 rows
  // of 2048 for 8 of 1024, 18% slower. 1.1 keeps it on eight. Sixteen rows cost 1.2: at
  // 1.1, with DRAM runs starting at 250, 2x4096x4096 on two threads read 16 rows of 2048
  // side by side, 12% slower than 8. From DRAM, 32 rows cost 2: at 1.5, a few rows of A
  // over B in memory packed 32 of B's rows at a time into L1 panels, 384 bytes of each per
  // pack; at 2 they pack 16 (one thread / two, three alternating runs each): 6x4096x4096
  // +19% / +11%, 8x4096x4096 +12% / +8%, 12x4096x4096 +10% / +1%, 8x16384x2048 +17% /
  // +13%, 16x4096x4096 0 / +3%; 24 to 256 rows keep their plans. Raising 64 rows and more
  // from DRAM as well (3 for 64) cost 24x4096x4096 5% and 128x4096x4096 3-7%.
  double stream_factor[2][8] = {{1.4, 1.15, 1.1, 1.0, 1.2, 1.5, 2.25, 3.375},
                                {1.4, 1.15, 1.1, 1.0, 1.2, 2.0, 2.25, 3.375}};
  // Line cost factor of a walked strip (TensorSpec::walked), however many rows: the
  // prefetchers that follow a stride run less far ahead than those that stream runs. At 1.5,
  // 4x2181x1793 (four rows of A: memory-bound) walked 48-column strips of B at 36.7 GFLOP/s
  // against 53.4 reading 16 rows of 2 KiB side by side (7 alternating runs); at 2 it keeps
  // the rows, while 7x2085x1498, 8x807x1265 and 11x2808x317 still walk (README, the k loop).
  double walked_line_factor = 2;
  // Line transfers charged per line of C that a register tile adds into in L2 (the later
  // parts of a k split): the read that brings the line in; writing the dirty line back
  // overlaps the next tiles' work. A tile that overwrites C pays two (read for ownership,
  // write back): at one there too, 48^3 on two threads stopped splitting (its split measured
  // 11-24% faster, fork_join below). At two, four rows of A over B in memory packed B for
  // 2x32 tiles; at one they read B's rows four at a time under 4x24 tiles (the Zen 4 VM,
  // perf/ab_builds, one thread, two runs): 4x4096x4096 +36-44%, 4x2048x2048 +38-41%,
  // 4x4096x11008 +27%, 4x11008x4096 +41-43%; and 16x4096x4096 packs 16 rows of B into L1
  // instead of 256x256 blocks into L2, +14-16% (16x2048x2048 +6-8%). Two threads, medians of
  // alternating processes: 4x4096x4096 +17-23%, 4x2048x2048 +18%, 4x4096x11008 +29%, 16x2048x2048
  // -2% to -12% (a k split now: its 16 MiB B is taken to be in memory, where that split reads
  // each thread's rows whole, but repeated calls keep it in L3; calls taking four such Bs in
  // turn, from memory: +16%). No benchmark shape's plan changes.
  double accumulate_line_transfers = 1;
  double loop_iteration = 0.5;  // counter update, compare, branch, pointer bumps
  // Extra cycles per row when a tile of a wide-strided user matrix is read into L1 (set
  // aliasing, a page per row). Measured: with it the search packs A at 512^3 and 1024^3 and
  // runs 8-12% faster there (interleaved A/B runs, see the #3 closing note); 256^3 is narrow.
  double strided_row_cycles = 8;
  // The share of a staged A or B tile's reads that may hide behind its body's FMAs (the cores
  // run ahead out of order and the prefetchers stream rows, while the model adds costs up):
  // at most this much, and at most the body's FMA cycles. Paired, same library: 33x1111x777
  // +16% on 1 and 2 threads (it stages B unpacked instead of packing it), 129^3 on two
  // threads +10%, 128^3 and 64^3 on two +2%, 1000^3 and the GEMVs unchanged; 0.75 hid no more.
  // Packs from main memory hide the same share (pack.cpp), paired, 5-7 runs: 237x1756x3294
  // packs 256-row tiles of B again instead of staging 128 rows unpacked, 91 -> 103 GFLOP/s
  // on one thread and 144-148 -> 192 on two; 128x2048x2048 +5% on two threads; four other
  // shapes of 9-16 MiB over 500 rows within -1.5 to +2%; no benchmark shape's plan changes.
  double staged_read_hidden = 0.5;
  // Cycles per 64-byte line a register tile reads straight from L2 (Target::kernels_read)
  // beyond what its FMAs hide. A 6x16 tile reads 88 bytes per k step of 6 cycles, far less
  // than L2 delivers, in a few sequential streams the prefetchers follow, so the FMAs hide
  // most of it; what remains makes a tile of A reused from L1 worth staging. Before kernels
  // could read L2, a register tile needed its panel of B in L1, so k was split to 256 (16 KiB
  // of a 16-wide panel) and C read and written four times at 1024^3; now the tiles run the
  // whole k. Paired (perf/ab_builds, one thread, three runs) against the L1-only kernels:
  // 1024^3 +1.7 to +3.1%, 1000^3 +2.2%, 512^3 +1.6 to +2.2%, 32x768x3072 +0.7 to +2.3%,
  // 128x768x768 +0.2 to +1%, 512x768x3072 -0.4 to +2.3%; no other benchmark shape moved. At
  // 0 the search stopped staging A in L1 at all (as fast here); at 0.5 it split k again. At
  // 0.1, 128x768x768 ran its whole k too (+2% on one and two threads), but 12x4096x4096 read
  // 64 rows of B from memory at a time, 12% slower; 0.15 for packed panels alone cost 256^3
  // and 1000^3 on two threads 1.2-1.4%.
  double l2_stream_line_cycles = 0.25;
  // A parallel loop's start and join on tessel's team (runtime/team.h), beyond the work.
  // perf/fork_join, back-to-back calls with 2-20 us of work, on the Zen 5 VMs (3.49 GHz):
  // 0.33-0.38 us (1150-1350 cycles) at quiet times, 0.72-0.75 us (2450-2530) at others (the
  // same VM hours apart; 1.1-1.3 us before the loop was published on one line). At 6000 the
  // search kept 64^3 on one thread; at 4000, 48^3 too. At 2500 it splits 48^3 (30 + 18 rows),
  // 27x81x58, 64x32x64 and 80x16x80, 11-24% faster on two threads even when the fork and join took
  // 0.72 us (medians of 7 alternating runs: 48^3 113.8 -> 130.7 GFLOP/s, 27x81x58 109.6 -> 131.2),
  // and 32^3 and 17x33x65 stay on one. Lower, more splits survive the bounds: at 1500, 17x33x65
  // solved 4x the specs. Since the team polls after each PAUSE the Zen 4 VM measures 0.20-0.24
  // us (780-860 cycles at 3.69 GHz); at 800 no benchmark shape's plan changes (one or two
  // threads) while two-thread searches of small shapes solve up to 4x the specs (32^3 2.1 ->
  // 9.4 ms, 17x33x65 12 -> 43 ms), so it stays at 2500.
  double fork_join = 2500;
  // How much later than the calling thread a helper starts its tile and is seen to end it,
  // within fork_join. On two threads the caller runs the grid's first tile and the helper its
  // last, so a first tile up to this much longer costs nothing (parallel_tile.cpp). It
  // follows how fast two cores trade a cache line: 240 ns on the Zen 5 VM (a lag of 1600
  // measured there, when the team still polled after eight PAUSEs), ~30 ns on the Zen 4 VM,
  // where perf/fork_join (which prints it) gives 780-800 cycles and 64^3 and 48^3 start their
  // helper 0.08-0.10 us late and see it done 0.06-0.07 us late (rdtsc around each tile).
  // There, at 1600 48^3 split 30 + 18 rows and 64^3 36 + 28, at 800 26 + 22 and 32 + 32:
  // forced splits, 10 rounds of alternating processes, 48^3 30+18 163, 28+20 176, 26+22 188,
  // 24+24 190 GFLOP/s; 64^3 36+28 187, 34+30 200, 32+32 204. TESSEL_HELPER_LAG sets it for a
  // host whose cores are farther apart.
  double helper_lag = 800;
};

// Tile sizes for one extent, ascending: a prefix of the target's tabulated list, or (for a
// target not tabulated) a list with its storage inline. The solver asks for one per spec and
// dimension: a heap vector each time cost a tenth of the search, and building even the inline
// list a twentieth.
class TileSizes {
 public:
  TileSizes() = default;
  // The first `n` sizes of `table`, which must outlive this list.
  TileSizes(const int32_t *table, size_t n) : table_(table), n_(n) {}
  // Inserts in order; a size already present is not repeated.
  void insert(int32_t v);
  const int32_t *begin() const { return table_ ? table_ : v_.data(); }
  const int32_t *end() const { return begin() + n_; }
  size_t size() const { return n_; }
  int32_t operator[](size_t i) const { return begin()[i]; }

 private:
  const int32_t *table_ = nullptr;
  std::array<int32_t, 64> v_;  // 31 powers of two and a few multiples of each base
  size_t n_ = 0;
};

struct Target {
  std::string name;
  int lanes = 8;   // f32 elements per vector register
  int vregs = 16;  // vector registers
  HostCaches caches;
  // Share of each cache the search lets its tiles occupy: the rest is for C tiles, stack,
  // code and associativity conflicts. 7/8 since packs count the source block they stream
  // (pack.cpp): against 3/4, paired on Zen 5, the 17 benchmark plans that change gain 0-3%
  // (256^3 on two threads +3%, 129^3 on one +2.7%), none loses; a whole cache (1.0) was
  // -1% to +3% against 7/8.
  double usable_cache_share = 0.875;
  // Share of the L3 a call's operands may take and still be found there by the next call
  // (home_level). The Zen 5 VMs report 32 MiB, shared with other machines' cores: a working
  // set read over and over costs 2.3-2.8 cycles a line up to 14 MiB, 3.1 at 20, 3.6 at 24,
  // 7.0 at 64 (perf/memory_costs, "working set"). Operands of 16 to 28 MiB, taken to be in
  // L3 at 7/8, came from main memory; planned for it, one thread: 6x3370x1703 29 -> 87
  // GFLOP/s, 10x1789x2813 40 -> 81, 32x2139x1945 77 -> 102, 512x768x3072 +1.5% (README).
  double usable_l3_share = 0.5;
  CostCoefficients coef;
  std::vector<int> panel_row_strips;  // heights of packed A panels
  std::vector<int> panel_col_strips;  // widths of packed B panels
  std::vector<int> tile_bases;        // tile sizes are powers of two, and base * 2^j ...
  int register_tile_span = 0;         // ... up to this size
  int min_blocking_tile = 1;          // smallest cache-blocking tile (see tiling.cpp)

  MemoryLimits limits() const;
  // Tile sizes the search tries for a dimension of this extent, ascending, all < extent.
  // Output dimensions also get the register-friendly multiples of tile_bases; the reduction
  // has no register shape to fit, so it gets powers of two only.
  TileSizes tile_sizes(int64_t extent, bool output_dim = true) const;

  // The kernel catalogue interface.
  // Whether the multiply kernels read `operand` (0: A, 1: B) where `t` says it lives: from
  // L1, or streamed from L2 when each k step reads on where the last one stopped (A's rows or
  // panels, B's column panels). B's rows are a stride apart at every k step: read from L2
  // they ran at half speed (1024^3: 50 GFLOP/s), so B in rows is staged into L1 first.
  bool kernels_read(int operand, const TensorSpec &t) const;
  bool kernel_applies(KernelId k, const Spec &s) const;
  int kernel_registers(KernelId k, const Spec &s) const;
  double kernel_cost(KernelId k, const Spec &s) const;
  // Bit k set when kernel_applies(KernelId(k), s): every spec asks for its leaves, and most
  // (a Matmul, C in memory) have none, which one test of the op tells.
  uint32_t applicable_kernels(const Spec &s) const;

  // A cheap lower bound on the cost of any plan for `s`: its multiply-adds at full vector
  // width, plus compulsory traffic (every operand's lines once from where it lives). The
  // solver's branch and bound relies on it never exceeding the true optimum.
  double lower_bound(const Spec &s) const;
  // Its first term: the fewest cycles the multiply kernels of any plan for `s` take.
  double fma_bound(const Spec &s) const;
  // The part of `reads`, a staged or packed tile of A or B, that hides behind the FMAs of the
  // body multiplying it, `s`: a share of them (CostCoefficients::staged_read_hidden), at
  // most those FMA cycles.
  double hidden_reads(const Spec &s, double reads) const;
  // Fewest cycles per vector FMA any register tile inside an m x n output can reach, with
  // the k loop's iteration cost when the kernel runs in one.
  double best_cycles_per_fma(int64_t m, int64_t n, bool in_loop) const;
  // Precomputes what the solver asks often. Call after changing any field above.
  void tabulate();

  // Vector registers a register tensor of this shape occupies.
  int register_count(Layout l, int64_t rows, int64_t cols) const;
  // 64-byte lines a rows x cols tile of this tensor touches (expected value for user
  // memory of unknown alignment; exact for our 64-byte-aligned packed buffers).
  double lines(const TensorSpec &t, int64_t rows, int64_t cols) const;
  // The per-row cost of reading a tile of a wide-strided user matrix into L1 (0 otherwise).
  double strided_rows_cost(const TensorSpec &t, int64_t rows, int64_t cols) const;
  // Cycles to bring a rows x cols tile of `t` in from where it lives: its lines, a start per
  // stored row, and, when the body reads its rows `side_by_side` (a staged tile under a
  // register tile), the stream factor of that many rows at once.
  double read_cost(const TensorSpec &t, int64_t rows, int64_t cols, bool side_by_side) const;
  // Cycles to read a tile of C in from where it lives, row by row, and write it back once: what
  // keeping it closer while a loop revisits it costs.
  double round_trip_cost(const TensorSpec &t, int64_t rows, int64_t cols) const;
  // Line transfers a register tile's store pays per line of C at `level`: read for ownership
  // and written back, or only read where it adds into C in L2 (accumulate_line_transfers).
  double c_line_transfers(bool adds, Level level) const {
    return adds && level == Level::L2 ? coef.accumulate_line_transfers : 2;
  }
  // Bytes of cache a tile occupies (whole lines), at most kFootprintCap.
  static constexpr double kFootprintCap = 0x1p62;
  int64_t footprint(const TensorSpec &t, int64_t rows, int64_t cols) const;
  // The L1 a tile takes, when its wide-strided rows start in fewer than all of L1's sets
  // (TensorSpec::stride_class): those sets fill first, so as much as if every set held as
  // many of its lines as the fullest one. Otherwise its footprint.
  int64_t crowded_footprint(const TensorSpec &t, int64_t rows, int64_t cols) const;

 private:
  double compute_best_cycles_per_fma(int64_t m, int64_t n, bool in_loop) const;
  // Cycles of one k step of a register tile of rows x width FMAs (broadcast: width vectors;
  // dot: width columns).
  double tile_cycles(int64_t rows, int64_t width) const;
  TileSizes compute_tile_sizes(int64_t extent, bool output_dim) const;
  std::vector<double> fma_cost_table_;
  // Every output tile size for the largest extent: the list for an extent is its prefix of
  // the sizes below that extent.
  std::vector<int32_t> tile_size_table_;
};

Target avx2_target(const HostCaches &caches);

}  // namespace tessel
