// Interleaving the reduction: a single row of A over B in main memory (a GEMV) reads B as a
// few long runs side by side. k is cut into kInterleavedRuns chunks of kc = k / runs
// consecutive rows, and iteration kk of the loop multiplies row kk of every chunk (B's rows
// kk, kc + kk, 2 kc + kk, ...): each chunk's run continues where the previous iteration
// left it, so the prefetchers follow a few runs of kc rows each and never start again. A k
// split reads rows side by side too, but each tile's runs end with its columns, and the next
// tile's runs must be found afresh.
//
// The body sees k strided by kc: A as a 1 x runs column-major view, B as rows kc apart,
// staged into L1 (this node pays for bringing all of B in, as a stage would). Rows past
// runs * kc follow the loop as an ordinary MatmulAccum.
#include "action.h"

namespace tessel {
namespace {

// Runs read side by side. A C model of 1x2048x16384 on the 2-core Zen 5 VM (medians of 60
// alternating rounds): rows of B in 8-row tiles of 8192 columns (the plan a k split gives)
// 34.7 GB/s; interleaved in 4 chunks 41.1, in 6 37.9, in 8 37.1, in 2 25-29; a plain sum of
// the array in 8 runs 42.1. Software prefetches a few lines ahead cost the 4 runs 12%. On
// the Zen 4 VM the C model read 6 chunks ~8% faster than 4, but the emitted kernels with 6
// or 8 differed from 4 by no more than the noise (perf/ab_builds: -3% to +3%). There, with
// B 16 bytes past a line (as malloc places big arrays), the k split the search would take
// without this action (8 whole rows of B at a time) ran 1x2048x16384 6.5% faster once its
// 512-byte stream prefetches were dropped (20% slower with them; with B aligned, alike:
// 0.96-1.01), but 1x4096x4096 10% and 1x16384x2048 15% slower. C models of the two moved
// between a tie and 8 rows 5-11% ahead with the host's load, aligned or not.
constexpr int32_t kInterleavedRuns = 4;

bool interleave_offered(const Spec &s) {
  return s.is_matmul() && s.threads == 1 && s.dims[0] == 1 && !s.c().layout.is_register() &&
         s.b().level == Level::GL && s.b().layout.kind == LayoutKind::RowMajor &&
         s.b().contiguous &&
         (s.a().layout.kind == LayoutKind::RowMajor || s.a().layout.kind == LayoutKind::ColMajor) &&
         s.dims[2] >= 2 * kInterleavedRuns;
}

}  // namespace

void enumerate_interleaves(const Spec &s, const Target &, std::vector<Action> &out) {
  if (interleave_offered(s)) out.push_back({ActionKind::InterleaveK, 0, 0, kInterleavedRuns});
}

void expand_interleave(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  const int32_t runs = a.size, kc = s.dims[2] / runs, rest = s.dims[2] - runs * kc;
  e.node = NodeKind::Interleave;
  e.dim = 2;
  e.step = runs;
  e.trips = kc;
  e.operand = 1;
  Child &body = e.children[0];
  body.spec = s;
  body.spec.op = Op::MatmulAccum;
  body.spec.dims[2] = runs;
  // One element per chunk: for a single row, column-major with the chunks' stride; its
  // columns (a few floats) crowd nothing.
  body.spec.operands[0].layout = col_major();
  body.spec.operands[0].stride_class = 0;
  // B's rows are read once (read_once): their stride decides nothing below.
  body.spec.operands[1].level = Level::L1;
  body.spec.operands[1].contiguous = false;
  body.multiplicity = kc;
  body.present = true;
  if (s.op == Op::Matmul) {
    e.children[2].spec = body.spec;
    e.children[2].spec.op = Op::Matmul;
    e.children[2].present = true;
    body.multiplicity -= 1;
  }
  if (rest) {
    e.children[1].spec = s;
    e.children[1].spec.op = Op::MatmulAccum;
    e.children[1].spec.dims[2] = rest;
    e.children[1].present = true;
  }
  // The runs never start again, so they stream at the full rate: the stream factors are for
  // tile rows that end and restart (target.h), not for these (see kInterleavedRuns). The
  // body's work overlaps the stream up to the share staged_read_hidden of it: a GEMV's body
  // does a few loads and an FMA per element, C in L1 or L2, less than a line's transfer
  // (a stage also caps what hides at its body's FMA cycles, as its body may be any tile).
  const double read = t.read_cost(s.b(), runs, int64_t{kc} * s.dims[1], /*side_by_side=*/false);
  e.local_cycles = t.coef.loop_iteration * kc + read * (1 - t.coef.staged_read_hidden);
}

}  // namespace tessel
