#include "plan_emitter.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/kernel_emitters.h"
#include "layout.h"
#include "memo_entry.h"  // memo_hash, same_spec

namespace tessel {
namespace {

// Prefetch distance along rows of B streamed from main memory. Measured on this project's
// Zen 3 (interleaved runs, no prefetch / 256 / 512 bytes ahead): 8x4096x4096 21 / 27 / 26
// GFLOP/s; the GEMVs 1x4096x4096 and 1x2048x16384, already at the bandwidth, unchanged. On
// the Zen 4 VM 128 bytes was best (perf/ab_builds, paired, ratios to 256 bytes: 1.03-1.04
// for the GEMVs, 512 bytes 0.92-0.94). On the Zen 5 VM (ratios to 128 bytes, one thread,
// 201 paired rounds, two runs): 512 bytes 1.05-1.07 for 1x2048x16384, 1.09-1.12 for
// 1x4096x4096, 8x4096x4096 unchanged; 256 and 1024 bytes gained less, 2048 cost 8x4096x4096 8%.
constexpr int64_t kStreamPrefetchBytes = 512;

// Register tiles below this many cycles (the cost model's) stay inline even when they recur:
// a call, its return and the displacement adds at the call site cost a few cycles. Measured
// (the same plans emitted both ways, 200 interleaved runs): 256^3, 1000^3, 1024^3 and
// 512x768x3072 within 0.3% of inline; 1000^3's code shrinks from 44 to 18 KiB.
constexpr double kOutlineCycles = 256;

int register_tile_count(const PlanTensor &t) {
  const int64_t lanes = PlanEmitter::kLanes;
  if (t.spec.layout.kind == LayoutKind::VecRows)
    return static_cast<int>(t.rows * ((t.cols + lanes - 1) / lanes));
  return static_cast<int>(t.rows * t.cols);
}

}  // namespace

PlanEmitter::PlanEmitter(uint8_t *buffer, size_t capacity) : EmitterBase(buffer, capacity) {
  // Plan bodies can be long: every forward jump gets a 32-bit displacement.
  setDefaultJmpNEAR(true);
  // Kept storage (kKeptPlanNodes), as the plans'.
  keep_room(tensors_, kKeptPlanNodes + 3);
  keep_room(height_, kKeptPlanNodes);
  keep_room(outline_, kKeptPlanNodes);
  keep_room(tiles_, kKeptPlanNodes / 2);
  keep_room(outlined_, 16);
  keep_room(tile_calls_made_, kKeptPlanNodes / 2);
  keep_room(pending_nodes_, kKeptPlanNodes);
}

void PlanEmitter::load_origin(const Xbyak::Reg64 &dst, const PlanNode &n, int operand) {
  const TensorState &st = tensors_[static_cast<size_t>(n.tensors[static_cast<size_t>(operand)])];
  lea(dst, mem(st.reg, st.disp));
}

Vreg PlanEmitter::tile_out_of_range() {
  fail("codegen: register tile index out of range");
  return Vreg{0};
}

// A tile streamed from main memory into L2, for the tiles staged or packed from it into L1,
// is read one tile ahead into L2 when it and the next one fit in half of L2. On the Zen 4 VM
// (perf/ab_builds, paired, one thread) that made 2x4096x4096 35% and 3x4096x4096 58% faster
// and, packing B from 16-row tiles, 8x4096x4096 25%; then the GEMVs, which stream rows of B
// straight into L1, gained 5-18% from it too, but on the Zen 5 VM they lose as much: without
// it 1x2048x16384 +16%, 1x4096x4096 +18%, 1x16384x2048 +20%, 1x4096x11008 +6%, and still with
// it for tiles staged into L2, 2x and 4x4096x4096 +11%, 6x, 8x, 12x and 16x4096x4096 within
// 1% (each against the look-ahead for both and 128-byte prefetches, 201 paired rounds).
bool PlanEmitter::look_ahead_fits(const PlanNode &stage) const {
  const int inner = stage.children[0];
  if (req_->l2_bytes <= 0 || inner < 0) return false;
  const size_t operand = static_cast<size_t>(stage.operand);
  if (plan_->nodes[static_cast<size_t>(inner)].spec.operands[operand].level != Level::L2)
    return false;
  const int64_t bytes = stage.spec.rows(stage.operand) * stage.spec.cols(stage.operand) * 4;
  return 2 * bytes <= req_->l2_bytes / 2;
}

// Each line of the next tile is fetched as the same line of this one is copied, and again
// three quarters of a tile on: a second chance for lines the first prefetch left waiting.
// Paired, one thread, packs (pack_panels.cpp) against the first alone: 4x and 6x4096x4096
// +10%, 8x +6%, 12x +7%, 8x16384x2048 +8%; half a tile on instead, 8x4096x4096 -9%. Packs
// copied ahead while the tiles multiply (pack_ahead.cpp) had neither: with both, paired
// (perf/ab_builds, one thread, Zen 4 VM) 6x4096x4096 +28%, 8x +18-20%, 12x +13%,
// 8x16384x2048 +15% (the second chance is 3.5-5% of that); on two threads, alternating
// processes (5 rounds), 6x4096x4096 +27-45%, 8x +12-54%, 8x16384x2048 +2-33%, 12x -7% to
// +20% (median +6%). No other benchmark shape's code changes.
std::array<int64_t, 2> PlanEmitter::stream_look_ahead(const PlanNode &n, int operand,
                                                      int64_t row_bytes) const {
  const int64_t next = stream_next_tile_bytes(n, operand);
  if (next == 0 || row_bytes <= 0) return {};
  return {next / row_bytes * 3 / 4 * row_bytes, next};
}

int64_t PlanEmitter::stream_prefetch(const PlanNode &n, int operand) const {
  return streamed(n, operand) && !state(n, operand).long_runs ? kStreamPrefetchBytes : 0;
}

bool PlanEmitter::streamed(const PlanNode &n, int operand) const {
  return state(n, operand).staged_from == Level::GL;
}

bool PlanEmitter::from_far(const PlanNode &n, int operand) const {
  return std::max(n.spec.operands[static_cast<size_t>(operand)].level,
                  state(n, operand).staged_from) >= Level::L3;
}

bool PlanEmitter::reserve_temps(int count, const char *kernel) {
  if (tile_registers_ + count <= kVectorRegisters) return true;
  fail(std::string("codegen: ") + kernel + " needs " + std::to_string(tile_registers_ + count) +
       " vector registers (tile " + std::to_string(tile_registers_) + " + temporaries)");
  return false;
}

void PlanEmitter::load_edge_mask(Vreg mask, int valid) {
  if (valid <= 0 || valid >= kLanes) {
    fail("codegen: edge mask of " + std::to_string(valid) + " lanes");
    return;
  }
  // mask_table_ is kLanes all-ones lanes then kLanes zero lanes: starting kLanes - valid
  // lanes in leaves exactly `valid` ones.
  vmovups(Xbyak::Ymm(mask), ptr[rip + *mask_table_ + 4 * (kLanes - valid)]);
}

void PlanEmitter::load_edge(Vreg dst, Vreg mask, const Mem &src, int valid) {
  const Xbyak::Xmm x(dst.idx);
  switch (valid) {
    case 1:
      vmovss(x, src);
      return;
    case 2:
      vmovsd(x, src);
      return;
    case 4:
      vmovups(x, src);
      return;
    default:
      vmaskmovps(dst, mask, src);
  }
}

void PlanEmitter::compute_heights() {
  // Children are built after their parent (plan.cpp appends in pre-order), so one reverse
  // sweep sees every child before its parent.
  height_.assign(plan_->nodes.size(), 0);
  for (size_t id = plan_->nodes.size(); id-- > 0;) {
    const PlanNode &n = plan_->nodes[id];
    int h = 0;
    for (int c : n.children)
      if (c >= 0) {
        if (static_cast<size_t>(c) <= id || static_cast<size_t>(c) >= plan_->nodes.size()) {
          fail("codegen: malformed plan (child before parent)");
          return;
        }
        h = std::max(h, height_[static_cast<size_t>(c)]);
      }
    height_[id] = h + (n.kind == NodeKind::Loop || n.kind == NodeKind::Interleave ? 1 : 0);
  }
  max_height_ = height_.empty() ? 0 : *std::max_element(height_.begin(), height_.end());
}

void PlanEmitter::emit(const EmitRequest &req, uint8_t *buffer, size_t capacity) {
  restart(buffer, capacity);
  req_ = &req;
  plan_ = req.plan;
  max_height_ = 0;
  tile_registers_ = 0;
  tile_tensor_ = -1;
  cursor_ = PackCursor{};
  outlined_tiles_ = tile_calls_ = carried_packs_ = 0;
  Xbyak::Label mask_table;
  mask_table_ = &mask_table;
  emit_function();
  mask_table_ = nullptr;
}

namespace {

// The C copy's row stride: whole lines, plus one so that its rows do not alias.
int64_t c_copy_stride(int64_t cols) {
  int64_t ld = (cols + 15) / 16 * 16 + 16;
  if (ld * 4 % PlanEmitter::kAliasBytes == 0) ld += 16;
  return ld;
}

// A stage of the user's C (several rows) from main memory: where a C copy may go.
bool stages_user_c_from_memory(const PlanNode &n) {
  return n.kind == NodeKind::Stage && n.operand == 2 && n.spec.operand_count() == 3 &&
         n.spec.operands[2].level == Level::GL && n.tensors[2] == 2 && n.spec.dims[0] > 1;
}

}  // namespace

void PlanEmitter::emit_function() {
  if (plan_->root < 0 || static_cast<size_t>(plan_->root) >= plan_->nodes.size() ||
      plan_->tensors.size() < 3) {
    fail("codegen: empty or malformed plan");
    return;
  }
  const int64_t lds[3] = {req_->lda, req_->ldb, req_->ldc};
  tensors_.assign(plan_->tensors.size(), TensorState{});
  const Xbyak::Reg64 user_regs[3] = {reg_a, reg_b, reg_c};
  for (int i = 0; i < 3; ++i) {
    const PlanTensor &t = plan_->tensors[static_cast<size_t>(i)];
    const LayoutKind k = t.spec.layout.kind;
    if (k != LayoutKind::RowMajor && k != LayoutKind::ColMajor) {
      fail("codegen: user tensor with a non-user layout");
      return;
    }
    const int64_t need = k == LayoutKind::RowMajor ? t.cols : t.rows;
    if (lds[i] < need) {
      fail("codegen: leading dimension " + std::to_string(lds[i]) + " of operand " +
           std::to_string(i) + " is smaller than " + std::to_string(need));
      return;
    }
    tensors_[static_cast<size_t>(i)] = live_state(user_regs[i], lds[i], t.spec.layout);
  }
  compute_heights();
  if (failed()) return;
  plan_c_copy();
  ahead_offset_ = c_copy_.bytes > 0 ? c_copy_.offset + c_copy_.bytes : plan_->workspace_bytes;
  ahead_offset_ = (ahead_offset_ + 63) / 64 * 64;
  ahead_bytes_ = 0;
  links_.clear();
  find_outlined_tiles();
  FrameNeeds needs = frame_needs();
  ahead_slot_ = needs.workspace ? needs.spill_slots++ : -1;
  preamble(needs);
  if (ahead_slot_ >= 0) mov(spill_slot(ahead_slot_), 0);
  emit_node(plan_->root);
  postamble();
  emit_outlined_tiles();
  align(32);
  L(*mask_table_);
  uint8_t table[2 * kLanes * 4];
  std::memset(table, 0xff, kLanes * 4);
  std::memset(table + kLanes * 4, 0, kLanes * 4);
  data(table, sizeof table);
}

EmitterBase::FrameNeeds PlanEmitter::frame_needs() const {
  FrameNeeds needs;
  needs.spill_slots = std::max(0, max_height_ - kCounterRegisters);
  bool temporaries = false, grid = false, buffers = false;
  for (const PlanNode &n : plan_->nodes) {
    grid = grid || n.kind == NodeKind::Grid;
    temporaries =
        temporaries || (n.kind == NodeKind::Kernel && kernel_writes_temporaries(n.kernel));
  }
  for (const PlanTensor &t : plan_->tensors)
    buffers = buffers || t.role == PlanTensor::Role::Buffer;
  // Loops of height 3, 4 and 5 count in rbx, rbp and r12; the temporaries (a grid's too) are
  // r13..r15, last in the saving order, so they take all six.
  constexpr int kCallerSavedCounters = 2;  // r10, r11
  if (c_copy_.bytes > 0) {  // the copy loops use the temporaries and keep C's register aside
    temporaries = buffers = true;
    needs.spill_slots = c_copy_.slot + 1;
  }
  needs.saved_registers = temporaries || grid
                              ? kSavedRegisters
                              : std::clamp(max_height_ - kCallerSavedCounters, 0,
                                           kCounterRegisters - kCallerSavedCounters);
  needs.workspace = buffers;
  needs.range = grid;
  needs.copies = plan_->reduction_parts() > 0;
  return needs;
}

void PlanEmitter::plan_c_copy() {
  c_copy_ = CCopy{};
  // Only rows a multiple of 4 KiB apart alias; a grid would need a copy per thread.
  if (req_->ldc * 4 % kAliasBytes != 0) return;
  for (const PlanNode &n : plan_->nodes)
    if (n.kind == NodeKind::Grid) return;
  for (const PlanNode &n : plan_->nodes)
    if (stages_user_c_from_memory(n))
      c_copy_.bytes =
          std::max<int64_t>(c_copy_.bytes, n.spec.dims[0] * c_copy_stride(n.spec.dims[1]) * 4);
  c_copy_.offset = (plan_->workspace_bytes + 63) / 64 * 64;
  c_copy_.slot = std::max(0, max_height_ - kCounterRegisters);
}

bool PlanEmitter::copies_c(const PlanNode &n) const {
  return c_copy_.bytes > 0 && stages_user_c_from_memory(n);
}

int64_t PlanEmitter::workspace_bytes() const {
  return std::max({plan_->workspace_bytes, c_copy_.bytes > 0 ? c_copy_.offset + c_copy_.bytes : 0,
                   ahead_bytes_ > 0 ? ahead_offset_ + ahead_bytes_ : 0});
}

void PlanEmitter::emit_c_copy_stage(int id) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  if (!tensors_[2].live || tile_registers_ != 0) {
    fail("codegen: C copied inside a register tile");
    return;
  }
  const TensorState user = tensors_[2];
  const int64_t rows = n.spec.dims[0], cols = n.spec.dims[1], ld = c_copy_stride(cols);
  mov(spill_slot(c_copy_.slot), user.reg);
  if (n.spec.op == Op::MatmulAccum) {  // a Matmul below overwrites all of it first
    lea(reg_src, mem(user.reg, user.disp));
    mov(reg_dst, workspace_slot());
    add_imm(reg_dst, c_copy_.offset);
    copy_rows(rows, cols, user.ld, ld);
  }
  mov(user.reg, workspace_slot());
  add_imm(user.reg, c_copy_.offset);
  tensors_[2] = live_state(user.reg, ld, user.layout);
  if (n.children[0] >= 0) emit_node(n.children[0]);
  lea(reg_src, mem(user.reg, tensors_[2].disp));
  mov(reg_dst, spill_slot(c_copy_.slot));
  add_imm(reg_dst, user.disp);
  copy_rows(rows, cols, ld, user.ld);
  mov(user.reg, spill_slot(c_copy_.slot));
  tensors_[2] = user;
}

