// Actions: the rewrites that turn a spec into a plan node with smaller sub-specs.
//
// They are enumerated in a fixed order, and an action is identified by its value, so a stored
// decision means the same thing on reload. Changing what an action does, the order, or which
// actions are offered (a stored decision was the best of the old set) is a new
// kActionOrderVersion (the database is keyed by it).
//
// One concept per file: tiling.cpp (output tiles), split_k.cpp (reduction), stage.cpp (cache
// staging), pack.cpp (packed buffers), register_tile.cpp (C in registers), zero_accum.cpp
// (Matmul -> Zero + MatmulAccum), kernel_select.cpp (leaves), parallel_tile.cpp,
// interleave_k.cpp (a GEMV's reduction in long runs).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels.h"
#include "spec.h"
#include "target.h"

namespace tessel {

constexpr int kActionOrderVersion = 18;

enum class ActionKind : uint8_t {
  Serial,          // run a threads > 1 spec on one thread
  ParallelTile,    // size x size2: parallel loop over a grid of m x n tiles, serial bodies
  ParallelSplitK,  // size: parallel loop over parts of the reduction, one copy of C each
  Tile,            // a = dim (m or n), size: serial loop over output tiles
  SplitK,          // size: loop over the reduction
  Stage,           // a = operand, b = level: bring a tile into a cache level (no copy)
  Pack,            // a = operand, b = level, size = strip: copy into a packed buffer;
                   // size2 = 1: panels along k (A's columns, B's rows) for dot tiles
  RegisterTile,    // a = LayoutKind (VecRows or VecDot): accumulate C in vector registers
  ZeroAccum,       // Matmul -> Zero(C); MatmulAccum
  Kernel,          // a = KernelId
  InterleaveK,     // size: loop over k reading that many chunks of it side by side
};
constexpr ActionKind kLastActionKind = ActionKind::InterleaveK;

struct Action {
  ActionKind kind = ActionKind::Kernel;
  uint8_t a = 0;
  uint8_t b = 0;
  int32_t size = 0;
  int32_t size2 = 0;  // ParallelTile: the tile's columns (size: its rows)
  friend bool operator==(const Action &, const Action &) = default;
};

std::string to_string(const Action &a);

// The plan node an action produces. Only these shapes exist; the emitter and the interpreter
// lower each of them.
enum class NodeKind : uint8_t {
  Loop,    // children: body, remainder body, first-iteration body
  Grid,    // parallel, over m and n (dim 0); children: tile, last rows, last columns, corner
           // or over k (dim 2); children: first part, other parts, last part
  Block,   // children: run in order
  Alloc,   // children: prologue, body, epilogue; `operand` gets a new buffer or registers
  Stage,   // children: body; `operand` is accessed from a closer cache level
  Kernel,  // no children
  // A loop over k whose iteration kk multiplies element kk of each of `step` equal chunks of
  // k (trips: the chunks' length). Children: body, the rows past the chunks, first iteration.
  // The body reads A and B through views whose k is strided by the chunk length (PlanTensor).
  Interleave,
};

// The most children a node has (a grid's four tile shapes).
constexpr int kMaxChildren = 4;

// One child of an expansion: its spec, how many times it runs as far as cost is concerned,
// and (for Alloc) which tensors it binds.
struct Child {
  Spec spec;
  double multiplicity = 1;
  bool present = false;
};

// expand_into() resets every field but the children's specs: a new field must be reset there.
struct Expansion {
  NodeKind node = NodeKind::Kernel;
  // Cost of the node itself (loop overhead, staging traffic, kernel); below 0 where the node
  // overlaps its children's work (a pack from main memory behind its body's FMAs).
  double local_cycles = 0;
  int64_t alloc_bytes = 0;  // workspace this node allocates
  // Loop: dim, step, trips (full tiles). Interleave: dim 2, step chunks of trips elements.
  // Grid over m, n: m by step (trips), n by step2 (trips2); over k: k by step (trips).
  // Alloc/Stage: operand (Interleave: B).
  int dim = -1;
  int32_t step = 0;
  int64_t trips = 0;
  int32_t step2 = 0;
  int64_t trips2 = 0;
  int operand = -1;
  TensorSpec new_tensor;  // Alloc: the buffer or register tile
  // Fixed child slots (see NodeKind); absent slots have present == false.
  std::array<Child, kMaxChildren> children;
};

// Each operand's Target::footprint (0 past operand_count, and for an operand read_once):
// `bytes` at every cache level, and `l1` when it is in L1, which is more for rows that crowd
// into few L1 sets (see operand_footprints). Only an operand's layout and shape set them, so
// the staging variants of a spec share them, and a packing variant changes one operand's.
struct OperandFootprints {
  std::array<int64_t, 3> bytes{}, l1{};
};
OperandFootprints operand_footprints(const Spec &s, const Target &t);
// Whether operand `i` of `s` is B in its rows under a single row of A: nothing reuses it, so
// its lines pass through the caches once and need not stay in any.
bool read_once(const Spec &s, int i);

// Appends every action that applies to `s` (in the fixed order) to `out`.
void enumerate_actions(const Spec &s, const Target &t, std::vector<Action> &out);
// Whether enumerate_actions lists `a` for `s` (cheaper: only a's kind is enumerated, into
// `scratch`). Decisions read back from disk are checked with it before expand().
bool action_applies(const Spec &s, const Action &a, const Target &t, std::vector<Action> &scratch);
// Applies an action that enumerate_actions listed for `s`. The children of a canonical spec
// are canonical: the solver memoizes them as they are (tests/search/actions_test.cpp).
Expansion expand(const Spec &s, const Action &a, const Target &t);
// expand() into `e`, which holds any earlier expansion: the spec of a child that is not
// present is left as it was (and must not be read). The solver expands every action of every
// spec into reused storage: building each expansion afresh, four default specs included, was
// a twentieth of a search.
void expand_into(const Spec &s, const Action &a, const Target &t, Expansion &e);

// Per-action enumeration and expansion, one file each. An expand_* function writes into an
// Expansion whose fields other than the children's specs have their defaults (expand_into).

void enumerate_serial(const Spec &s, const Target &t, std::vector<Action> &out);
void expand_serial(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_parallel_tiles(const Spec &s, const Target &t, std::vector<Action> &out);
void expand_parallel_tile(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_parallel_k_splits(const Spec &s, const Target &t, std::vector<Action> &out);
void expand_parallel_k_split(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_tiles(const Spec &s, const Target &t, std::vector<Action> &out);
// Whether enumerate_tiles lists `a` (checked without listing the rest).
bool tile_offered(const Spec &s, const Action &a, const Target &t);
void expand_tile(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_k_splits(const Spec &s, const Target &t, std::vector<Action> &out);
void expand_k_split(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_interleaves(const Spec &s, const Target &t, std::vector<Action> &out);
void expand_interleave(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_stages(const Spec &s, const Target &t, std::vector<Action> &out);
// The same, with the spec's operand_footprints (enumerate_actions shares them with packs).
void enumerate_stages(const Spec &s, const OperandFootprints &sizes, std::vector<Action> &out);
// Whether enumerate_stages lists `a` (checked without listing the rest).
bool stage_offered(const Spec &s, const Action &a, const Target &t);
void expand_stage(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_packs(const Spec &s, const Target &t, std::vector<Action> &out);
void enumerate_packs(const Spec &s, const Target &t, const OperandFootprints &sizes,
                     std::vector<Action> &out);
void expand_pack(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_register_tiles(const Spec &s, const Target &t, std::vector<Action> &out);
void expand_register_tile(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_zero_accum(const Spec &s, const Target &t, std::vector<Action> &out);
void expand_zero_accum(const Spec &s, const Action &a, const Target &t, Expansion &e);
void enumerate_kernels(const Spec &s, const Target &t, std::vector<Action> &out);
void expand_kernel(const Spec &s, const Action &a, const Target &t, Expansion &e);

// Sets `s.dims[dim]` to a smaller `extent`: the operands whose stored rows span `dim` are no
// longer contiguous (TensorSpec::contiguous).
void cut_dim(Spec &s, int dim, int32_t extent);
// Shared by tiling actions: the loop over `dim` in steps of `step`, children body and
// remainder, with `threads` for the bodies.
void loop_expansion(const Spec &s, int dim, int32_t step, const Target &t, Expansion &e);
// Whether every operand spanning `dim` can be stepped by `step` keeping panels aligned.
bool step_keeps_panels(const Spec &s, int dim, int32_t step);
// The steps step_keeps_panels allows are exactly the multiples of this (1: any step), so a
// loop over candidate steps asks once per dimension.
int32_t panel_step_multiple(const Spec &s, int dim);
// Whether the operands' cache footprints fit the spec's limits at every cache level.
bool fits_caches(const Spec &s, const Target &t);
// fits_caches for a spec whose operands have these footprints: a spec's variants are
// checked with one computation of them.
bool fits_caches(const Spec &s, const OperandFootprints &sizes);

}  // namespace tessel
