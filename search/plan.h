// Plan: the implementation tree the search returns, and what codegen and the interpreter
// lower. It is rebuilt from memoized decisions by replaying actions, so stored data are
// decisions, never code.
//
// Tensors are numbered: 0 = A, 1 = B, 2 = C (the user's matrices, leading dimensions given
// at emission), then buffers and register tiles introduced by Alloc nodes and the strided
// views of A and B that Interleave nodes introduce. Each node names, per operand of its
// spec, which tensor it reads; the origin of that operand's tile inside the tensor follows
// from the enclosing loops (iteration i of a loop over dim d shifts every operand spanning d
// by i*step along that axis).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "action.h"
#include "cost.h"
#include "memo_block.h"
#include "spec.h"

namespace tessel {

struct PlanTensor {
  enum class Role : uint8_t { A, B, C, Buffer, Registers };
  Role role = Role::A;
  TensorSpec spec;
  int64_t rows = 0, cols = 0;
  // Buffers: the extent element_offset() needs (see layout.h), and the byte offset in the
  // kernel's workspace (64-byte aligned).
  int64_t ext = 0;
  int64_t workspace_offset = 0;
  int64_t bytes = 0;
  // A and B: element p along k of this tensor is element p * k_stride of the user's matrix
  // (an Interleave node's body reads views of them so; 1 for the matrices themselves).
  int64_t k_stride = 1;
};

// Fields ordered and sized to pack into 128 bytes: a warm first call builds every node of
// its plan in memory it may touch for the first time (1000^3: 398 nodes, 51 KB; 64 KB at
// the 160 bytes they took before; ~1.4 us per fresh page).
struct PlanNode {
  Spec spec;
  Action action;
  Cost cost;
  // Loop: body, remainder, first. Grid: see below. Alloc: prologue, body, epilogue. Block: in
  // order. Stage: body.
  std::array<int32_t, kMaxChildren> children{-1, -1, -1, -1};
  // Loop: iterations 0..trips-1 run `children[0]` (iteration 0 runs children[2] instead when
  // present), then children[1] covers the remainder extent % step, if any.
  // Grid (parallel): tiles of step rows by step2 columns; the tile in grid row i, column j
  // (trips, trips2 full ones, then a partial one where the extent leaves a remainder) runs
  // children[0], or [1] in the last partial row, [2] in the last partial column, [3] in the
  // corner. Iteration i * columns + j of the grid is that tile. A grid over k (dim 2) has
  // parts of step: part 0 runs children[0] into C, part i > 0 runs children[1] (or [2], the
  // last one when step leaves a remainder) into the i-th copy of C, which the caller then
  // adds into C (Plan::reduction_parts). Extents are 32-bit (Spec::dims), so are these.
  int32_t step = 0;
  int32_t trips = 0;
  int32_t step2 = 0;
  int32_t trips2 = 0;
  std::array<int16_t, 3> tensors{-1, -1, -1};  // per operand of spec
  int16_t new_tensor = -1;                     // Alloc's new tensor
  int8_t dim = -1;
  int8_t operand = -1;  // Alloc / Stage: the operand that moves
  NodeKind kind = NodeKind::Kernel;
  KernelId kernel = KernelId::FmaBroadcast;
};
static_assert(sizeof(PlanNode) <= 128, "PlanNode grew past two cache lines");

struct Plan {
  std::vector<PlanNode> nodes;
  std::vector<PlanTensor> tensors;
  int root = -1;
  int64_t workspace_bytes = 0;
  Cost cost;
  bool parallel_root() const { return nodes[root].kind == NodeKind::Grid; }
  // A parallel root's iterations: its grid's rows times columns, or its parts of k.
  int64_t grid_iterations() const;
  // How many parts a parallel root splits k into (0 when it splits C): part i > 0 writes its
  // own copy of C, all to be added into C once every part has run.
  int64_t reduction_parts() const;
};

// Plans of up to this many nodes (1000^3's has 398) are replayed and emitted in storage that a
// thread keeps from kernel to kernel and writes once, at its first: growing it in a later
// first call would fault fresh heap pages in, ~1.2 us each on the VMs measured.
constexpr size_t kKeptPlanNodes = 512;

// Gives `v` room for `n` elements and writes it (its pages are in), leaving it empty.
template <class T>
void keep_room(std::vector<T> &v, size_t n) {
  v.resize(n);
  v.clear();
}

class Solver;

// Solves `s` and replays the decisions into a plan. Returns false when `s` is unsolvable.
// `helped`: a SearchHelper thread joins the search when the memo has a front table and the
// search is worth it (worth_a_helper); the plan is the same either way.
bool build_plan(Solver &solver, const Spec &s, Plan *out, bool helped = false);

// The actions a plan was built from, keyed by its root spec (for the memo database).
PlanRecord plan_record(const Plan &p);

// Rebuilds the plan of `s` from its record in one pass, without a solver: each node's action
// must be one the enumeration offers for its spec today (action_applies), and the record must
// hold exactly one action per node. Costs are added up as the solver does, so the plan is the
// one build_plan gave when the record was written. Returns false (with `out` empty) for a
// record that does not replay: stale, or made for another spec; the caller then searches.
bool replay_plan(const PlanRecord &record, const Spec &s, const Target &t, Plan *out);

// An indented tree: loops with steps, moves with levels and layouts, kernels, costs. A
// node's line ends with notes[its index], where there is one.
std::string format_plan(const Plan &p, const std::vector<std::string> &notes = {});

}  // namespace tessel
