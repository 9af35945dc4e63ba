// Packing ahead: a loop whose body packs a tile from L3 or main memory and multiplies it
// copies the next tile while it multiplies this one.
//
// A pack from far misses on every line it reads, and copying a tile of 256 KiB into an L2
// buffer takes ~6 us even from L2 (its stores miss L1 too): where few rows of A share each
// line of B (32x768x3072 packs 128x512 tiles of B for 32 rows) the packs took a quarter of
// the time, in bursts the FMAs sat out. So the loop packs its first tile as the alloc would,
// then each iteration copies the next tile into a second buffer, a few panel rows per
// counted kernel-loop iteration of the body (step_pack_cursor: as many as spread the copy
// over the body, up to kMaxUnitsPerStep), prefetching two source runs ahead (and, streamed
// from main memory, into L2 as the pack would: stream_look_ahead), and finishes what the
// body left before the next iteration; the two buffers alternate. A Matmul's k loop runs
// its first iteration apart (it overwrites C): that one copies the body's first tile the
// same way, if it packs the same tiles.
//
// The last iteration copies the first tile of the next such loop, where that is the next
// iteration of an enclosing loop reached through loops and stages only (find_carries: the
// k loops above 32x768x3072's loops over n; which enclosing loop moves on next is read off
// their counters). A stack slot names the buffer the next tile is in, 0 when the next loop
// must pack its own: the preamble clears it, and every loop's last iteration sets it.
//
// reg_src walks the source, rcx the other buffer, reg_dst counts the panel rows left in the
// run, reg_count_outer the runs left (0 once the copy is done, and on a last iteration that
// copies nothing).
// The body runs no pack, no zeroing of memory and no C copy, the only other users of those
// registers (cursor_free_body), and at least one counted kernel loop.
//
// Paired, one thread (perf/ab_builds): 32x768x3072 +10%, 64x768x3072 +5%, 16x1024x4096 +7%
// against prefetching the next tile a line per kernel-loop iteration (itself +1%, +4%, +10%
// over the packs alone); in longer bodies too, 128x768x3072 +3-5%, 128x768x768 +1%,
// 512x768x3072, 512^3, 1000^3, 1024^3, 256^3 and 129^3 within 1% (prefetching there had
// cost 512x768x3072 3-5%; a copy step that is done costs a test and a branch); two threads
// 32x768x3072 +7.6%, 128x768x768, 512x768x3072 and 1024^3 within 1.5%. The first
// iteration's copy: 128x768x768 +1.3% (its k loop has three iterations), others within 0.2%.
// Carrying into the next loop: 32x768x3072 +1.7% on one thread, +1.8% on two (6 of its 18
// packs per thread had been unoverlapped), 16x1024x4096 +1.9%, the rest within 1% (1024^3
// packs once per grid tile, outside any loop: its code gained only the slot's clearing).
#include <algorithm>
#include <cmath>

#include "kernels/kernel_emitters.h"
#include "plan_emitter.h"

