// Matmul -> Zero(C); MatmulAccum(A, B, C).
#include "action.h"

namespace tessel {

void enumerate_zero_accum(const Spec &s, const Target &, std::vector<Action> &out) {
  if (s.op == Op::Matmul) out.push_back({ActionKind::ZeroAccum, 0, 0, 0});
}

void expand_zero_accum(const Spec &s, const Action &, const Target &, Expansion &e) {
  e.node = NodeKind::Block;
  Spec zero;
  zero.op = Op::Zero;
  zero.dtype = s.dtype;
  zero.dims = {s.dims[0], s.dims[1], 1};
  zero.operands[0] = s.c();
  zero.limits = s.limits;
  e.children[0] = {canonical(zero), 1, true};
  e.children[1].spec = s;
  e.children[1].spec.op = Op::MatmulAccum;
  e.children[1].present = true;
}

}  // namespace tessel