void PlanEmitter::copy_rows(int64_t rows, int64_t cols, int64_t src_ld, int64_t dst_ld) {
  if (!reserve_temps(1, "the C copy")) return;
  const Vreg v = temp(0);
  const Xbyak::Xmm x(v.idx);
  const int64_t vectors = cols / kLanes, tail = cols % kLanes;
  mov_imm(reg_count, rows);
  const size_t row_top = here();
  if (vectors > 0) {
    mov_imm(reg_count_outer, vectors);
    const size_t vector_top = here();
    vmovups(v, mem(reg_src, 0));
    vmovups(mem(reg_dst, 0), v);
    add_imm(reg_src, 4 * kLanes);
    add_imm(reg_dst, 4 * kLanes);
    dec(reg_count_outer);
    jnz_back(vector_top);
  }
  for (int64_t t = 0; t < tail; ++t) {
    vmovss(x, mem(reg_src, 4 * t));
    vmovss(mem(reg_dst, 4 * t), x);
  }
  add_imm(reg_src, 4 * (src_ld - vectors * kLanes));
  add_imm(reg_dst, 4 * (dst_ld - vectors * kLanes));
  dec(reg_count);
  jnz_back(row_top);
}

void PlanEmitter::emit_node(int id) {
  if (failed()) return;
  links_.push_back({id, Link::Barrier, Shifts{}});
  emit_node_of_kind(id);
  links_.pop_back();
}

