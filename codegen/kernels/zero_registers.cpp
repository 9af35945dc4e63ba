// f32_zero_vregs__avx2: T (the live register tile) = 0.
//
//   ymm0 ... ymm(count-1)  <- vxorps (a dependency-breaking zero idiom, no execution port)
#include "kernels/kernel_emitters.h"

namespace tessel {

void emit_zero_registers(PlanEmitter &e, const PlanNode &n) {
  const PlanTensor &t = e.tensor(n, 0);
  if (!t.spec.layout.is_register() || t.rows != n.spec.dims[0] || t.cols != n.spec.dims[1]) {
    e.fail("codegen: f32_zero_vregs needs the whole register tile");
    return;
  }
  for (int r = 0; r < e.tile_registers(); ++r) e.vxorps(e.tile(r), e.tile(r), e.tile(r));
}

}  // namespace tessel
