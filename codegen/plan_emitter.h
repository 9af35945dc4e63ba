// The plan emitter: walks a plan tree (Loop / Block / Alloc / Stage / Kernel) and lowers it
// into one function, void fn(const KernelArgs *).
//
// Every live memory tensor (A, B, C, a packed buffer) keeps its tile origin in a register
// named by role, plus a static displacement that unrolled loops fold into addresses. A loop
// adds its constant per-iteration increment to the origins of the operands that span its
// dimension and takes it back after the loop (the search keeps panel tiles aligned, so the
// increment is the same for every iteration). The register tile of an Alloc is ymm0 upward;
// kernel temporaries follow it. Leaf kernels are emitted by the functions of kernels/, which
// reach operands only through the accessors below.
//
// A register tile that recurs in a plan (the same subtree reading operands of the same
// layouts and strides, as the remainder tiles of a large irregular shape do) is emitted once,
// as a local subroutine after the function's return, and called wherever it occurs: a 1000^3
// plan holds 47 register tiles of 13 kinds. Each call site moves the operands' registers by
// their static displacements around the call.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "emitter_base.h"
#include "jit_kernel.h"
#include "layout.h"
#include "plan.h"

namespace tessel {

class PlanEmitter : public EmitterBase {
 public:
  // One emitter writes any number of functions, one after the other (a thread keeps one:
  // building an Xbyak::CodeGenerator costs about what emitting a small kernel does).
  PlanEmitter(uint8_t *buffer, size_t capacity);

  // Emits the whole function for `req` at the start of `buffer` (page-aligned, `capacity`
  // bytes), forgetting any earlier one. Check status() afterwards.
  void emit(const EmitRequest &req, uint8_t *buffer, size_t capacity);
  // Of the last function: register tiles emitted as subroutines, and the calls to them.
  int outlined_tiles() const { return outlined_tiles_; }
  int tile_calls() const { return tile_calls_; }
  // Of the last function: pipelined pack loops whose last iteration may copy the first tile
  // of the next one (find_carries).
  int carried_packs() const { return carried_packs_; }
  // Workspace the function needs: its plan's buffers, then the C copy if any (see
  // plan_c_copy).
  int64_t workspace_bytes() const;
  // Floats of each copy of C a split of k writes (0 for other plans): see KernelArgs::copies.
  int64_t copy_floats() const;

  // ---- for kernel emitters ----------------------------------------------------------------
  static constexpr int kLanes = 8;  // f32 lanes of a ymm register
  static constexpr int kVectorRegisters = 16;
  // Addresses a multiple of this apart share their L1 set and look alike to the
  // store-to-load forwarding check (both use only the low address bits).
  static constexpr int64_t kAliasBytes = 4096;