void PlanEmitter::emit_node_of_kind(int id) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  switch (n.kind) {
    case NodeKind::Loop:
      emit_loop(id);
      return;
    case NodeKind::Interleave:
      emit_interleave(id);
      return;
    case NodeKind::Grid:
      // The runtime hands out a grid's iterations; only the root's iterations are visible.
      if (id != plan_->root) {
        fail("codegen: a parallel grid below the root");
        return;
      }
      n.dim == 2 ? emit_parallel_split_k(id) : emit_parallel_grid(id);
      return;
    case NodeKind::Block:
      for (int c : n.children)
        if (c >= 0) emit_node(c);
      return;
    case NodeKind::Alloc:
      emit_alloc(id);
      return;
    case NodeKind::Stage: {
      if (copies_c(n)) {
        emit_c_copy_stage(id);
        return;
      }
      // Cache staging copies nothing; a tile staged from main memory is prefetched ahead, and
      // packs below a stage from L3 prefetch their source as from L3.
      TensorState *st = nullptr;
      if (n.operand >= 0 && n.operand < n.spec.operand_count() &&
          n.spec.operands[static_cast<size_t>(n.operand)].level >= Level::L3) {
        const int tid = n.tensors[static_cast<size_t>(n.operand)];
        if (tid >= 0 && static_cast<size_t>(tid) < tensors_.size())
          st = &tensors_[static_cast<size_t>(tid)];
      }
      links_.back().link = Link::Transparent;
      if (st == nullptr) {
        if (n.children[0] >= 0) emit_node(n.children[0]);
        return;
      }
      const TensorState outer = *st;
      const Level from = n.spec.operands[static_cast<size_t>(n.operand)].level;
      st->staged_from = std::max(st->staged_from, from);
      if (from == Level::GL)
        st->stream_next_tile_bytes = look_ahead_fits(n) ? st->next_tile_bytes : 0;
      if (n.children[0] >= 0) emit_node(n.children[0]);
      st->staged_from = outer.staged_from;
      st->stream_next_tile_bytes = outer.stream_next_tile_bytes;
      return;
    }
    case NodeKind::Kernel:
      emit_kernel_call(id);
      return;
  }
  fail("codegen: unknown plan node kind");
}

