// One emitter per kernel of the catalogue (search/kernels.h), one file each. They all write
// into the plan's one code buffer through the PlanEmitter, which gives them operand addresses,
// the live register tile and temporaries. Each first settles its blocking in a config struct,
// then emits.
#pragma once
#include "plan_emitter.h"

namespace tessel {

void emit_fma_broadcast(PlanEmitter &e, const PlanNode &n);
void emit_fma_scalar(PlanEmitter &e, const PlanNode &n);
void emit_fma_dot(PlanEmitter &e, const PlanNode &n);
void emit_zero_registers(PlanEmitter &e, const PlanNode &n);
void emit_zero_memory(PlanEmitter &e, const PlanNode &n);
void emit_store_rows(PlanEmitter &e, const PlanNode &n);
void emit_store_dot(PlanEmitter &e, const PlanNode &n);
void emit_pack_panels(PlanEmitter &e, const PlanNode &n);

// The switch over KernelId (no default: -Werror=switch catches a kernel without emitter).
void emit_catalogue_kernel(PlanEmitter &e, const PlanNode &n);
// Whether the kernel's emitter writes the temporaries reg_src, reg_dst or reg_count_outer,
// which the function must then save (they are callee-saved).
bool kernel_writes_temporaries(KernelId id);

}  // namespace tessel