  const Plan &plan() const { return *plan_; }
  const PlanTensor &tensor(const PlanNode &n, int operand) const {
    return plan_->tensors[static_cast<size_t>(n.tensors[static_cast<size_t>(operand)])];
  }
  // Address of element (i, j) of operand `operand`'s tile (memory operands only), plus
  // `extra_bytes`.
  Mem element(const PlanNode &n, int operand, int64_t i, int64_t j, int64_t extra_bytes = 0) {
    const TensorState &st = state(n, operand);
    return mem(st.reg, st.disp + bytes_from_origin(st, i, j) + extra_bytes);
  }
  // Byte offset of element (i, j) from the tile origin of a memory operand.
  int64_t element_bytes(const PlanNode &n, int operand, int64_t i, int64_t j) const {
    return bytes_from_origin(state(n, operand), i, j);
  }
  // Loads the tile origin of a memory operand into `dst`.
  void load_origin(const Xbyak::Reg64 &dst, const PlanNode &n, int operand);
  // Number of ymm registers the live register tile occupies (0 outside register tiles).
  int tile_registers() const { return tile_registers_; }
  // Accumulator register `index` of the live register tile.
  Vreg tile(int index) {
    if (index < 0 || index >= tile_registers_) return tile_out_of_range();
    return Vreg{index};
  }
  // Reserves `count` temporaries after the register tile; false (and a failure recorded)
  // when they do not fit the register file.
  bool reserve_temps(int count, const char *kernel);
  Vreg temp(int k) const { return Vreg{tile_registers_ + k}; }
  // Bytes ahead along a row to prefetch when the kernel reads a new line of `operand`: rows
  // staged from main memory are read a few at a time, and the hardware prefetchers alone keep
  // too few misses in flight (0 otherwise).
  int64_t stream_prefetch(const PlanNode &n, int operand) const;
  // Whether `operand` is read below a stage from main memory.
  bool streamed(const PlanNode &n, int operand) const;
  // Whether `operand`'s lines come from L3 or main memory: it lives there, or is read below a
  // stage from there (staging copies nothing).
  bool from_far(const PlanNode &n, int operand) const;
  // Bytes from a line of `operand` to the same line of the tile that the stage streaming it
  // from main memory stages next, when that tile is to be read one tile ahead into L2
  // (look_ahead_fits); 0 otherwise.
  int64_t stream_next_tile_bytes(const PlanNode &n, int operand) const {
    return state(n, operand).stream_next_tile_bytes;
  }
  // Where a copy of `operand` whose stage reads the next tile ahead (stream_next_tile_bytes)
  // prefetches, into L2, each line it reads, in bytes from that line: the same line of the
  // next tile, and three quarters of a tile on in whole rows `row_bytes` apart. Zeros when
  // there is no such stage.
  std::array<int64_t, 2> stream_look_ahead(const PlanNode &n, int operand, int64_t row_bytes) const;
  // Bytes from the tile origin of `operand` to the tile the innermost enclosing loop that
  // moves it visits next; 0 when no loop moves it or this is a loop's remainder tile. On a
  // loop's last iteration the tile lies past the loop's range (only worth a prefetch). Not
  // for code inside register tiles: a recurring tile is one subroutine for all its call
  // sites, which same_input does not compare on this.
  int64_t next_tile_bytes(const PlanNode &n, int operand) const {
    return state(n, operand).next_tile_bytes;
  }
  // Loads into `mask` a vmaskmovps mask whose first `valid` lanes (1..7) are set.
  void load_edge_mask(Vreg mask, int valid);
  // dst = the `valid` (1..7) floats at `src`, the other lanes zero, reading nothing beyond
  // them: vmovss, vmovsd or an xmm vmovups for 1, 2 or 4 floats, else vmaskmovps under `mask`
  // (loaded when edge_needs_mask(valid), kernels.h).
  void load_edge(Vreg dst, Vreg mask, const Mem &src, int valid);

 private:
  // Innermost loops around a multiply kernel are unrolled: up to kFullUnroll iterations
  // completely, longer ones kUnroll at a time with a straight-line tail. Four copies of the
  // 6x16 broadcast step are ~0.5 KiB, comfortably inside the decoded-uop cache, and amortize
  // the counter and the two pointer bumps over 48 FMAs (measured: 8 gains nothing more).
  static constexpr int64_t kUnroll = 4;
  static constexpr int64_t kFullUnroll = 8;
  struct TensorState {
    bool live = false;
    Xbyak::Reg64 reg = Xbyak::Reg64(0);  // tile origin (memory tensors; unused otherwise)
    int64_t disp = 0;                    // folded into every address (unrolled loops)
    int64_t ld = 0;  // leading dimension (user tensors) or extent (buffers), in elements
    Layout layout;   // the tensor's, kept here: kernels ask for an address per instruction
    // Offsets are linear in (i, j) for i < linear_rows and j < linear_cols: everywhere for
    // row- and column-major tensors, inside the first strip for panels (where kernels' tiles
    // sit). Bytes per row and per column there are computed once, so that most addresses need
    // no element_offset() call (and its two divisions).
    int64_t linear_rows = 0, linear_cols = 0;
    int64_t row_bytes = 0, col_bytes = 0;
    // The level a stage above read it from when that was L3 or main memory (VRF: none):
    // staging copies nothing, so its lines still come from there (streamed, from_far).
    Level staged_from = Level::VRF;
    int64_t stream_next_tile_bytes = 0;  // see the accessor
    // Read in runs that never restart (an Interleave's view of B): no prefetch ahead.
    bool long_runs = false;
    // From the origin to the tile the innermost loop moving it visits next (0: none).
    int64_t next_tile_bytes = 0;
  };
  static TensorState live_state(const Xbyak::Reg64 &reg, int64_t ld, Layout layout) {
    TensorState st{true, reg, 0, ld, layout};
    if (layout.is_register()) return st;
    st.linear_rows = layout.kind == LayoutKind::PanelRows ? layout.strip : INT64_MAX;
    st.linear_cols = layout.kind == LayoutKind::PanelCols ? layout.strip : INT64_MAX;
    st.row_bytes = element_offset(layout, ld, 1, 0) * 4;
    st.col_bytes = element_offset(layout, ld, 0, 1) * 4;
    return st;
  }
  const TensorState &state(const PlanNode &n, int operand) const {
    return tensors_[static_cast<size_t>(n.tensors[static_cast<size_t>(operand)])];
  }
  static int64_t bytes_from_origin(const TensorState &st, int64_t i, int64_t j) {
    if (i >= 0 && j >= 0 && i < st.linear_rows && j < st.linear_cols)
      return i * st.row_bytes + j * st.col_bytes;
    return element_offset(st.layout, st.ld, i, j) * 4;
  }
  Vreg tile_out_of_range();
  // An origin a loop moves: tensor and its byte increment per iteration.
  using Shift = std::pair<int, int64_t>;
  // A loop's shifts: at most one per axis of each of a spec's (at most three) operands. Fixed
  // storage: a loop asks for its shifts once per emission, and a vector's allocation cost more
  // than finding them.
  class Shifts {
   public:
    static constexpr size_t kCapacity = 6;
    const Shift *begin() const { return items_.data(); }
    const Shift *end() const { return items_.data() + count_; }
    bool push(int tensor, int64_t increment) {
      if (count_ == items_.size()) return false;
      items_[count_++] = {tensor, increment};
      return true;
    }
    void clear() { count_ = 0; }