bool PlanEmitter::loop_shifts(const PlanNode &n, int dim, int64_t step, Shifts *out) {
  out->clear();
  if (dim < 0 || dim > 2 || step <= 0 || n.trips < 0 || n.trips2 < 0) {
    fail("codegen: malformed loop node");
    return false;
  }
  for (int o = 0; o < n.spec.operand_count(); ++o) {
    const auto axes = n.spec.operand_dims(o);
    for (int axis = 0; axis < 2; ++axis) {
      if (axes[static_cast<size_t>(axis)] != dim) continue;
      const int tid = n.tensors[static_cast<size_t>(o)];
      if (tid < 0 || !tensors_[static_cast<size_t>(tid)].live) {
        fail("codegen: loop over a tensor that is not live");
        return false;
      }
      const PlanTensor &t = plan_->tensors[static_cast<size_t>(tid)];
      if (t.role == PlanTensor::Role::Registers) {
        fail("codegen: a loop moves a register tile (registers are named, not addressed)");
        return false;
      }
      if (!panel_step_ok(t.spec.layout, axis, n.spec.dims[static_cast<size_t>(dim)], step)) {
        fail("codegen: loop step breaks panel alignment: increments would not be constant");
        return false;
      }
      const int64_t inc = 4 * element_offset(t.spec.layout, tensors_[static_cast<size_t>(tid)].ld,
                                             axis == 0 ? step : 0, axis == 1 ? step : 0);
      if (!out->push(tid, inc)) {
        fail("codegen: a loop moves more operand axes than a spec has");
        return false;
      }
    }
  }
  return true;
}

void PlanEmitter::advance(const Shifts &shifts, int64_t times) {
  for (const Shift &s : shifts)
    add_imm(tensors_[static_cast<size_t>(s.first)].reg, s.second * times);
}

void PlanEmitter::displace(const Shifts &shifts, int64_t times) {
  for (const Shift &s : shifts) tensors_[static_cast<size_t>(s.first)].disp += s.second * times;
}

void PlanEmitter::counter_set(int height, int64_t value) {
  if (height <= kCounterRegisters) {
    mov_imm(reg_loop[height - 1], value);
  } else {
    mov_imm(reg_scratch, value);
    mov(spill_slot(height - kCounterRegisters - 1), reg_scratch);
  }
}

void PlanEmitter::counter_compare(int height, int32_t value) {
  if (height <= kCounterRegisters) {
    cmp(reg_loop[height - 1], value);
  } else {
    cmp(spill_slot(height - kCounterRegisters - 1), value);
  }
}

void PlanEmitter::counter_dec(int height) {
  if (height <= kCounterRegisters) {
    dec(reg_loop[height - 1]);
  } else {
    dec(spill_slot(height - kCounterRegisters - 1));
  }
}

void PlanEmitter::emit_loop(int id) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  Shifts shifts;
  if (!loop_shifts(n, n.dim, n.step, &shifts)) return;
  // Inside the loop, the next tile of each tensor it moves is one step on.
  std::array<int64_t, Shifts::kCapacity> outer_next{};
  size_t i = 0;
  for (const Shift &sh : shifts)
    outer_next[i++] =
        std::exchange(tensors_[static_cast<size_t>(sh.first)].next_tile_bytes, sh.second);
  emit_loop_iterations(id, shifts);
  i = 0;
  for (const Shift &sh : shifts)
    tensors_[static_cast<size_t>(sh.first)].next_tile_bytes = outer_next[i++];
}

void PlanEmitter::emit_loop_iterations(int id, const Shifts &shifts) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  const int body = n.children[0], rest = n.children[1], first = n.children[2];
  const int height = height_[static_cast<size_t>(id)];
  int64_t iterations = n.trips;
  int64_t done_static = 0, done_dynamic = 0;  // iterations folded into displacements / adds
  const bool has_first = first >= 0 && iterations > 0;
  const bool ahead = pipelines_pack(id, iterations - (has_first ? 1 : 0), shifts);
  const bool first_ahead = ahead && has_first && first_packs_ahead(id);
  // This loop's link, pushed by emit_node (by index: the children push theirs).
  const size_t link = links_.size() - 1;
  links_[link].shifts = shifts;
  if (has_first) {
    links_[link].link = iterations > 1 ? Link::FirstIteration : Link::LastStatic;
    first_ahead ? emit_first_packing_ahead(id) : emit_node(first);
    displace(shifts, 1);
    ++done_static;
    --iterations;
  }
  if (iterations > 0 && body < 0) {
    fail("codegen: loop without a body");
    return;
  }
  links_[link].link = Link::Barrier;
  if (iterations > 0 && plan_->nodes[static_cast<size_t>(body)].kind == NodeKind::Kernel) {
    emit_unrolled_kernel_loop(id, iterations, shifts);
    // It leaves the origins after all its iterations; remember how to take them back.
    if (iterations <= kFullUnroll) {
      done_static += iterations;
    } else {
      done_dynamic += iterations / kUnroll * kUnroll;
      done_static += iterations % kUnroll;
    }
  } else if (iterations == 1) {
    links_[link].link = Link::LastStatic;
    emit_node(body);
    displace(shifts, 1);
    ++done_static;
  } else if (ahead) {
    emit_pipelined_pack_loop(id, iterations, shifts, first_ahead);
    done_dynamic += iterations;
  } else if (iterations > 1) {
    links_[link].link = Link::Counted;
    emit_counted_loop(body, height, iterations, shifts);
    done_dynamic += iterations;
  }
  // The origins now sit on the remainder tile, the loop's last.
  links_[link].link = Link::Barrier;
  if (rest >= 0) {
    for (const Shift &sh : shifts) tensors_[static_cast<size_t>(sh.first)].next_tile_bytes = 0;
    emit_node(rest);
  }
  advance(shifts, -done_dynamic);
  displace(shifts, -done_static);
}

