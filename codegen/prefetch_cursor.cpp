// The prefetch cursor: the next pack's source, fetched into L2 a line at a time by the
// kernel loops of the body between two packs.
//
// A pack from L3 or main memory inside a loop misses on every line it reads. Where few rows
// of A share each line of B (32x768x3072 packs 128x512 tiles of B under 32 rows), the body
// between two packs is short, and the pack's own look-ahead (pack_panels.cpp) leaves the next
// tile's lines arriving in bursts the body is too short to hide. Spread through the body
// instead, one line per unrolled kernel-loop iteration, they arrive while it multiplies:
// after the pack, reg_src walks the next tile's source runs line by line, reg_dst counts the
// lines left in the run, reg_count_outer the runs left; the last run parks reg_src on the
// buffer the body reads, which stays in cache. The body runs no pack and no C copy (the
// only other users of those registers), which prefetch_cursor_body checks.
//
// Paired, one thread (perf/ab_builds): 16x1024x4096 +10%, 8x4096x4096 +7%, 64x768x3072 +4%,
// 32x768x3072 +1%; two threads (separate processes, 7 runs): 16x1024x4096 +4%, 32x768x3072
// and 8x4096x4096 unchanged. Given to every such body, the steps only added instructions
// where the body hides the misses anyway: 512x768x3072 -3 to -5%, 1024^3 -2 to -3%,
// 128x768x768 -1 to -2%. So the cursor goes to bodies of at most kStepsPerLine steps per
// line of the next tile (those stay within 1%).
#include "kernels/kernel_emitters.h"
#include "plan_emitter.h"

namespace tessel {
namespace {

constexpr int64_t kStepsPerLine = 4;

}  // namespace

int64_t PlanEmitter::kernel_loop_steps(int id) const {
  if (id < 0) return 0;
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  if (n.kind == NodeKind::Kernel) return 0;
  if (n.kind != NodeKind::Loop) {
    int64_t steps = 0;
    for (int c : n.children) steps += kernel_loop_steps(c);
    return steps;
  }
  // As emit_loop_iterations: a first iteration of its own, the body for the rest (a kernel
  // body unrolled, counted kUnroll iterations at a time past kFullUnroll), the remainder.
  const int body = n.children[0];
  const int64_t iterations = n.trips - (n.children[2] >= 0 && n.trips > 0 ? 1 : 0);
  int64_t steps = kernel_loop_steps(n.children[1]) + kernel_loop_steps(n.children[2]);
  if (body >= 0 && plan_->nodes[static_cast<size_t>(body)].kind == NodeKind::Kernel)
    return steps + (iterations > kFullUnroll ? iterations / kUnroll : 0);
  return steps + iterations * kernel_loop_steps(body);
}

bool PlanEmitter::prefetch_cursor_body(int id) const {
  if (id < 0) return true;
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  if (n.kind == NodeKind::Kernel) return !kernel_writes_temporaries(n.kernel);
  if (copies_c(n) || n.kind == NodeKind::Grid) return false;
  for (int c : n.children)
    if (!prefetch_cursor_body(c)) return false;
  return true;
}

void PlanEmitter::start_prefetch_cursor(const PlanNode &alloc, const Xbyak::Reg64 &buffer) {
  cursor_ = PrefetchCursor{};
  const int prologue = alloc.children[0], body = alloc.children[1];
  if (tile_registers_ != 0 || prologue < 0) return;
  const PlanNode &pack = plan_->nodes[static_cast<size_t>(prologue)];
  if (pack.kind != NodeKind::Kernel || pack.kernel != KernelId::PackPanels) return;
  const int64_t next = next_tile_bytes(pack, 0);
  if (next == 0 || !from_far(pack, 0)) return;
  // The source's runs: along the panels' axis, as the pack reads them (contiguous only).
  const Layout dst = pack.spec.operands[1].layout;
  const int p_axis = dst.kind == LayoutKind::PanelCols ? 1 : 0;
  const int64_t pi = p_axis == 0 ? 1 : 0, pj = 1 - pi;
  if (!dst.is_panel() || element_bytes(pack, 0, pi, pj) != 4) return;
  const int64_t runs = pack.spec.dims[static_cast<size_t>(1 - p_axis)];
  const int64_t run_bytes = pack.spec.dims[static_cast<size_t>(p_axis)] * 4;
  const int64_t lines = (run_bytes + 63) / 64;
  const int64_t steps = kernel_loop_steps(body);
  if (steps == 0 || steps > kStepsPerLine * lines * runs || !prefetch_cursor_body(body)) return;
  cursor_ = {true, lines, element_bytes(pack, 0, pj, pi) - 64 * lines, buffer.getIdx()};
  load_origin(reg_src, pack, 0);
  add_imm(reg_src, next);
  mov_imm(reg_dst, lines);
  mov_imm(reg_count_outer, runs);
}

void PlanEmitter::step_prefetch_cursor() {
  if (!cursor_.live) return;
  Xbyak::Label done;
  prefetcht1(mem(reg_src, 0));
  add(reg_src, 64);
  dec(reg_dst);
  jnz(done);
  add_imm(reg_src, cursor_.run_skip);
  mov_imm(reg_dst, cursor_.lines_per_run);
  dec(reg_count_outer);
  jnz(done);
  // Past the last run: back on the buffer, to end there again at every step.
  mov(reg_src, Xbyak::Reg64(cursor_.park));
  mov_imm(reg_dst, 1);
  mov_imm(reg_count_outer, 1);
  L(done);
}

}  // namespace tessel
