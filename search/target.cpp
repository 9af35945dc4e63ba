#include "target.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <string>

namespace tessel {

const char *kernel_name(KernelId k) {
  switch (k) {
#define TESSEL_KERNEL_NAME(id, name, doc) \
  case KernelId::id:                      \
    return name;
    TESSEL_KERNELS(TESSEL_KERNEL_NAME)
#undef TESSEL_KERNEL_NAME
  }
  return "?";
}

Target avx2_target(const HostCaches &caches) {
  Target t;
  t.name = "avx2";
  t.lanes = 8;
  t.vregs = 16;
  t.caches = caches;
  // Packed panels for the 6x16 register tile (12 accumulators, 2 B vectors, a broadcast),
  // as BLIS's Haswell sgemm. Offering 4-row and 24-column panels too (for 4x24 tiles) changed
  // the best modelled cost of the benchmark shapes by at most 1.5%, and doubled the specs the
  // search solves (every packed class of A times every one of B).
  t.panel_row_strips = {6};
  t.panel_col_strips = {16};
  // Besides powers of two, three times powers of two up to register-tile spans, so 6-row and
  // 24-column register tiles tile their parents without remainders. Five times powers of two
  // as well (2x40 tiles, no 4x16 remainder at 64^3) cost 64^3 0.5% and doubled the specs
  // 1000^3's search solves.
  t.tile_bases = {3};
  t.register_tile_span = t.lanes * 12;
  // Cache blocks are at least two vectors wide: narrower blocks only add loop and staging
  // overhead to what a register tile does anyway.
  t.min_blocking_tile = 2 * t.lanes;
  t.tabulate();
  return t;
}

MemoryLimits Target::limits() const {
  // Spec keys hold L1 in 16 bits and L2, L3 in 24 bits of KiB (64 MiB, 16 GiB).
  auto kib = [&](int64_t bytes, uint32_t max, double share) {
    return std::min(max, static_cast<uint32_t>(static_cast<double>(bytes) * share / 1024));
  };
  return MemoryLimits{static_cast<uint32_t>(vregs),
                      kib(caches.l1_bytes, 0xffff, usable_cache_share),
                      kib(caches.l2_bytes, 0xffffff, usable_cache_share),
                      kib(caches.l3_bytes, 0xffffff, usable_l3_share)};
}

void TileSizes::insert(int32_t v) {
  size_t i = n_;
  while (i > 0 && v_[i - 1] > v) --i;
  if ((i > 0 && v_[i - 1] == v) || n_ == v_.size()) return;
  for (size_t j = n_; j > i; --j) v_[j] = v_[j - 1];
  v_[i] = v;
  ++n_;
}

TileSizes Target::tile_sizes(int64_t extent, bool output_dim) const {
  if (tile_size_table_.empty()) return compute_tile_sizes(extent, output_dim);
  if (!output_dim) {
    // The powers of two below the extent, which open the table.
    static constexpr std::array<int32_t, 31> kPowers = [] {
      std::array<int32_t, 31> p{};
      for (int i = 0; i < 31; ++i) p[i] = int32_t{1} << i;
      return p;
    }();
    const size_t n = extent > 1 ? std::bit_width(static_cast<uint64_t>(extent - 1)) : 0;
    return TileSizes(kPowers.data(), std::min(n, kPowers.size()));
  }
  const auto end = std::lower_bound(tile_size_table_.begin(), tile_size_table_.end(), extent);
  return TileSizes(tile_size_table_.data(), static_cast<size_t>(end - tile_size_table_.begin()));
}

TileSizes Target::compute_tile_sizes(int64_t extent, bool output_dim) const {
  TileSizes sizes;
  for (int64_t s = 1; s < extent; s *= 2) sizes.insert(static_cast<int32_t>(s));
  if (output_dim)
    for (int base : tile_bases)
      for (int64_t s = base; s < extent && s <= register_tile_span; s *= 2)
        sizes.insert(static_cast<int32_t>(s));
  return sizes;
}

int Target::register_count(Layout l, int64_t rows, int64_t cols) const {
  if (l.kind == LayoutKind::VecRows) return static_cast<int>(rows * ((cols + lanes - 1) / lanes));
  if (l.kind == LayoutKind::VecDot) return static_cast<int>(rows * cols);
  return 0;
}

double Target::lines(const TensorSpec &t, int64_t rows, int64_t cols) const {
  const double elem = 4;  // f32
  switch (t.layout.kind) {
    case LayoutKind::RowMajor:
      return rows == 1 ? (cols * elem + 60) / 64 : rows * ((cols * elem + 60) / 64);
    case LayoutKind::ColMajor:
      return cols == 1 ? (rows * elem + 60) / 64 : cols * ((rows * elem + 60) / 64);
    case LayoutKind::PanelRows:
    case LayoutKind::PanelCols:
      return std::ceil(buffer_elements(t.layout, rows, cols) * elem / 64);
    case LayoutKind::VecRows:
    case LayoutKind::VecDot:
      return 0;
  }
  return 0;
}

double Target::strided_rows_cost(const TensorSpec &t, int64_t rows, int64_t cols) const {
  // A walked strip's rows that spread over every set are read as the prefetchers' strided
  // streams, a line or two each (TensorSpec::walked).
  if (!t.wide_stride() || (t.walked && t.set_spread_log2() == TensorSpec::kAllSetsLog2)) return 0;
  const int64_t stored_rows = t.layout.kind == LayoutKind::RowMajor ? rows : cols;
  return stored_rows > 1 ? coef.strided_row_cycles * static_cast<double>(stored_rows) : 0;
}

// Rows (or columns, column-major) stored one after another: each is a run of its own.
static int64_t stored_rows(const TensorSpec &t, int64_t rows, int64_t cols) {
  switch (t.layout.kind) {
    case LayoutKind::RowMajor:
      return rows;
    case LayoutKind::ColMajor:
      return cols;
    default:
      return 1;  // packed buffers are contiguous
  }
}

double Target::read_cost(const TensorSpec &t, int64_t rows, int64_t cols, bool side_by_side) const {
  const int level = static_cast<int>(t.level);
  int64_t runs = stored_rows(t, rows, cols);
  double factor = 1;
  if (t.walked && side_by_side && runs > 1) {
    // A walked strip under register tiles is a few strided streams, one per line a row
    // spans, started once for the whole walk rather than once per row.
    runs = std::min(runs, static_cast<int64_t>(std::ceil(lines(t, rows, cols) / runs)));
    factor = coef.walked_line_factor;
  } else if (side_by_side && t.level >= Level::L3) {
    int i = 0;
    while (i < 7 && (int64_t{1} << (i + 1)) <= runs) ++i;
    factor = coef.stream_factor[t.level == Level::GL][i];
    for (int64_t r = int64_t{256}; r <= runs && factor < 4; r *= 2) factor *= 1.5;
  }
  return lines(t, rows, cols) * coef.line_cycles[level] * factor +
         static_cast<double>(runs) * coef.run_start_cycles[level];
}

double Target::round_trip_cost(const TensorSpec &t, int64_t rows, int64_t cols) const {
  return read_cost(t, rows, cols, /*side_by_side=*/false) +
         lines(t, rows, cols) * coef.line_cycles[static_cast<int>(t.level)];
}

int64_t Target::crowded_footprint(const TensorSpec &t, int64_t rows, int64_t cols) const {
  const int64_t whole_lines = footprint(t, rows, cols);
  if (t.set_spread_log2() == TensorSpec::kAllSetsLog2) return whole_lines;
  // Rows start in 2^spread sets `gap` sets apart, each set taking every 2^spread-th row, and a
  // row of `span` lines covers the sets of ceil(span / gap) starts: the fullest set holds
  // that many rows' lines. (A row as wide as a way covers every set anyway.)
  const bool row_major = t.layout.kind == LayoutKind::RowMajor;
  const int64_t stored = row_major ? rows : cols, width_bytes = 4 * (row_major ? cols : rows);
  const int64_t spread = int64_t{1} << t.set_spread_log2(), gap = kL1Sets / spread;
  const int64_t span = std::min(width_bytes / kLineBytes + 1, kL1Sets);  // unknown alignment
  const int64_t fullest =
      (stored + spread - 1) / spread * std::min({spread, stored, (span + gap - 1) / gap});
  return std::max(whole_lines, fullest * kL1WayBytes);
}

int64_t Target::footprint(const TensorSpec &t, int64_t rows, int64_t cols) const {
  if (t.layout.is_register()) return 0;
  // Every staging and packing variant of every spec asks this. lines() is a multiple of 1/16
  // here (a 64-byte line holds 16 elements): in integers below 2^53, where lines() is exact,
  // its ceiling is a division rounding up.
  constexpr int64_t kExact = int64_t{1} << 53;
  int64_t sixteenths = -1;  // lines() * 16
  switch (t.layout.kind) {
    case LayoutKind::RowMajor:
      if (rows < kExact / (cols + 16)) sixteenths = rows * (cols + 15);
      break;
    case LayoutKind::ColMajor:
      if (cols < kExact / (rows + 16)) sixteenths = cols * (rows + 15);
      break;
    case LayoutKind::PanelRows:
    case LayoutKind::PanelCols: {
      const int64_t elements = buffer_elements(t.layout, rows, cols);
      if (elements < kExact / 4) sixteenths = elements;
      break;
    }
    default:
      break;
  }
  if (sixteenths >= 0) return (sixteenths + 15) / 16 * 64;
  // Far beyond any cache: whole lines in double, saturated so that no extent overflows.
  const double bytes = std::ceil(lines(t, rows, cols)) * 64;
  return bytes < kFootprintCap ? static_cast<int64_t>(bytes) : static_cast<int64_t>(kFootprintCap);
}

double Target::best_cycles_per_fma(int64_t m, int64_t n, bool in_loop) const {
  const int64_t rows = std::min<int64_t>(m, vregs), cols = std::min<int64_t>(n, vregs * lanes);
  if (fma_cost_table_.empty()) return compute_best_cycles_per_fma(rows, cols, in_loop);
  return fma_cost_table_[static_cast<size_t>(((rows - 1) * vregs * lanes + cols - 1) * 2 +
                                             in_loop)];
}

void Target::tabulate() {
  tile_size_table_.clear();
  const TileSizes all = compute_tile_sizes(int64_t{1} << 31, true);
  tile_size_table_.assign(all.begin(), all.end());
  fma_cost_table_.clear();
  // The best tile inside m x n is a minimum over the tiles that fit, of at most m rows and
  // at most ceil(n / lanes) vectors (broadcast) or min(n, vregs) columns (dot, whose cost per
  // FMA has the form of a broadcast tile's outside a loop): prefix minima over rows and
  // width give every entry at once. Every process builds this before its first call can
  // replay a stored plan; asking compute_best_cycles_per_fma for each entry took 2.7M
  // instructions.
  const int64_t span = vregs;  // rows and width both stop at the register file
  auto at = [&](int64_t r, int64_t w) { return static_cast<size_t>((r - 1) * span + w - 1); };
  std::vector<double> best[2];  // by in_loop
  for (int in_loop = 0; in_loop < 2; ++in_loop) {
    const double overhead = in_loop ? coef.loop_iteration : 0;
    best[in_loop].assign(static_cast<size_t>(span * span), 1e30);
    for (int64_t r = 1; r <= span; ++r)
      for (int64_t w = 1; w <= span; ++w) {
        double b = std::min(r > 1 ? best[in_loop][at(r - 1, w)] : 1e30,
                            w > 1 ? best[in_loop][at(r, w - 1)] : 1e30);
        if (r * w + w + 1 <= vregs) b = std::min(b, (tile_cycles(r, w) + overhead) / double(r * w));
        best[in_loop][at(r, w)] = b;
      }
  }
  std::vector<double> table;
  table.reserve(static_cast<size_t>(vregs * vregs * lanes * 2));
  for (int64_t m = 1; m <= vregs; ++m)
    for (int64_t n = 1; n <= vregs * lanes; ++n)
      for (int in_loop = 0; in_loop < 2; ++in_loop) {
        const int64_t vectors = std::min<int64_t>((n + lanes - 1) / lanes, vregs);
        const int64_t columns = std::min<int64_t>(n, vregs);
        const double b = std::min(best[in_loop][at(m, vectors)], best[0][at(m, columns)]);
        table.push_back(b == 1e30 ? 1 / coef.fma_per_cycle : b);
      }
  fma_cost_table_ = std::move(table);
}

double Target::tile_cycles(int64_t rows, int64_t width) const {
  // rows x width FMAs a step, issued fma_per_cycle at a time, no faster than one FMA's
  // latency, and rows + width loads.
  return std::max({double(rows * width) / coef.fma_per_cycle, coef.fma_latency,
                   double(rows + width) / coef.loads_per_cycle});
}

double Target::compute_best_cycles_per_fma(int64_t m, int64_t n, bool in_loop) const {
  const double overhead = in_loop ? coef.loop_iteration : 0;  // a k-loop iteration per call
  // Register tiles inside an m x n output are at most that big; small ones cannot hide the
  // FMA latency or saturate the load ports. Take the best tile that fits (either kernel).
  const int64_t max_rows = std::min<int64_t>(m, vregs);
  const int64_t max_vectors = std::min<int64_t>((n + lanes - 1) / lanes, vregs);
  double best = 1e30;
  for (int64_t r = 1; r <= max_rows; ++r)
    for (int64_t v = 1; v <= max_vectors && r * v + v + 1 <= vregs; ++v)
      best = std::min(best, (tile_cycles(r, v) + overhead) / double(r * v));
  // A dot tile (its k loop may be absent, so no overhead is assumed) of r x c elements: r*c FMAs
  // per call, r + c loads.
  for (int64_t r = 1; r <= max_rows; ++r)
    for (int64_t c = 1; c <= std::min<int64_t>(n, vregs) && r * c + c + 1 <= vregs; ++c)
      best = std::min(best, tile_cycles(r, c) / double(r * c));
  return best == 1e30 ? 1 / coef.fma_per_cycle : best;
}

double Target::fma_bound(const Spec &s) const {
  if (!s.is_matmul()) return 0;
  const double m = s.dims[0], n = s.dims[1], k = s.dims[2];
  // The broadcast kernels spend ceil(n / lanes) FMAs per row and k step; the dot kernel
  // ceil(k / lanes) per element. Each needs at least that many FMA issue slots.
  const double fmas = std::min(m * std::ceil(n / lanes) * k, m * n * std::ceil(k / lanes));
  // With k > 1 every multiply kernel runs in a loop over k and pays an iteration each.
  return fmas * best_cycles_per_fma(s.dims[0], s.dims[1], k > 1);
}

double Target::hidden_reads(const Spec &s, double reads) const {
  return std::min(reads * coef.staged_read_hidden, fma_bound(s));
}

double Target::lower_bound(const Spec &s) const {
  if (!s.is_matmul()) return 0;
  const double m = s.dims[0], n = s.dims[1];
  double bound = fma_bound(s);
  // Every element of C in memory is stored at least once, a vector at a time.
  if (!s.c().layout.is_register()) bound += m * std::ceil(n / lanes) / coef.stores_per_cycle;
  for (int i = 0; i < 3; ++i) {
    const TensorSpec &t = s.operands[i];
    if (t.layout.is_register() || t.level == Level::L1) continue;
    // C is read for ownership and written back once at least (c_line_transfers); A and B are read
    // once at least, of which staging may hide a share behind the FMAs (stage.cpp), or the kernels
    // read each of their bytes from L2 once at least.
    double read = (i == 2 ? c_line_transfers(s.op == Op::MatmulAccum, t.level)
                          : 1 - coef.staged_read_hidden) *
                  lines(t, s.rows(i), s.cols(i)) * coef.line_cycles[static_cast<int>(t.level)];
    if (i < 2 && kernels_read(i, t))
      read = std::min(
          read, static_cast<double>(s.rows(i) * s.cols(i)) * 4 / 64 * coef.l2_stream_line_cycles);
    bound += read;
  }
  return bound;
}

// ---- the kernel catalogue ------------------------------------------------------------------

namespace {

bool in_memory(const TensorSpec &t) {
  return t.level != Level::VRF && !t.layout.is_register();
}
// Whether each lanes-wide piece of a row of n elements is one plain vector load: rows are
// contiguous, or panels are whole vectors wide (each vector then has its own constant offset).
bool vector_rows(const Layout &l, int64_t n, int lanes) {
  return l.contiguous_axis1(n) || (l.kind == LayoutKind::PanelCols && l.strip % lanes == 0);
}

bool user_layout(const Layout &l) {
  return l.kind == LayoutKind::RowMajor || l.kind == LayoutKind::ColMajor;
}

// Lines one k step of a broadcast tile reads straight from L2: an element of each row of A (a
// row of A's panel), and the panels of B it spans, a row of each.
double l2_stream_lines(const Spec &s) {
  constexpr double kElem = 4.0 / 64;
  double lines = 0;
  if (s.a().level == Level::L2)
    lines += kElem * (s.a().layout.kind == LayoutKind::PanelRows ? s.a().layout.strip : s.dims[0]);
  if (s.b().level == Level::L2) {
    const int64_t strip = s.b().layout.strip;
    lines += kElem * static_cast<double>((s.dims[1] + strip - 1) / strip * strip);
  }
  return lines;
}

}  // namespace

bool Target::kernels_read(int operand, const TensorSpec &t) const {
  if (t.level == Level::L1) return true;
  if (t.level != Level::L2) return false;
  return operand == 0
             ? t.layout.kind == LayoutKind::RowMajor || t.layout.kind == LayoutKind::PanelRows
             : t.layout.kind == LayoutKind::PanelCols;
}

bool Target::kernel_applies(KernelId k, const Spec &s) const {
  if (s.dtype != Dtype::F32) return false;
  const int64_t n = s.dims[1], kk = s.dims[2];
  bool shape_ok = false;
  switch (k) {
    case KernelId::FmaBroadcast:
      // A single column is FmaScalar's: the same FMAs without a broadcast for each.
      shape_ok = s.op == Op::MatmulAccum && kk == 1 && n > 1 &&
                 s.c().layout.kind == LayoutKind::VecRows && kernels_read(0, s.a()) &&
                 kernels_read(1, s.b()) && vector_rows(s.b().layout, n, lanes);
      break;
    case KernelId::FmaScalar:
      shape_ok = s.op == Op::MatmulAccum && kk == 1 && n == 1 &&
                 s.c().layout.kind == LayoutKind::VecRows && s.a().level == Level::L1 &&
                 s.b().level == Level::L1;
      break;
    case KernelId::FmaDot:
      shape_ok = s.op == Op::MatmulAccum && kk <= lanes &&
                 s.c().layout.kind == LayoutKind::VecDot && s.a().level == Level::L1 &&
                 s.b().level == Level::L1 && s.a().layout.contiguous_axis1(kk) &&
                 s.b().layout.contiguous_axis0(kk);
      break;
    case KernelId::ZeroRegisters:
      shape_ok = s.op == Op::Zero && s.operands[0].layout.is_register();
      break;
    case KernelId::ZeroMemory:
      shape_ok = s.op == Op::Zero && in_memory(s.operands[0]) &&
                 s.operands[0].layout.kind == LayoutKind::RowMajor;
      break;
    case KernelId::StoreRows:
      shape_ok = s.op == Op::Move && s.operands[0].layout.kind == LayoutKind::VecRows &&
                 in_memory(s.operands[1]) && s.operands[1].layout.kind == LayoutKind::RowMajor;
      break;
    case KernelId::StoreDot:
      shape_ok = s.op == Op::Move && s.operands[0].layout.kind == LayoutKind::VecDot &&
                 in_memory(s.operands[1]) && s.operands[1].layout.kind == LayoutKind::RowMajor;
      break;
    case KernelId::PackPanels:
      shape_ok = s.op == Op::Move && !s.accumulate && in_memory(s.operands[0]) &&
                 user_layout(s.operands[0].layout) && s.operands[1].layout.is_panel();
      break;
  }
  return shape_ok && kernel_registers(k, s) <= vregs;
}

uint32_t Target::applicable_kernels(const Spec &s) const {
  // The kernels whose case in kernel_applies accepts this op (each requires its op first).
  static constexpr uint32_t kByOp[] = {
      0,  // Matmul: split into Zero and MatmulAccum first
      1u << int(KernelId::FmaBroadcast) | 1u << int(KernelId::FmaScalar) |
          1u << int(KernelId::FmaDot),
      1u << int(KernelId::ZeroRegisters) | 1u << int(KernelId::ZeroMemory),
      1u << int(KernelId::StoreRows) | 1u << int(KernelId::StoreDot) |
          1u << int(KernelId::PackPanels),
  };
  uint32_t mask = 0;
  for (uint32_t candidates = kByOp[static_cast<int>(s.op)]; candidates != 0;
       candidates &= candidates - 1) {
    const int k = std::countr_zero(candidates);
    if (kernel_applies(KernelId(k), s)) mask |= 1u << k;
  }
  return mask;
}

int Target::kernel_registers(KernelId k, const Spec &s) const {
  const int64_t m = s.dims[0], n = s.dims[1], kk = s.dims[2];
  const int nv = static_cast<int>((n + lanes - 1) / lanes);
  // vmaskmovps needs its mask in a register (edges of 1, 2 or 4 floats take none, kernels.h)
  const int n_mask = edge_needs_mask(n % lanes) ? 1 : 0;
  switch (k) {
    case KernelId::FmaBroadcast:  // C, the B row, one broadcast, the edge mask
      // A single row needs fewer (its FMAs read B from memory, fma_broadcast.cpp). Counted
      // so, the search took one-row tiles up to 96 wide as the rows of taller problems,
      // re-reading B for each (2x1024x1024 -34%, 8x4096x4096 -4%); with one-row tiles barred
      // from repeating over rows, GEMVs from cache lost 2-4% for 1-5% over main memory.
      // libxsmm's order (rows' broadcasts held, B through one register: 3x32 fits) is not
      // offered: +5% at 8x4096x4096, but -15% on a user B 16 bytes past a line (96x256x96)
      // and -14% where near-tie plans staged an L2 panel of B into L1 (16x2048x2048).
      return static_cast<int>(m) * nv + nv + 1 + n_mask;
    case KernelId::FmaScalar:
      return static_cast<int>(m) + 2;
    case KernelId::FmaDot:  // C, the smaller side held (A rows or B columns), one of the
                            // other streaming, the k-edge mask
      return static_cast<int>(m * n + std::min(m, n) + 1) + (edge_needs_mask(kk % lanes) ? 1 : 0);
    case KernelId::ZeroRegisters:
      return register_count(s.operands[0].layout, s.dims[0], s.dims[1]);
    case KernelId::ZeroMemory:
      return 1;
    case KernelId::StoreRows:
    case KernelId::StoreDot:  // the tile, alpha, a temporary, the edge mask
      return register_count(s.operands[0].layout, s.dims[0], s.dims[1]) + 3;
    case KernelId::PackPanels:
      return 2;
  }
  return 0;
}

double Target::kernel_cost(KernelId k, const Spec &s) const {
  const CostCoefficients &c = coef;
  const double m = s.dims[0], n = s.dims[1], kk = s.dims[2];
  const double nv = std::ceil(n / lanes);
  // A partial last vector of C's rows costs more only where it takes a mask (kernels.h).
  const bool ragged = edge_needs_mask(static_cast<int64_t>(n) % lanes);
  switch (k) {
    case KernelId::FmaBroadcast:
      // Throughput of m*nv FMAs, or the FMA latency chain when there are too few
      // accumulators to hide it, or the load ports (m broadcasts + nv B loads).
      return std::max({m * nv / c.fma_per_cycle, c.fma_latency, (m + nv) / c.loads_per_cycle}) +
             (ragged ? c.masked_extra : 0) + l2_stream_lines(s) * c.l2_stream_line_cycles;
    case KernelId::FmaScalar:
      return std::max({m / c.fma_per_cycle, c.fma_latency, (m + 1) / c.loads_per_cycle});
    case KernelId::FmaDot:
      return std::max({m * n / c.fma_per_cycle, c.fma_latency, (m + n) / c.dot_loads_per_cycle}) +
             (edge_needs_mask(static_cast<int64_t>(kk) % lanes) ? (m + n) * c.masked_extra : 0);
    case KernelId::ZeroRegisters:
      return 0.25 * register_count(s.operands[0].layout, s.dims[0], s.dims[1]);
    case KernelId::ZeroMemory:
      return m * nv / c.stores_per_cycle + 2 * lines(s.operands[0], s.dims[0], s.dims[1]) *
                                               c.line_cycles[static_cast<int>(s.operands[0].level)];
    case KernelId::StoreRows: {
      // One FMA (or multiply) and one store per vector, a load too when accumulating; the
      // lines are read for ownership and written back (c_line_transfers).
      const double vectors = m * nv;
      const double masked = ragged ? m * c.masked_extra * (s.accumulate ? 2 : 1) : 0;
      return vectors * (1 / c.stores_per_cycle + (s.accumulate ? 1 / c.loads_per_cycle : 0)) +
             masked +
             c_line_transfers(s.accumulate, s.operands[1].level) *
                 lines(s.operands[1], s.dims[0], s.dims[1]) *
                 c.line_cycles[static_cast<int>(s.operands[1].level)];
    }
    case KernelId::StoreDot:
      // A horizontal sum is ~4 shuffles/adds per element, plus a scalar store.
      return m * n * 5 + 2 * lines(s.operands[1], s.dims[0], s.dims[1]) *
                             c.line_cycles[static_cast<int>(s.operands[1].level)];
    case KernelId::PackPanels: {
      const TensorSpec &src = s.operands[0], &dst = s.operands[1];
      const bool along_panel = dst.layout.kind == LayoutKind::PanelRows
                                   ? src.layout.kind == LayoutKind::ColMajor
                                   : src.layout.kind == LayoutKind::RowMajor;
      const double elements = m * n;
      // A copy along the panel's fast axis moves vectors; anything else transposes.
      const double copy =
          along_panel
              ? elements / lanes *
                    (1 / c.stores_per_cycle + c.masked_extra * (dst.layout.strip % lanes != 0))
              : elements * c.transposed_copy;
      // The copy reads the source one stored row after another, along the panels in one
      // run per group of panels (pack_group_panels): from main memory, each further group
      // starts every row's run again (8x4096x4096 on two threads then streams B instead of
      // packing it: +22%; 2048x4096x4096 +3%). From L3 these runs of 512 bytes and more
      // measured no start cost (perf/memory_costs: 1-15 cycles), and charging L3's 30 moved
      // 1024^3 on two threads to a plan 2% slower.
      double restarts = 0;
      if (along_panel && src.level == Level::GL) {
        const int p_axis = dst.layout.kind == LayoutKind::PanelCols ? 1 : 0;
        const int64_t strip = dst.layout.strip, q_extent = s.dims[static_cast<size_t>(1 - p_axis)];
        const int64_t panels = (s.dims[static_cast<size_t>(p_axis)] + strip - 1) / strip;
        // Bytes from one panel to the next, as the emitter takes them.
        const int64_t panel_bytes =
            4 * element_offset(dst.layout, panel_extent(dst.layout, s.dims[0], s.dims[1]),
                               p_axis == 0 ? strip : 0, p_axis * strip);
        const int64_t group = pack_group_panels(panel_bytes);
        restarts = static_cast<double>((panels + group - 1) / group - 1) *
                   static_cast<double>(q_extent) * c.run_start_cycles[static_cast<int>(src.level)];
      }
      return copy + strided_rows_cost(src, s.dims[0], s.dims[1]) +
             read_cost(src, s.dims[0], s.dims[1], /*side_by_side=*/false) + restarts +
             lines(dst, s.dims[0], s.dims[1]) * c.line_cycles[static_cast<int>(dst.level)];
    }
  }
  return 0;
}

}  // namespace tessel