void PlanEmitter::emit_counted_loop(int body, int height, int64_t iterations,
                                    const Shifts &shifts) {
  counter_set(height, iterations);
  const size_t top = here();
  emit_node(body);
  advance(shifts, 1);
  counter_dec(height);
  jnz_back(top);
}

void PlanEmitter::emit_interleave(int id) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  Shifts shifts;  // one element along k: A's next column, B's next row
  if (!loop_shifts(n, 2, 1, &shifts)) return;
  const int body = n.children[0], rest = n.children[1], first = n.children[2];
  const int height = height_[static_cast<size_t>(id)];
  int64_t iterations = n.trips, done_static = 0, done_dynamic = 0;
  if (first >= 0 && iterations > 0) {
    open_views(n, first);
    emit_node(first);
    displace(shifts, 1);
    ++done_static;
    --iterations;
  }
  if (iterations > 0 && body < 0) {
    fail("codegen: interleave without a body");
    return;
  }
  if (iterations > 0) {
    open_views(n, body);
    emit_counted_loop(body, height, iterations, shifts);
    done_dynamic += iterations;
  }
  // The origins are past the first chunk; the rows after the last one are further on.
  if (rest >= 0) {
    const int64_t skip = int64_t{n.step - 1} * n.trips;
    displace(shifts, skip);
    emit_node(rest);
    displace(shifts, -skip);
  }
  advance(shifts, -done_dynamic);
  displace(shifts, -done_static);
}

void PlanEmitter::open_views(const PlanNode &n, int child) {
  if (child < 0 || static_cast<size_t>(child) >= plan_->nodes.size() || n.step < 1) {
    fail("codegen: malformed interleave node");
    return;
  }
  for (int o = 0; o < 2; ++o) {
    const int view = plan_->nodes[static_cast<size_t>(child)].tensors[static_cast<size_t>(o)];
    const TensorState &of = state(n, o);
    if (view < 3 || static_cast<size_t>(view) >= tensors_.size() || !of.live) {
      fail("codegen: an interleave's body reads no view of its operands");
      return;
    }
    // A view of a single row of A is column-major with the chunks' stride (in elements of A);
    // B's rows are a chunk apart. The plan's k strides say how far (PlanTensor::k_stride).
    const PlanTensor &v = plan_->tensors[static_cast<size_t>(view)];
    const int64_t k_step = (o == 0 ? of.col_bytes : of.row_bytes) / 4;
    TensorState &st = tensors_[static_cast<size_t>(view)];
    st = live_state(of.reg, k_step * (v.k_stride / tensor(n, o).k_stride), v.spec.layout);
    st.disp = of.disp;
    st.staged_from = std::max(of.staged_from, n.spec.operands[static_cast<size_t>(o)].level);
    st.long_runs = o == 1;
  }
}

void PlanEmitter::emit_unrolled_kernel_loop(int id, int64_t iterations, const Shifts &shifts) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  const int body = n.children[0];
  if (iterations <= kFullUnroll) {
    for (int64_t u = 0; u < iterations; ++u) {
      emit_node(body);
      displace(shifts, 1);
    }
    return;
  }
  counter_set(height_[static_cast<size_t>(id)], iterations / kUnroll);
  const size_t top = here();
  for (int64_t u = 0; u < kUnroll; ++u) {
    emit_node(body);
    displace(shifts, 1);
  }
  step_pack_cursor();
  displace(shifts, -kUnroll);
  advance(shifts, kUnroll);
  counter_dec(height_[static_cast<size_t>(id)]);
  jnz_back(top);
  for (int64_t u = 0; u < iterations % kUnroll; ++u) {
    emit_node(body);
    displace(shifts, 1);
  }
}

void PlanEmitter::begin_range(int64_t iterations, Xbyak::Label &done) {
  // index = clamp(begin, 0, ...), end = min(end, iterations): a caller's sloppy range never
  // runs iterations that do not exist. Leaves index in reg_count.
  mov(reg_count, begin_slot());
  xor_(reg_scratch.cvt32(), reg_scratch.cvt32());
  test(reg_count, reg_count);
  cmovs(reg_count, reg_scratch);
  mov(reg_count_outer, end_slot());
  mov(reg_scratch, iterations);
  cmp(reg_count_outer, reg_scratch);
  cmovg(reg_count_outer, reg_scratch);
  mov(end_slot(), reg_count_outer);
  mov(index_slot(), reg_count);
  cmp(reg_count, reg_count_outer);
  jge(done);
}

void PlanEmitter::next_in_range(Xbyak::Label &top) {
  mov(reg_count, index_slot());
  inc(reg_count);
  mov(index_slot(), reg_count);
  cmp(reg_count, end_slot());
  jl(top);
}

void PlanEmitter::add_shift_multiple(int tensor, const Shifts &shifts,
                                     const Xbyak::Address &times) {
  const Xbyak::Reg64 &reg = tensors_[static_cast<size_t>(tensor)].reg;
  for (const Shift &s : shifts)
    if (s.first == tensor && s.second != 0) {
      mov(reg_scratch, s.second);
      imul(reg_scratch, times);
      add(reg, reg_scratch);
    }
}

int64_t PlanEmitter::copy_floats() const {
  if (plan_->reduction_parts() == 0) return 0;
  const int64_t rows = plan_->nodes[static_cast<size_t>(plan_->root)].spec.dims[0];
  return (rows * req_->ldc + 15) / 16 * 16;
}