   private:
    std::array<Shift, kCapacity> items_{};
    size_t count_ = 0;
  };

  void emit_function();
  void compute_heights();
  // A C tile staged from main memory whose rows lie a multiple of 4 KiB apart is accumulated
  // in a workspace copy with a padded stride and written back once: in place, its lines fall
  // in the L1 sets of every other operand that starts at the same page offset.
  void plan_c_copy();
  bool copies_c(const PlanNode &n) const;
  bool look_ahead_fits(const PlanNode &stage) const;
  void emit_c_copy_stage(int id);
  // Copies rows x cols floats from reg_src to reg_dst (strides in elements).
  void copy_rows(int64_t rows, int64_t cols, int64_t src_ld, int64_t dst_ld);
  // The preamble's share of the work: registers, spill slots and arguments the plan uses.
  FrameNeeds frame_needs() const;
  // Pushes the node's link (Barrier until the node says otherwise), emits it by its kind.
  void emit_node(int id);
  void emit_node_of_kind(int id);
  void emit_loop(int id);
  void emit_loop_iterations(int id, const Shifts &shifts);
  // `iterations` runs of `body`, counted by the loop register of `height`, each moving the
  // origins one shift on (left after the last).
  void emit_counted_loop(int body, int height, int64_t iterations, const Shifts &shifts);
  void emit_interleave(int id);
  // Makes the views of A and B that `child` of Interleave node `n` reads live, on the
  // registers and displacements of the tensors they view.
  void open_views(const PlanNode &n, int child);
  void emit_parallel_grid(int id);
  void emit_parallel_split_k(int id);
  // The parallel root's iteration range from begin_slot() and end_slot(), clamped to
  // [0, iterations) into index_slot() and end_slot(); jumps to `done` when it is empty.
  void begin_range(int64_t iterations, Xbyak::Label &done);
  // index_slot() + 1, and back to `top` while it is below end_slot().
  void next_in_range(Xbyak::Label &top);
  // Adds `tensor`'s shifts times the count in `times` to its register (a parallel root's
  // origins, computed afresh for each iteration from base_slot()).
  void add_shift_multiple(int tensor, const Shifts &shifts, const Xbyak::Address &times);
  void emit_unrolled_kernel_loop(int id, int64_t iterations, const Shifts &shifts);
  void emit_alloc(int id);
  // The register a packed buffer's origin lives in, checked free and inside the workspace.
  bool buffer_register(const PlanNode &alloc, Xbyak::Reg64 *reg);
  void emit_kernel_call(int id);
  // Outlined register tiles (see the top of this file).
  void find_outlined_tiles();
  void emit_tile_call(int id);
  void emit_outlined_tiles();
  void prefetch_store_target(const PlanNode &alloc);
  // Packing ahead (pack_ahead.cpp): a loop whose body packs a tile and multiplies it copies
  // the next tile while it multiplies this one, a few panel rows per counted kernel-loop
  // iteration (step_pack_cursor) through the cursor below.
  struct PackCursor {
    bool live = false;
    int64_t units = 0;       // panel rows per source run
    int64_t unit_bytes = 0;  // source bytes per unit
    int64_t run_skip = 0;    // source bytes from past a run's last unit to the next run
    int64_t dst_unit = 0, dst_run_skip = 0;  // the same in the other buffer
    int64_t ahead = 0;                       // source bytes prefetched ahead
    std::array<int64_t, 2> l2_ahead{};       // the same, into L2 (0: none)
    int64_t units_per_step = 1;
    bool operator==(const PackCursor &) const = default;
  };
  // A pack that may be done ahead, as pack_ahead() reads it off the alloc it opens.
  struct AheadPack {
    const PlanNode *pack = nullptr;
    // The source: runs along the panels, contiguous, src_run bytes apart.
    int64_t runs = 0, run_bytes = 0, src_run = 0;
    // The buffer: bytes from one panel to the next and from one run to the next.
    int64_t dst_panel = 0, dst_run = 0, strip = 0;
    // The copy: source runs prefetched into L1 ahead, offsets prefetched into L2
    // (stream_look_ahead), panel rows per step of the cursor.
    int64_t runs_ahead = 0;
    std::array<int64_t, 2> l2_ahead{};
    int64_t units_per_step = 1;
  };
  bool pack_ahead(const PlanNode &alloc, AheadPack *out) const;
  // Whether loop `id` (moving its operands by `shifts`) packs ahead, and its emission.
  bool pipelines_pack(int id, int64_t iterations, const Shifts &shifts) const;
  // `first_packed`: the loop's first iteration of its own (a Matmul's) packed ahead too, so
  // the body's first tile is already in the buffer ahead_slot_ names.
  void emit_pipelined_pack_loop(int id, int64_t iterations, const Shifts &shifts,
                                bool first_packed);
  // Whether a pipelined loop's first iteration of its own packs the same tiles the same way
  // (then it copies the body's first tile), and its emission.
  bool first_packs_ahead(int id) const;
  void emit_first_packing_ahead(int id);
  // Whether allocs `x` and `y` pack ahead the same tiles into the same buffer.
  bool packs_alike(const PlanNode &x, const PlanNode &y) const;
  // Where a pipelined loop's last iteration may copy the first tile of the next pipelined
  // loop to run: an enclosing loop's next iteration that starts with a loop packing the same
  // tiles into the same buffers, reached through loops and stages only.
  struct Carry {
    int64_t next = 0;   // bytes from the last tile's source to the next one's
    int height = 0;     // the enclosing loop's counter; 0: its next iteration follows surely
    bool copy = false;  // whether that next iteration starts with such a loop
  };
  // The enclosing loops of `loop` (which moves its tensors by `shifts`), innermost first,
  // until one's next iteration follows surely.
  void find_carries(const PlanNode &loop, const AheadPack &a, const Shifts &shifts,
                    std::vector<Carry> *out) const;
  // Whether node `id` starts with a loop like `loop` that packs ahead what `loop` does.
  bool starts_like(int id, const PlanNode &loop, const Shifts &shifts) const;
  // Into `reg`, the buffer holding `alloc`'s first tile: the one ahead_slot_ names, where
  // the loop before copied it, or (when the slot is 0) the alloc's own, packed now.
  void take_first_tile(const PlanNode &alloc, const Xbyak::Reg64 &reg);
  // Into `reg` the slot's buffer (this tile's), into rcx and the slot the other one.
  bool next_buffer(const PlanNode &alloc, const Xbyak::Reg64 &reg);
  // The cursor over the next tile of `a` (`next` bytes on), copying into the buffer whose
  // origin is in rcx; then, after the body, the rest of the copy.
  void start_copy_cursor(const AheadPack &a, int64_t next);
  void finish_copy();
  // Checks `alloc` packs ahead and finds its buffer's register (a failure otherwise); the
  // second buffer then holds its tiles.
  bool open_pack_ahead(const PlanNode &alloc, AheadPack *a, Xbyak::Reg64 *reg);
  // `alloc`'s buffer at its own offset in `reg`, live, and its prologue's pack into it.
  void pack_first_tile(const PlanNode &alloc, const Xbyak::Reg64 &reg);
  // `alloc`'s body and epilogue on the buffer in `reg`, the copy cursor stepping, then the
  // rest of the copy.
  void multiply_while_copying(const PlanNode &alloc, const Xbyak::Reg64 &reg);
  // A step of the live cursor, if any.
  void step_pack_cursor();
  // How many times the counted kernel loops below node `id` step the cursor in all (a
  // double: nested trips multiply past any integer, and a tile's rows are far fewer).
  double kernel_loop_steps(int id) const;
  // Whether nothing below `id` uses the cursor's registers.
  bool cursor_free_body(int id) const;
  // The origins a loop over `dim` in steps of `step` moves (n's own for a Loop).
  bool loop_shifts(const PlanNode &n, int dim, int64_t step, Shifts *out);
  // Moves every shifted origin by `times` iterations at run time, or statically.
  void advance(const Shifts &shifts, int64_t times);
  void displace(const Shifts &shifts, int64_t times);
  // Counter of a loop of this height: a register, or a stack slot above kCounterRegisters.
  void counter_set(int height, int64_t value);
  void counter_compare(int height, int32_t value);
  void counter_dec(int height);

