// Selecting a leaf kernel of the target's catalogue.
#include "action.h"

namespace tessel {

void enumerate_kernels(const Spec &s, const Target &t, std::vector<Action> &out) {
  for (int k = 0; k < kKernelCount; ++k)
    if (t.kernel_applies(KernelId(k), s))
      out.push_back({ActionKind::Kernel, static_cast<uint8_t>(k), 0, 0});
}

Expansion expand_kernel(const Spec &s, const Action &a, const Target &t) {
  Expansion e;
  e.node = NodeKind::Kernel;
  e.local_cycles = t.kernel_cost(KernelId(a.a), s);
  return e;
}

}  // namespace tessel