// Part i of k: A and B moved i parts along k, C the call's for part 0 and its copy i - 1
// otherwise; each part computed afresh, so any range of parts runs on its own.
void PlanEmitter::emit_parallel_split_k(int id) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  Shifts by_part;
  if (!loop_shifts(n, 2, n.step, &by_part)) return;
  const bool last = n.spec.dims[2] % n.step != 0;
  const int64_t parts = n.trips + (last ? 1 : 0);
  if (n.trips < 1 || n.children[0] < 0 || (n.trips > 1) != (n.children[1] >= 0) ||
      last != (n.children[2] >= 0) || n.children[3] >= 0 || parts != plan_->grid_iterations() ||
      n.trips >= INT32_MAX || n.tensors[2] != 2) {
    fail("codegen: malformed split of k");
    return;
  }
  for (const Shift &s : by_part)
    if (s.first > 1) {
      fail("codegen: a split of k moves a tensor other than A and B");
      return;
    }
  const Xbyak::Reg64 &c = tensors_[2].reg;
  Xbyak::Label top, next, done, copy, in_last;
  begin_range(parts, done);
  for (int t = 0; t < 3; ++t) mov(base_slot(t), tensors_[static_cast<size_t>(t)].reg);

  L(top);
  for (int t = 0; t < 2; ++t) {
    mov(tensors_[static_cast<size_t>(t)].reg, base_slot(t));
    add_shift_multiple(t, by_part, index_slot());
  }
  cmp(index_slot(), 0);
  jne(copy);
  mov(c, base_slot(2));
  emit_node(n.children[0]);
  jmp(next);
  L(copy);
  mov(c, index_slot());
  dec(c);
  mov(reg_scratch, copy_floats() * 4);
  imul(c, reg_scratch);
  add(c, copies_slot());
  if (last) {
    cmp(index_slot(), static_cast<int32_t>(n.trips));
    jge(in_last);
  }
  if (n.children[1] >= 0) {
    emit_node(n.children[1]);
    jmp(next);
  }
  if (last) {
    L(in_last);
    emit_node(n.children[2]);
  }
  L(next);
  next_in_range(top);
  L(done);
}

void PlanEmitter::emit_parallel_grid(int id) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  Shifts by_row, by_column;
  if (!loop_shifts(n, 0, n.step, &by_row) || !loop_shifts(n, 1, n.step2, &by_column)) return;
  const bool last_rows = n.children[1] >= 0, last_columns = n.children[2] >= 0;
  const int64_t columns = n.trips2 + (last_columns ? 1 : 0);
  const int64_t total = (n.trips + (last_rows ? 1 : 0)) * columns;
  if (n.children[0] < 0 || (last_rows && last_columns && n.children[3] < 0) ||
      total != plan_->grid_iterations() || n.trips >= INT32_MAX || n.trips2 >= INT32_MAX) {
    fail("codegen: malformed parallel grid");
    return;
  }
  // Every tile's origins are the call's pointers plus its row and column times a constant:
  // computed afresh per tile, any range of iterations runs on its own.
  std::vector<int> moved;
  for (const auto *shifts : {&by_row, &by_column})
    for (const Shift &s : *shifts)
      if (std::find(moved.begin(), moved.end(), s.first) == moved.end()) moved.push_back(s.first);
  for (int t : moved)
    if (t > 2) {
      fail("codegen: a parallel grid moves a tensor other than A, B, C");
      return;
    }
  Xbyak::Label top, next, done;
  begin_range(total, done);
  for (int t : moved) mov(base_slot(t), tensors_[static_cast<size_t>(t)].reg);
  // The first tile's row and column; div takes rdx (reg_c), whose value is saved above.
  mov(reg_scratch, reg_count);
  xor_(reg_c.cvt32(), reg_c.cvt32());
  mov(reg_count_outer, columns);
  div(reg_count_outer);
  mov(row_slot(), reg_scratch);
  mov(column_slot(), reg_c);

  L(top);
  for (int t : moved) {
    mov(tensors_[static_cast<size_t>(t)].reg, base_slot(t));
    add_shift_multiple(t, by_row, row_slot());
    add_shift_multiple(t, by_column, column_slot());
  }
  // Which of the four tile shapes: full, last rows, last columns, corner.
  Xbyak::Label in_last_rows, in_last_columns, corner;
  if (last_rows) {
    cmp(row_slot(), static_cast<int32_t>(n.trips));
    jge(in_last_rows);
  }
  if (last_columns) {
    cmp(column_slot(), static_cast<int32_t>(n.trips2));
    jge(in_last_columns);
  }
  emit_node(n.children[0]);
  jmp(next);
  if (last_columns) {
    L(in_last_columns);
    emit_node(n.children[2]);
    jmp(next);
  }
  if (last_rows) {
    L(in_last_rows);
    if (last_columns) {
      cmp(column_slot(), static_cast<int32_t>(n.trips2));
      jge(corner);
    }
    emit_node(n.children[1]);
    if (last_columns) {
      jmp(next);
      L(corner);
      emit_node(n.children[3]);
    }
  }
  L(next);
  // The next tile: along the row, then to the next row.
  Xbyak::Label same_row;
  mov(reg_count, column_slot());
  inc(reg_count);
  cmp(reg_count, static_cast<int32_t>(columns));
  jl(same_row);
  xor_(reg_count.cvt32(), reg_count.cvt32());
  inc(row_slot());
  L(same_row);
  mov(column_slot(), reg_count);
  next_in_range(top);
  L(done);
}

void PlanEmitter::emit_alloc(int id) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  const int nt = n.new_tensor;
  if (nt < 0 || static_cast<size_t>(nt) >= plan_->tensors.size()) {
    fail("codegen: alloc without a tensor");
    return;
  }
  const PlanTensor &t = plan_->tensors[static_cast<size_t>(nt)];
  TensorState &st = tensors_[static_cast<size_t>(nt)];
  if (t.role == PlanTensor::Role::Registers && outline_[static_cast<size_t>(id)] &&
      !tiles_in_place_) {
    emit_tile_call(id);
    return;
  }
  if (t.role == PlanTensor::Role::Registers) {
    if (tile_tensor_ >= 0) {
      fail("codegen: nested register tiles");
      return;
    }
    const int count = register_tile_count(t);
    if (count > kVectorRegisters) {
      fail("codegen: register tile of " + std::to_string(count) + " vectors");
      return;
    }
    tile_tensor_ = nt;
    tile_registers_ = count;
    st = live_state(Xbyak::Reg64(), 0, t.spec.layout);
  } else if (t.role == PlanTensor::Role::Buffer) {
    Xbyak::Reg64 reg;
    if (!buffer_register(n, &reg)) return;
    mov(reg, workspace_slot());
    add_imm(reg, t.workspace_offset);
    st = live_state(reg, t.ext, t.spec.layout);
  } else {
    fail("codegen: alloc of a user tensor");
    return;
  }
  if (t.role == PlanTensor::Role::Registers) prefetch_store_target(n);
  for (int c : n.children)
    if (c >= 0) emit_node(c);
  st.live = false;
  if (nt == tile_tensor_) {
    tile_tensor_ = -1;
    tile_registers_ = 0;
  }
}

