// Register tiles: C accumulated in vector registers. The registers are zeroed (prologue),
// the body accumulates A*B into them, and the epilogue stores them to C, overwriting for a
// Matmul and adding for a MatmulAccum (alpha is applied there).
#include "action.h"

namespace tessel {

void enumerate_register_tiles(const Spec &s, const Target &t, std::vector<Action> &out) {
  if (!s.is_matmul() || s.c().layout.is_register()) return;
  // The multiply kernels read A and B from L1, or stream them from L2 (Target::kernels_read);
  // other operands are staged before the register tile is formed (see stage.cpp), so a
  // register tile over them could never finish. Dot tiles read L1 only.
  if (!t.kernels_read(0, s.a()) || !t.kernels_read(1, s.b())) return;
  const bool in_l1 = s.a().level == Level::L1 && s.b().level == Level::L1;
  // Dot tiles need k contiguous in both A and B: otherwise their kernel would be fed one k
  // at a time and a broadcast tile does the same work better.
  const bool k_contiguous = s.a().layout.contiguous_axis1(2) && s.b().layout.contiguous_axis0(2);
  for (Layout l : {vec_rows(), vec_dot()}) {
    if (l.kind == LayoutKind::VecDot && (!k_contiguous || !in_l1)) continue;
    if (t.register_count(l, s.dims[0], s.dims[1]) <= static_cast<int>(s.limits.vregs))
      out.push_back({ActionKind::RegisterTile, static_cast<uint8_t>(l.kind), 0, 0});
  }
}

void expand_register_tile(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  e.node = NodeKind::Alloc;
  e.operand = 2;
  // Rows of A the tile streams from L2 that crowd a few L1 sets (TensorSpec::stride_class)
  // pay what staging them into L1 would (Target::strided_rows_cost). Otherwise the search
  // read 16 k of each of 16 rows 12 KiB apart straight from L2 for 16x3072x768 instead of
  // packing A, 5% slower; charging every wide stride cost 129^3 (rows 516 bytes apart, in
  // every set) 0.6-3%.
  if (s.a().level == Level::L2 && s.a().set_spread_log2() != TensorSpec::kAllSetsLog2)
    e.local_cycles = t.strided_rows_cost(s.a(), s.dims[0], s.dims[2]);
  e.new_tensor = {Level::VRF, Layout{LayoutKind(a.a), 0}};
  Spec zero;
  zero.op = Op::Zero;
  zero.dtype = s.dtype;
  zero.dims = {s.dims[0], s.dims[1], 1};
  zero.operands[0] = e.new_tensor;
  zero.limits = s.limits;
  Spec store = zero;
  store.op = Op::Move;
  store.accumulate = s.op == Op::MatmulAccum;
  store.operands[0] = e.new_tensor;
  store.operands[1] = s.c();
  e.children[0] = {canonical(zero), 1, true};
  e.children[1].spec = s;
  e.children[1].spec.op = Op::MatmulAccum;
  e.children[1].spec.operands[2] = e.new_tensor;
  e.children[1].present = true;
  e.children[2] = {canonical(store), 1, true};
}

}  // namespace tessel
