#include "kernels/kernel_emitters.h"

namespace tessel {

void emit_catalogue_kernel(PlanEmitter &e, const PlanNode &n) {
  switch (n.kernel) {
    case KernelId::FmaBroadcast:
      emit_fma_broadcast(e, n);
      return;
    case KernelId::FmaScalar:
      emit_fma_scalar(e, n);
      return;
    case KernelId::FmaDot:
      emit_fma_dot(e, n);
      return;
    case KernelId::ZeroRegisters:
      emit_zero_registers(e, n);
      return;
    case KernelId::ZeroMemory:
      emit_zero_memory(e, n);
      return;
    case KernelId::StoreRows:
      emit_store_rows(e, n);
      return;
    case KernelId::StoreDot:
      emit_store_dot(e, n);
      return;
    case KernelId::PackPanels:
      emit_pack_panels(e, n);
      return;
  }
  e.fail("codegen: kernel id outside the catalogue");
}

bool kernel_writes_temporaries(KernelId id) {
  switch (id) {
    case KernelId::FmaBroadcast:
    case KernelId::FmaScalar:
    case KernelId::FmaDot:
    case KernelId::ZeroRegisters:
    case KernelId::StoreRows:
    case KernelId::StoreDot:
      return false;
    case KernelId::ZeroMemory:
    case KernelId::PackPanels:
      return true;
  }
  return true;
}

}  // namespace tessel