bool PlanEmitter::buffer_register(const PlanNode &alloc, Xbyak::Reg64 *reg) {
  const PlanTensor &t = plan_->tensors[static_cast<size_t>(alloc.new_tensor)];
  if (alloc.operand != 0 && alloc.operand != 1) {
    fail("codegen: packed buffer for an operand other than A or B");
    return false;
  }
  *reg = alloc.operand == 0 ? reg_a_panel : reg_b_panel;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].live && tensors_[i].reg == *reg &&
        plan_->tensors[i].role == PlanTensor::Role::Buffer) {
      fail("codegen: two packed buffers of one operand are live at once");
      return false;
    }
  if (t.workspace_offset < 0 || t.workspace_offset + t.bytes > plan_->workspace_bytes) {
    fail("codegen: buffer outside the workspace");
    return false;
  }
  return true;
}

bool PlanEmitter::same_tile(TileRecord *a, TileRecord *b) const {
  const int64_t lds[3] = {req_->lda, req_->ldb, req_->ldc};
  // Tensors met so far, as (a's, b's) pairs: each side's must map one to one.
  std::array<std::pair<int, int>, 8> seen{};
  size_t seen_count = 0, input_count = 0;
  auto same_tensor = [&](int x, int y, bool allocating) {
    const int count = static_cast<int>(plan_->tensors.size());
    if (x < 0 || y < 0 || x >= count || y >= count) return x == y;
    for (size_t i = 0; i < seen_count; ++i)
      if (seen[i].first == x || seen[i].second == y) return seen[i] == std::make_pair(x, y);
    if (seen_count == seen.size()) return false;
    seen[seen_count++] = {x, y};
    const PlanTensor &s = plan_->tensors[static_cast<size_t>(x)],
                     &t = plan_->tensors[static_cast<size_t>(y)];
    if (s.role != t.role || !(s.spec == t.spec) || s.ext != t.ext || s.k_stride != t.k_stride)
      return false;
    if (allocating)
      return s.rows == t.rows && s.cols == t.cols && s.workspace_offset == t.workspace_offset &&
             s.bytes == t.bytes;
    // An input: code reads it through its register, layout and stride only (where its origin
    // is, what it streams, and the stride of a C copy around it, the call sites compare).
    if (input_count == a->inputs.size() || (x < 3 ? lds[x] : s.ext) != (y < 3 ? lds[y] : t.ext))
      return false;
    a->inputs[input_count] = static_cast<int16_t>(x);
    b->inputs[input_count++] = static_cast<int16_t>(y);
    return true;
  };
  // Both subtrees in pre-order, side by side. Children come after their parents
  // (compute_heights checked), so this ends.
  std::array<std::pair<int, int>, 32> pending{};
  size_t top = 0;
  pending[top++] = {a->node, b->node};
  while (top > 0) {
    const auto [x, y] = pending[--top];
    if (x < 0 || y < 0) {
      if (x != y) return false;
      continue;
    }
    const PlanNode &n = plan_->nodes[static_cast<size_t>(x)],
                   &m = plan_->nodes[static_cast<size_t>(y)];
    if (n.kind != m.kind || n.kernel != m.kernel || n.dim != m.dim || n.step != m.step ||
        n.trips != m.trips || n.step2 != m.step2 || n.trips2 != m.trips2 ||
        n.operand != m.operand || !same_spec(n.spec, m.spec))
      return false;
    if (n.kind == NodeKind::Alloc && !same_tensor(n.new_tensor, m.new_tensor, true)) return false;
    for (size_t o = 0; o < n.tensors.size(); ++o)
      if (!same_tensor(n.tensors[o], m.tensors[o], false)) return false;
    if (top + n.children.size() > pending.size()) return false;
    for (size_t slot = n.children.size(); slot-- > 0;)
      pending[top++] = {n.children[slot], m.children[slot]};
  }
  return true;
}

void PlanEmitter::find_outlined_tiles() {
  outline_.assign(plan_->nodes.size(), 0);
  tiles_.clear();
  outlined_.clear();
  tile_calls_made_.clear();
  // The register tiles emission will reach: a loop whose first iteration is all it runs
  // never emits its body.
  std::vector<int> &pending = pending_nodes_;
  pending.assign(1, plan_->root);
  while (!pending.empty()) {
    const int id = pending.back();
    pending.pop_back();
    const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
    if (n.kind == NodeKind::Alloc && n.new_tensor >= 0 &&
        static_cast<size_t>(n.new_tensor) < plan_->tensors.size() &&
        plan_->tensors[static_cast<size_t>(n.new_tensor)].role == PlanTensor::Role::Registers) {
      if (n.cost.cycles >= kOutlineCycles) tiles_.push_back({id, memo_hash(n.spec)});
      continue;  // tiles do not nest
    }
    // As emit_loop: a first iteration of its own, then the body for the rest.
    const bool loop = n.kind == NodeKind::Loop || n.kind == NodeKind::Interleave;
    const bool body_runs = !loop || n.trips > (n.children[2] >= 0 ? 1 : 0);
    for (size_t slot = 0; slot < n.children.size(); ++slot)
      if (n.children[slot] >= 0 && (slot != 0 || body_runs)) pending.push_back(n.children[slot]);
  }
  // Tiles of one spec side by side, first occurrence first. Each joins the first kind of its
  // spec it is like (a spec's tiles may read buffers of different extents, say), or leads a
  // kind of its own.
  std::sort(tiles_.begin(), tiles_.end(), [](const TileRecord &a, const TileRecord &b) {
    return a.hash != b.hash ? a.hash < b.hash : a.node < b.node;
  });
  std::array<size_t, 8> leaders{};  // of the current spec's kinds, made or to be made
  size_t leader_count = 0;
  for (size_t j = 0; j < tiles_.size(); ++j) {
    if (j == 0 || tiles_[j].hash != tiles_[j - 1].hash) leader_count = 0;
    bool joined = false;
    for (size_t l = 0; l < leader_count && !joined; ++l) {
      TileRecord &leader = tiles_[leaders[l]];
      if (!same_tile(&leader, &tiles_[j])) continue;
      if (leader.kind < 0) {
        leader.kind = static_cast<int>(outlined_.size());
        outline_[static_cast<size_t>(leader.node)] = static_cast<int32_t>(leaders[l] + 1);
        outlined_.emplace_back();
      }
      tiles_[j].kind = leader.kind;
      outline_[static_cast<size_t>(tiles_[j].node)] = static_cast<int32_t>(j + 1);
      joined = true;
    }
    if (!joined && leader_count < leaders.size()) leaders[leader_count++] = j;
  }
}