  // A register tile of the plan that may be outlined: the tensors it reads but did not
  // allocate (its inputs, in order of first use) once it is found to recur.
  struct TileRecord {
    int node = -1;
    uint64_t hash = 0;  // of the tile's spec: tiles that recur share it
    std::array<int16_t, 3> inputs{-1, -1, -1};
    int kind = -1;  // index in outlined_
  };
  // Whether tiles `a` and `b` emit the same code when their inputs are in the same states:
  // the same nodes, tensors used in the same pattern, allocated ones alike, inputs of the
  // same role and stride. Fills both records' inputs.
  bool same_tile(TileRecord *a, TileRecord *b) const;
  // Whether code emitted for one input state serves the other (displacements aside).
  static bool same_input(const TensorState &a, const TensorState &b);
  // One kind of recurring tile: its subroutine, and the states of its inputs at the first
  // call (every later call site must show the same ones, displacements aside).
  struct OutlinedTile {
    const TileRecord *first = nullptr;  // the first call site, emitted as the subroutine
    std::array<TensorState, 3> inputs;  // first's input states, with no displacement
    PackCursor cursor;                  // first's, stepped by the subroutine's loops
    size_t start = 0;                   // where its subroutine begins, once emitted
  };

  const EmitRequest *req_ = nullptr;
  const Plan *plan_ = nullptr;
  std::vector<TensorState> tensors_;
  std::vector<int> height_;
  int max_height_ = 0;
  int tile_registers_ = 0;
  int tile_tensor_ = -1;
  PackCursor cursor_;
  // The second buffer of pipelined packs, after the plan's buffers and the C copy.
  int64_t ahead_offset_ = 0, ahead_bytes_ = 0;
  // The stack slot holding the buffer a pipelined loop's next tile is in, or 0 when the next
  // pipelined loop to run must pack its first tile itself (-1: the plan packs nothing).
  int ahead_slot_ = -1;
  // The nodes being emitted, root first, and how each one's child being emitted runs on:
  // what a pipelined loop's last iteration looks up to find the next tile (find_carries).
  enum class Link : uint8_t {
    Barrier,         // anything may run after the child
    Transparent,     // a stage that emits no code
    FirstIteration,  // a loop's first iteration of its own, with more to come
    LastStatic,      // a loop's last iteration, known statically
    Counted,         // a counted loop's iteration: the last when its counter is 1
  };
  struct EmitLink {
    int id = -1;
    Link link = Link::Barrier;
    Shifts shifts;
  };
  std::vector<EmitLink> links_;
  Xbyak::Label *mask_table_ = nullptr;  // emit()'s own: labels last one function
  std::vector<int32_t> outline_;        // per node: 1 + its index in tiles_ if outlined, or 0
  // Kept, with their storage, from plan to plan:
  std::vector<OutlinedTile> outlined_;  // emitted after the body
  std::vector<TileRecord> tiles_;
  struct TileCall {
    size_t rel32;  // EmitterBase::forward()
    int kind;      // into outlined_
  };
  std::vector<TileCall> tile_calls_made_;  // landed when the subroutines are emitted
  std::vector<int> pending_nodes_;
  // Register tiles are emitted in place, never called: inside a subroutine's own body, and at
  // a call site whose inputs the subroutine cannot serve.
  bool tiles_in_place_ = false;
  int outlined_tiles_ = 0, tile_calls_ = 0;
  int carried_packs_ = 0;
  struct CCopy {
    int64_t bytes = 0;   // the biggest copy; 0: C is never copied
    int64_t offset = 0;  // in the workspace, after the plan's buffers
    int slot = 0;        // spill slot keeping C's register meanwhile
  } c_copy_;
};

}  // namespace tessel