namespace tessel {
namespace {

// Source runs a copy step prefetches into L1 ahead of the one it copies; one where the
// tile's lines are read ahead into L2 (stream_look_ahead) and come from there. Paired
// (perf/ab_builds, one thread, Zen 4 VM, three runs), one run ahead there against two:
// 6x4096x4096 +3-6%, 8x +3-4.5%, 12x +2-4.6%, 8x11008x4096 +1-4.5%, 8x16384x2048 +2.7%;
// two threads within noise (alternating processes); four runs ahead, 3-6% slower.
constexpr int64_t kCopyRunsAhead = 2;
// Panel rows per step, at most. At one a step, a body of few rows (8x4096x4096: 48 steps
// for a 16x128 tile's 128 rows) left most of the copy to the loop after it, whose loads
// waited on memory with no FMAs beside them: a third of the kernel's samples (perf record).
// Paired (perf/ab_builds, one thread, Zen 4 VM), spread up to four a step against one:
// 6x4096x4096 +16%, 8x +12%, 12x +7%, 8x16384x2048 +11%, 16x1024x4096 +1.6%, 16x and
// 24x4096x4096, 17x512x1536 within 0.5%; two threads (alternating processes, medians of 5)
// 8x4096x4096 +8%, 6x +9%, 12x +11%, 8x16384x2048 +22%. Up to two, 8x16384x2048 -2.6%
// against four; up to eight, as four. But where each row read waits on main memory (a
// stage from there whose next tile is not read ahead), the loop after the body keeps more
// of those misses in flight than steps among FMAs do: spread, 6x2048x8192 (512 KiB tiles)
// ran 19% slower. With the look-ahead (stream_look_ahead), against neither, one thread:
// 6x4096x4096 +46%, 8x +32%, 6x8192x2048 +53%, 8x11008x4096 +39%, 12x2048x8192 +22%,
// 12x1024x4096 +21%, 16x2048x8192 +3%; ten other shapes of 2 to 48 rows within 1%.
constexpr int64_t kMaxUnitsPerStep = 4;

}  // namespace

double PlanEmitter::kernel_loop_steps(int id) const {
  if (id < 0) return 0;
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  double steps = 0;
  if (n.kind != NodeKind::Loop) {
    for (int c : n.children) steps += kernel_loop_steps(c);
    return steps;
  }
  // As emit_loop_iterations: a first iteration of its own, then the others (a kernel body
  // past kFullUnroll of them counted kUnroll at a time), then the remainder.
  const int body = n.children[0];
  int64_t iterations = n.trips;
  if (n.children[2] >= 0 && iterations > 0) {
    steps += kernel_loop_steps(n.children[2]);
    --iterations;
  }
  if (iterations > 0 && body >= 0) {
    if (plan_->nodes[static_cast<size_t>(body)].kind != NodeKind::Kernel)
      steps += static_cast<double>(iterations) * kernel_loop_steps(body);
    else if (iterations > kFullUnroll)
      steps += static_cast<double>(iterations / kUnroll);
  }
  return steps + kernel_loop_steps(n.children[1]);
}

bool PlanEmitter::cursor_free_body(int id) const {
  if (id < 0) return true;
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  if (n.kind == NodeKind::Kernel) return !kernel_writes_temporaries(n.kernel);
  if (copies_c(n) || n.kind == NodeKind::Grid) return false;
  for (int c : n.children)
    if (!cursor_free_body(c)) return false;
  return true;
}

bool PlanEmitter::pack_ahead(const PlanNode &alloc, AheadPack *out) const {
  const int prologue = alloc.children[0];
  if (alloc.kind != NodeKind::Alloc || tile_registers_ != 0 || prologue < 0 ||
      alloc.new_tensor < 0 ||
      plan_->tensors[static_cast<size_t>(alloc.new_tensor)].role != PlanTensor::Role::Buffer)
    return false;
  const PlanNode &pack = plan_->nodes[static_cast<size_t>(prologue)];
  if (pack.kind != NodeKind::Kernel || pack.kernel != KernelId::PackPanels ||
      next_tile_bytes(pack, 0) == 0 || !from_far(pack, 0))
    return false;
  // The source's runs along the panels' axis, as the pack reads them (contiguous only).
  const Layout dst = pack.spec.operands[1].layout;
  const int p_axis = dst.kind == LayoutKind::PanelCols ? 1 : 0;
  const int64_t pi = p_axis == 0 ? 1 : 0, pj = 1 - pi;
  if (!dst.is_panel() || element_bytes(pack, 0, pi, pj) != 4) return false;
  AheadPack a;
  a.pack = &pack;
  a.runs = pack.spec.dims[static_cast<size_t>(1 - p_axis)];
  a.run_bytes = pack.spec.dims[static_cast<size_t>(p_axis)] * 4;
  a.src_run = element_bytes(pack, 0, pj, pi);
  a.strip = dst.strip;
  // The buffer's strides from its layout: the pipelined loop asks before it is live.
  const int64_t ext = plan_->tensors[static_cast<size_t>(alloc.new_tensor)].ext;
  a.dst_panel = 4 * element_offset(dst, ext, pi * dst.strip, pj * dst.strip);
  a.dst_run = 4 * element_offset(dst, ext, pj, pi);
  const double steps = kernel_loop_steps(alloc.children[1]);
  if (steps == 0 || a.strip <= 0 || !cursor_free_body(alloc.children[1])) return false;
  // Lines read ahead into L2 are prefetched into L1 a run ahead (kCopyRunsAhead), and the
  // copy is spread over the body's steps, as far as a few panel rows a step go, unless the
  // source comes from main memory unannounced (kMaxUnitsPerStep).
  a.l2_ahead = stream_look_ahead(pack, 0, a.src_run);
  const bool looked_ahead = a.l2_ahead[1] != 0;
  a.runs_ahead = looked_ahead ? 1 : kCopyRunsAhead;
  const double units = static_cast<double>(a.runs * (a.run_bytes / 4 / a.strip));
  if (!streamed(pack, 0) || looked_ahead)
    a.units_per_step =
        static_cast<int64_t>(std::clamp(std::ceil(units / steps), 1.0, double{kMaxUnitsPerStep}));
  *out = a;
  return true;
}

bool PlanEmitter::pipelines_pack(int id, int64_t iterations, const Shifts &shifts) const {
  const PlanNode &loop = plan_->nodes[static_cast<size_t>(id)];
  const int body = loop.children[0];
  AheadPack a;
  if (iterations < 2 || body < 0 || !pack_ahead(plan_->nodes[static_cast<size_t>(body)], &a))
    return false;
  // The next iteration packs the next tile of this loop: the source is moved by it, once.
  int moves = 0;
  for (const Shift &sh : shifts)
    if (sh.first == a.pack->tensors[0]) moves += sh.second == next_tile_bytes(*a.pack, 0) ? 1 : 2;
  if (moves != 1) return false;
  // Whole panels of whole vectors: a unit is a panel row, copied as vectors.
  const int64_t width = a.run_bytes / 4;
  return a.strip % kLanes == 0 && width % a.strip == 0;
}

void PlanEmitter::start_copy_cursor(const AheadPack &a, int64_t next) {
  const int64_t units = a.run_bytes / 4 / a.strip;
  load_origin(reg_src, *a.pack, 0);
  add_imm(reg_src, next);
  // The first runs, which no step prefetches (up to 2 KiB of each: the code stays short).
  for (int64_t r = 0; r < a.runs_ahead && r < a.runs; ++r)
    for (int64_t b = 0; b < std::min<int64_t>(a.run_bytes, 2048); b += 64)
      prefetcht0(mem(reg_src, r * a.src_run + b));
  mov_imm(reg_dst, units);
  mov_imm(reg_count_outer, a.runs);
  cursor_ = {true,
             units,
             a.strip * 4,
             a.src_run - units * a.strip * 4,
             a.dst_panel,
             a.dst_run - units * a.dst_panel,
             a.runs_ahead * a.src_run,
             a.l2_ahead,
             a.units_per_step};
}

void PlanEmitter::finish_copy() {
  const size_t rest = here();
  step_pack_cursor();
  test(reg_count_outer, reg_count_outer);
  jnz_back(rest);
  cursor_ = PackCursor{};
}

bool PlanEmitter::packs_alike(const PlanNode &x, const PlanNode &y) const {
  AheadPack a, b;
  if (!pack_ahead(x, &a) || !pack_ahead(y, &b)) return false;
  const PlanTensor &xb = plan_->tensors[static_cast<size_t>(x.new_tensor)];
  const PlanTensor &yb = plan_->tensors[static_cast<size_t>(y.new_tensor)];
  return a.pack->tensors[0] == b.pack->tensors[0] && x.operand == y.operand && a.runs == b.runs &&
         a.run_bytes == b.run_bytes && a.src_run == b.src_run && xb.spec == yb.spec &&
         xb.ext == yb.ext && xb.bytes == yb.bytes && xb.workspace_offset == yb.workspace_offset;
}

bool PlanEmitter::first_packs_ahead(int id) const {
  const PlanNode &loop = plan_->nodes[static_cast<size_t>(id)];
  return packs_alike(plan_->nodes[static_cast<size_t>(loop.children[0])],
                     plan_->nodes[static_cast<size_t>(loop.children[2])]);
}

bool PlanEmitter::open_pack_ahead(const PlanNode &alloc, AheadPack *a, Xbyak::Reg64 *reg) {
  if (!pack_ahead(alloc, a)) {
    fail("codegen: a pack ahead that does not qualify");
    return false;
  }
  if (!buffer_register(alloc, reg)) return false;
  if (ahead_slot_ < 0) {
    fail("codegen: a pack ahead without its stack slot");
    return false;
  }
  ahead_bytes_ =
      std::max(ahead_bytes_, plan_->tensors[static_cast<size_t>(alloc.new_tensor)].bytes);
  return true;
}

void PlanEmitter::pack_first_tile(const PlanNode &alloc, const Xbyak::Reg64 &reg) {
  const PlanTensor &t = plan_->tensors[static_cast<size_t>(alloc.new_tensor)];
  mov(reg, workspace_slot());
  add_imm(reg, t.workspace_offset);
  tensors_[static_cast<size_t>(alloc.new_tensor)] = live_state(reg, t.ext, t.spec.layout);
  emit_node(alloc.children[0]);
}

void PlanEmitter::multiply_while_copying(const PlanNode &alloc, const Xbyak::Reg64 &reg) {
  const PlanTensor &t = plan_->tensors[static_cast<size_t>(alloc.new_tensor)];
  TensorState &st = tensors_[static_cast<size_t>(alloc.new_tensor)];
  st = live_state(reg, t.ext, t.spec.layout);
  emit_node(alloc.children[1]);
  if (alloc.children[2] >= 0) emit_node(alloc.children[2]);
  finish_copy();
  st.live = false;
}

void PlanEmitter::take_first_tile(const PlanNode &alloc, const Xbyak::Reg64 &reg) {
  Xbyak::Label packed;
  mov(reg, spill_slot(ahead_slot_));
  test(reg, reg);
  jnz(packed);
  pack_first_tile(alloc, reg);
  mov(spill_slot(ahead_slot_), reg);
  L(packed);
}

bool PlanEmitter::next_buffer(const PlanNode &alloc, const Xbyak::Reg64 &reg) {
  const int64_t both =
      plan_->tensors[static_cast<size_t>(alloc.new_tensor)].workspace_offset + ahead_offset_;
  if (both > INT32_MAX) {
    fail("codegen: pack-ahead buffers past 2 GiB of workspace");
    return false;
  }
  mov(reg, spill_slot(ahead_slot_));
  mov(rcx, workspace_slot());
  lea(rcx, ptr[rcx + rcx + static_cast<int32_t>(both)]);
  sub(rcx, reg);
  mov(spill_slot(ahead_slot_), rcx);
  return true;
}

void PlanEmitter::emit_first_packing_ahead(int id) {
  const PlanNode &loop = plan_->nodes[static_cast<size_t>(id)];
  const PlanNode &first = plan_->nodes[static_cast<size_t>(loop.children[2])];
  AheadPack a;
  Xbyak::Reg64 reg;
  if (!open_pack_ahead(first, &a, &reg)) return;
  take_first_tile(first, reg);
  if (!next_buffer(first, reg)) return;
  start_copy_cursor(a, next_tile_bytes(*a.pack, 0));
  multiply_while_copying(first, reg);
}

bool PlanEmitter::starts_like(int id, const PlanNode &loop, const Shifts &shifts) const {
  const PlanNode &alloc = plan_->nodes[static_cast<size_t>(loop.children[0])];
  while (id >= 0) {
    const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
    if (n.kind == NodeKind::Stage && !copies_c(n)) {
      id = n.children[0];
      continue;
    }
    if (n.kind != NodeKind::Loop || n.trips < 1 || n.children[1] >= 0) return false;
    const bool has_first = n.children[2] >= 0;
    // A loop like `loop` moves the same tensors alike; if it pipelines, its first tile is
    // the first its body or first iteration packs (emit_loop_iterations decides the same).
    if (n.dim == loop.dim && n.step == loop.step && n.tensors == loop.tensors &&
        pipelines_pack(id, n.trips - (has_first ? 1 : 0), shifts)) {
      if (!has_first) return packs_alike(plan_->nodes[static_cast<size_t>(n.children[0])], alloc);
      if (first_packs_ahead(id))
        return packs_alike(plan_->nodes[static_cast<size_t>(n.children[2])], alloc);
    }
    id = has_first ? n.children[2] : n.children[0];
  }
  return false;
}

void PlanEmitter::find_carries(const PlanNode &loop, const AheadPack &a, const Shifts &shifts,
                               std::vector<Carry> *out) const {
  out->clear();
  if (loop.children[1] >= 0) return;  // a remainder tile follows
  const int source = a.pack->tensors[0];
  // From the last tile to the loop's first, then to each enclosing loop's first tile.
  int64_t back = (loop.trips - 1) * next_tile_bytes(*a.pack, 0);
  for (size_t i = links_.size() - 1; i-- > 0;) {
    const EmitLink &l = links_[i];
    if (l.link == Link::Transparent) continue;
    if (l.link == Link::Barrier) return;
    const PlanNode &outer = plan_->nodes[static_cast<size_t>(l.id)];
    if (outer.children[1] >= 0) return;
    int64_t shift = 0;
    for (const Shift &sh : l.shifts)
      if (sh.first == source) shift += sh.second;
    const bool copy = starts_like(outer.children[0], loop, shifts);
    if (l.link == Link::FirstIteration) {
      out->push_back({shift - back, 0, copy});
      return;
    }
    if (l.link == Link::Counted)
      out->push_back({shift - back, height_[static_cast<size_t>(l.id)], copy});
    back += (outer.trips - 1) * shift;
  }
}

void PlanEmitter::emit_pipelined_pack_loop(int id, int64_t iterations, const Shifts &shifts,
                                           bool first_packed) {
  const PlanNode &loop = plan_->nodes[static_cast<size_t>(id)];
  const PlanNode &alloc = plan_->nodes[static_cast<size_t>(loop.children[0])];
  AheadPack a;
  Xbyak::Reg64 reg;
  if (!open_pack_ahead(alloc, &a, &reg)) return;
  // Unless the first iteration of its own copied it, the first tile comes from the loop that
  // ran before or is packed here.
  if (!first_packed) take_first_tile(alloc, reg);
  std::vector<Carry> carries;
  find_carries(loop, a, shifts, &carries);
  if (std::any_of(carries.begin(), carries.end(), [](const Carry &c) { return c.copy; }))
    ++carried_packs_;

  const int height = height_[static_cast<size_t>(id)];
  counter_set(height, iterations);
  const size_t top = here();
  if (!next_buffer(alloc, reg)) return;
  Xbyak::Label last, copying, none;
  xor_(reg_count_outer.cvt32(), reg_count_outer.cvt32());
  counter_compare(height, 1);
  je(last);
  start_copy_cursor(a, next_tile_bytes(*a.pack, 0));
  jmp(copying);
  // The last iteration copies the first tile of the next loop like this one, if one follows.
  L(last);
  for (const Carry &c : carries) {
    Xbyak::Label outer_last;
    if (c.height > 0) {
      counter_compare(c.height, 1);
      je(outer_last);
    }
    if (c.copy) {
      start_copy_cursor(a, c.next);
      jmp(copying);
    } else {
      jmp(none);
    }
    L(outer_last);
  }
  L(none);
  mov(spill_slot(ahead_slot_), 0);
  L(copying);
  multiply_while_copying(alloc, reg);
  advance(shifts, 1);
  counter_dec(height);
  jnz_back(top);
}

void PlanEmitter::step_pack_cursor() {
  if (!cursor_.live) return;
  for (int64_t unit = 0; unit < cursor_.units_per_step; ++unit) {
    Xbyak::Label done;
    test(reg_count_outer, reg_count_outer);
    jz(done);
    prefetcht0(mem(reg_src, cursor_.ahead));
    for (int64_t ahead : cursor_.l2_ahead)
      if (ahead != 0) prefetcht1(mem(reg_src, ahead));
    const Xbyak::Ymm v(temp(0).idx);  // kernels leave their temporaries dead between them
    for (int64_t b = 0; b < cursor_.unit_bytes; b += 32) {
      vmovups(v, mem(reg_src, b));
      vmovups(mem(rcx, b), v);
    }
    add_imm(reg_src, cursor_.unit_bytes);
    add_imm(rcx, cursor_.dst_unit);
    dec(reg_dst);
    jnz(done);
    add_imm(reg_src, cursor_.run_skip);
    add_imm(rcx, cursor_.dst_run_skip);
    mov_imm(reg_dst, cursor_.units);
    dec(reg_count_outer);
    L(done);
  }
}

}  // namespace tessel
