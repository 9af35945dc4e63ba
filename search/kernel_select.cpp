// Selecting a leaf kernel of the target's catalogue.
#include <bit>

#include "action.h"

namespace tessel {

void enumerate_kernels(const Spec &s, const Target &t, std::vector<Action> &out) {
  // In catalogue order, lowest bit first.
  for (uint32_t mask = t.applicable_kernels(s); mask != 0; mask &= mask - 1)
    out.push_back({ActionKind::Kernel, static_cast<uint8_t>(std::countr_zero(mask)), 0, 0});
}

void expand_kernel(const Spec &s, const Action &a, const Target &t, Expansion &e) {
  e.node = NodeKind::Kernel;
  e.local_cycles = t.kernel_cost(KernelId(a.a), s);
}

}  // namespace tessel