bool PlanEmitter::same_input(const TensorState &a, const TensorState &b) {
  return a.live == b.live && a.reg.getIdx() == b.reg.getIdx() && a.ld == b.ld &&
         a.layout == b.layout && a.linear_rows == b.linear_rows && a.linear_cols == b.linear_cols &&
         a.row_bytes == b.row_bytes && a.col_bytes == b.col_bytes &&
         a.staged_from == b.staged_from && a.stream_next_tile_bytes == b.stream_next_tile_bytes &&
         a.long_runs == b.long_runs;
}

void PlanEmitter::emit_tile_call(int id) {
  const TileRecord &record = tiles_[static_cast<size_t>(outline_[static_cast<size_t>(id)] - 1)];
  OutlinedTile &tile = outlined_[static_cast<size_t>(record.kind)];
  // Inputs must be live memory tensors, each in a register of its own, in the states of the
  // first call; anything else is emitted in place (where emit_alloc reports what is wrong).
  bool callable = true;
  for (size_t i = 0; i < record.inputs.size() && record.inputs[i] >= 0; ++i) {
    const TensorState &st = tensors_[static_cast<size_t>(record.inputs[i])];
    callable &= st.live && plan_->tensors[static_cast<size_t>(record.inputs[i])].role !=
                               PlanTensor::Role::Registers;
    for (size_t j = 0; j < i; ++j)
      callable &= tensors_[static_cast<size_t>(record.inputs[j])].reg != st.reg;
    if (tile.first != nullptr) callable &= same_input(st, tile.inputs[i]);
  }
  if (tile.first != nullptr) callable &= tile.cursor == cursor_;
  if (!callable) {
    tiles_in_place_ = true;
    emit_alloc(id);
    tiles_in_place_ = false;
    return;
  }
  if (tile.first == nullptr) {
    tile.first = &record;
    tile.cursor = cursor_;
    for (size_t i = 0; i < record.inputs.size() && record.inputs[i] >= 0; ++i) {
      tile.inputs[i] = tensors_[static_cast<size_t>(record.inputs[i])];
      tile.inputs[i].disp = 0;
    }
  }
  auto move_inputs = [&](int64_t sign) {
    for (int16_t tid : record.inputs)
      if (tid >= 0) {
        const TensorState &st = tensors_[static_cast<size_t>(tid)];
        add_imm(st.reg, sign * st.disp);
      }
  };
  move_inputs(1);
  tile_calls_made_.push_back({forward(x86::Forward::Call), record.kind});
  ++tile_calls_;
  move_inputs(-1);
}

void PlanEmitter::emit_outlined_tiles() {
  // A body never calls another tile (tiles do not nest), so the list is final here.
  tiles_in_place_ = true;
  set_frame_shift(8);
  for (OutlinedTile &tile : outlined_) {
    if (tile.first == nullptr) continue;  // every occurrence was emitted in place
    align(16);
    tile.start = here();
    for (size_t i = 0; i < tile.first->inputs.size() && tile.first->inputs[i] >= 0; ++i)
      tensors_[static_cast<size_t>(tile.first->inputs[i])] = tile.inputs[i];
    cursor_ = tile.cursor;
    emit_alloc(tile.first->node);
    ret();
    ++outlined_tiles_;
  }
  cursor_ = PackCursor{};
  for (const TileCall &c : tile_calls_made_)
    land(c.rel32, outlined_[static_cast<size_t>(c.kind)].start);
  set_frame_shift(0);
  tiles_in_place_ = false;
}

void PlanEmitter::prefetch_store_target(const PlanNode &alloc) {
  // A register tile that adds into memory reads its destination only after the whole k loop:
  // asking for those lines now hides their latency behind the FMAs. Only whole rows of the
  // tile are touched (prefetches never fault, but stay inside the tile anyway).
  const int epilogue = alloc.children[2];
  if (epilogue < 0) return;
  const PlanNode &store = plan_->nodes[static_cast<size_t>(epilogue)];
  if (store.kind != NodeKind::Kernel || !store.spec.accumulate ||
      (store.kernel != KernelId::StoreRows && store.kernel != KernelId::StoreDot))
    return;
  const PlanTensor &dst = tensor(store, 1);
  if (dst.spec.layout.kind != LayoutKind::RowMajor) return;
  const int64_t rows = store.spec.dims[0], cols = store.spec.dims[1];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; j += 16) prefetcht0(element(store, 1, i, j));
  if (cols > 1)
    for (int64_t i = 0; i < rows; ++i) prefetcht0(element(store, 1, i, cols - 1));
}

void PlanEmitter::emit_kernel_call(int id) {
  const PlanNode &n = plan_->nodes[static_cast<size_t>(id)];
  for (int o = 0; o < n.spec.operand_count(); ++o) {
    const int tid = n.tensors[static_cast<size_t>(o)];
    if (tid < 0 || static_cast<size_t>(tid) >= tensors_.size() ||
        !tensors_[static_cast<size_t>(tid)].live) {
      fail(std::string("codegen: ") + kernel_name(n.kernel) + " reads a tensor that is not live");
      return;
    }
    const PlanTensor &t = plan_->tensors[static_cast<size_t>(tid)];
    if (t.spec.layout.is_register() && tid != tile_tensor_) {
      fail("codegen: register operand outside its register tile");
      return;
    }
  }
  emit_catalogue_kernel(*this, n);
}

}  // namespace tessel
