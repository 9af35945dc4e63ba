#include "plan.h"

#include <cstdio>
#include <optional>

#include "check.h"
#include "memo.h"
#include "search_helper.h"
#include "solver.h"
#include "thread_heap.h"

namespace tessel {
namespace {

// Subtrees already built, by their root's spec and action: a spec that recurs in a plan (the
// boundary tiles of an irregular shape) gets the same subtree again, which copying its nodes
// makes for a tenth of the cost of expanding them. Only subtrees that allocate no buffer are
// kept (a buffer's workspace offset depends on where the copy goes). Open addressing on
// memo_hash over 4-byte slots that index the entries, found by comparing the root node in
// full: a table of whole entries took three fresh pages of a warm first call at 1000^3.
class BuiltSubtrees {
 public:
  struct Entry {
    int32_t root = -1;  // node id; the subtree is nodes [root, root + nodes) (pre-order)
    int32_t nodes = 0;
    int32_t first_tensor = 0, tensors = 0;  // tensors it allocated: [first, first + tensors)
    std::array<int16_t, 3> operands{};      // its root's operand tensors
  };
  // Room for `subtrees` entries without growing (storage already there stays).
  void reserve(size_t subtrees) {
    size_t slots = 64;
    while (slots < 2 * subtrees) slots *= 2;
    slots_.assign(slots, kEmpty);
    entries_.clear();
    entries_.reserve(subtrees);
  }
  void touch_room() { keep_room(entries_, entries_.capacity()); }  // for a kept table
  const Entry *find(const Plan &plan, const Spec &s, const Action &a) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = memo_hash(s) & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == kEmpty) return nullptr;
      const Entry &e = entries_[slots_[i]];
      const PlanNode &n = plan.nodes[static_cast<size_t>(e.root)];
      if (n.action == a && same_spec(n.spec, s)) return &e;
    }
  }
  void insert(const Plan &plan, const Entry &entry) {
    if (2 * (entries_.size() + 1) > slots_.size()) grow(plan);
    entries_.push_back(entry);
    place(plan, static_cast<uint32_t>(entries_.size() - 1));
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  void place(const Plan &plan, uint32_t index) {
    const Spec &s = plan.nodes[static_cast<size_t>(entries_[index].root)].spec;
    size_t i = memo_hash(s) & (slots_.size() - 1);
    while (slots_[i] != kEmpty) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = index;
  }
  void grow(const Plan &plan) {
    slots_.assign(std::max<size_t>(64, 2 * slots_.size()), kEmpty);
    for (uint32_t e = 0; e < entries_.size(); ++e) place(plan, e);
  }
  std::vector<uint32_t> slots_;
  std::vector<Entry> entries_;
};

// Turns decisions into plan nodes, in pre-order (children in slot order): the order plan
// records list them in. `Decide` gives the action for a canonical spec, or false to stop:
//   bool operator()(const Spec &s, Action *action, Cost *cost, bool *costed)
// with `costed` false when the builder is to add the cost up itself (a replayed record); and
//   bool follows(const PlanNode *nodes, size_t count)
// whether the next `count` decisions are those of `nodes` (it then takes them).
template <class Decide>
class PlanBuilder {
 public:
  // `built`: the table of built subtrees to work in, emptied and sized for `nodes`, how many
  // the plan will have (if known).
  PlanBuilder(const Target &target, Plan &plan, Decide &decide, BuiltSubtrees &built,
              size_t nodes = 0)
      : target_(target), plan_(plan), decide_(decide), built_(built) {
    built_.reserve(nodes);
  }

  // The new node's id, or -1 when `decide` stopped. `s` is canonical (the children of a
  // canonical spec are, see action.h).
  int build(const Spec &s, std::array<int16_t, 3> tensors, int64_t workspace_top) {
    Action action;
    Cost cost;
    bool costed = false;
    if (!decide_(s, &action, &cost, &costed)) return -1;
    if (const BuiltSubtrees::Entry *e = built_.find(plan_, s, action)) {
      const int copy = copy_of(*e, tensors);
      if (copy >= 0) return copy;
    }
    const int32_t first_tensor = static_cast<int32_t>(plan_.tensors.size());
    const Expansion x = expand(s, action, target_);
    const int id = static_cast<int>(plan_.nodes.size());
    plan_.nodes.emplace_back();
    {
      PlanNode &n = plan_.nodes[id];
      n.kind = x.node;
      n.spec = s;
      n.action = action;
      n.tensors = tensors;
      n.dim = x.dim;
      n.step = x.step;
      n.trips = x.trips;
      n.step2 = x.step2;
      n.trips2 = x.trips2;
      n.operand = x.operand;
      if (x.node == NodeKind::Kernel) n.kernel = KernelId(action.a);
    }
    std::array<std::array<int16_t, 3>, kMaxChildren> child_tensors;
    child_tensors.fill(tensors);
    int64_t child_top = workspace_top;
    if (x.node == NodeKind::Alloc) {
      PlanTensor t;
      t.spec = x.new_tensor;
      t.rows = s.rows(x.operand);
      t.cols = s.cols(x.operand);
      if (t.spec.layout.is_register()) {
        t.role = PlanTensor::Role::Registers;
      } else {
        t.role = PlanTensor::Role::Buffer;
        t.ext = panel_extent(t.spec.layout, t.rows, t.cols);
        t.workspace_offset = (workspace_top + 63) / 64 * 64;
        t.bytes = x.alloc_bytes;
        child_top = t.workspace_offset + t.bytes;
        plan_.workspace_bytes = std::max(plan_.workspace_bytes, child_top);
      }
      const int16_t tid = static_cast<int16_t>(plan_.tensors.size());
      plan_.tensors.push_back(t);
      plan_.nodes[id].new_tensor = tid;
      const int16_t old = tensors[x.operand];
      // Prologue moves old -> new (or zeroes new), body uses new, epilogue moves new -> old.
      if (s.is_matmul() && x.operand == 2) {
        child_tensors[0] = {tid, -1, -1};
        child_tensors[2] = {tid, old, -1};
      } else {
        child_tensors[0] = {old, tid, -1};
      }
      child_tensors[1][x.operand] = tid;
    }
    if (x.node == NodeKind::Interleave) {
      // The body and the first iteration read A and B through views with k strided by the
      // chunks' length; the rows past the chunks read them as they are.
      for (int o = 0; o < 2; ++o) {
        const PlanTensor &of = plan_.tensors[static_cast<size_t>(tensors[o])];
        TESSEL_CHECK(of.role == PlanTensor::Role::A || of.role == PlanTensor::Role::B,
                     "an interleave reads a buffer");
        PlanTensor view = of;
        view.spec = x.children[0].spec.operands[o];
        view.rows = x.children[0].spec.rows(o);
        view.cols = x.children[0].spec.cols(o);
        view.k_stride = of.k_stride * x.trips;
        const int16_t tid = static_cast<int16_t>(plan_.tensors.size());
        plan_.tensors.push_back(view);
        child_tensors[0][o] = child_tensors[2][o] = tid;
      }
    }
    if (x.node == NodeKind::Block && s.op == Op::Matmul && action.kind == ActionKind::ZeroAccum)
      child_tensors[0] = {tensors[2], -1, -1};
    // The cost as the solver adds it up (Solver::solve_within, LayeredMemo::replay).
    Cost total = local_cost(x);
    for (int slot = 0; slot < kMaxChildren; ++slot) {
      const Child &c = x.children[slot];
      if (!c.present) continue;
      const int child = build(c.spec, child_tensors[slot], child_top);
      if (child < 0) return -1;
      plan_.nodes[id].children[slot] = child;
      if (!costed) add_child_cost(total, plan_.nodes[child].cost, c.multiplicity, x);
    }
    plan_.nodes[id].cost = costed ? cost : total;
    remember(id, first_tensor, tensors);
    return id;
  }

 private:
  void remember(int id, int32_t first_tensor, const std::array<int16_t, 3> &operands) {
    const int32_t tensors = static_cast<int32_t>(plan_.tensors.size()) - first_tensor;
    for (int32_t t = 0; t < tensors; ++t)
      if (plan_.tensors[static_cast<size_t>(first_tensor + t)].role == PlanTensor::Role::Buffer)
        return;
    built_.insert(plan_, {id, static_cast<int32_t>(plan_.nodes.size()) - id, first_tensor, tensors,
                          operands});
  }

  // Appends a copy of subtree `e` over `operands`, if the decisions that follow are its own
  // (then taken); -1 otherwise, with nothing taken or appended.
  int copy_of(const BuiltSubtrees::Entry &e, const std::array<int16_t, 3> &operands) {
    // Operands that were one tensor there must be one here, and only those.
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < i; ++j)
        if ((e.operands[i] == e.operands[j]) != (operands[i] == operands[j])) return -1;
    if (!decide_.follows(&plan_.nodes[static_cast<size_t>(e.root) + 1],
                         static_cast<size_t>(e.nodes) - 1))
      return -1;
    const int32_t root = static_cast<int32_t>(plan_.nodes.size());
    const int32_t tensor_shift = static_cast<int32_t>(plan_.tensors.size()) - e.first_tensor;
    for (int32_t t = 0; t < e.tensors; ++t) {
      const PlanTensor copy = plan_.tensors[static_cast<size_t>(e.first_tensor + t)];
      plan_.tensors.push_back(copy);
    }
    auto tensor = [&](int16_t old) -> int16_t {
      if (old >= e.first_tensor && old < e.first_tensor + e.tensors)
        return static_cast<int16_t>(old + tensor_shift);
      for (size_t o = 0; o < 3; ++o)
        if (old == e.operands[o]) return operands[o];
      TESSEL_CHECK(old < 0, "a plan subtree uses a tensor its root was not given");
      return old;
    };
    for (int32_t i = 0; i < e.nodes; ++i) {
      PlanNode n = plan_.nodes[static_cast<size_t>(e.root + i)];
      for (int &c : n.children)
        if (c >= 0) c += root - e.root;
      for (int16_t &t : n.tensors) t = tensor(t);
      if (n.new_tensor >= 0) n.new_tensor += tensor_shift;
      plan_.nodes.push_back(n);
    }
    return root;
  }

  const Target &target_;
  Plan &plan_;
  Decide &decide_;
  BuiltSubtrees &built_;
};

// Emptied, not replaced: a Plan reused for plan after plan keeps its storage.
void clear_plan(Plan *out) {
  out->nodes.clear();
  out->tensors.clear();
  out->root = -1;
  out->workspace_bytes = 0;
  out->cost = Cost{};
}

// The plan's user tensors A, B, C; returns the canonical root.
Spec start_plan(const Spec &s, Plan *out) {
  clear_plan(out);
  const Spec c = canonical(s);
  for (int i = 0; i < 3; ++i) {
    PlanTensor t;
    t.role = PlanTensor::Role(i);
    t.spec = c.operands[i];
    t.rows = c.rows(i);
    t.cols = c.cols(i);
    out->tensors.push_back(t);
  }
  return c;
}

int64_t grid_iterations(const PlanNode &n) {
  if (n.dim == 2) return n.trips + (n.spec.dims[2] % n.step != 0);
  const bool last_rows = n.spec.dims[0] % n.step != 0, last_cols = n.spec.dims[1] % n.step2 != 0;
  return (int64_t{n.trips} + last_rows) * (int64_t{n.trips2} + last_cols);
}

void format_node(const Plan &p, const std::vector<std::string> &notes, int id, int indent,
                 std::string &out) {
  const PlanNode &n = p.nodes[id];
  static const char *kDims = "mnk";
  char buf[256];
  std::string line(indent * 2, ' ');
  switch (n.kind) {
    case NodeKind::Loop: {
      const int64_t rest = n.spec.dims[n.dim] - n.trips * n.step;
      std::snprintf(buf, sizeof buf, "for %c in 0..%d step %d", kDims[n.dim], n.spec.dims[n.dim],
                    n.step);
      line += buf;
      if (rest) line += " (+" + std::to_string(rest) + " remainder)";
      break;
    }
    case NodeKind::Interleave: {
      const int64_t rest = n.spec.dims[2] - int64_t{n.trips} * n.step;
      std::snprintf(buf, sizeof buf, "interleave k: %d chunks of %d side by side", n.step, n.trips);
      line += buf;
      if (rest) line += " (+" + std::to_string(rest) + " remainder)";
      break;
    }
    case NodeKind::Grid:
      if (n.dim == 2)
        std::snprintf(buf, sizeof buf, "parallel k in parts of %d, summed (%lld iterations)",
                      n.step, static_cast<long long>(grid_iterations(n)));
      else
        std::snprintf(buf, sizeof buf, "parallel grid of %dx%d tiles (%lld iterations)", n.step,
                      n.step2, static_cast<long long>(grid_iterations(n)));
      line += buf;
      break;
    case NodeKind::Block:
      line += "block";
      break;
    case NodeKind::Alloc: {
      const PlanTensor &t = p.tensors[n.new_tensor];
      std::snprintf(buf, sizeof buf, "alloc %s %lldx%lld %s",
                    n.operand == 0   ? "A"
                    : n.operand == 1 ? "B"
                                     : "C",
                    static_cast<long long>(t.rows), static_cast<long long>(t.cols),
                    to_string(t.spec).c_str());
      line += buf;
      if (t.bytes)
        line += " (" + std::to_string(t.bytes) + " B at workspace+" +
                std::to_string(t.workspace_offset) + ")";
      break;
    }
    case NodeKind::Stage:
      line += std::string("stage ") + "ABC"[n.operand] + " -> " +
              level_name(p.nodes[n.children[0]].spec.operands[n.operand].level);
      break;
    case NodeKind::Kernel:
      line += std::string(kernel_name(n.kernel));
      break;
  }
  line += "  " + to_string(n.spec);
  std::snprintf(buf, sizeof buf, "  [%.4g cycles]", n.cost.cycles);
  line += buf;
  if (static_cast<size_t>(id) < notes.size() && !notes[static_cast<size_t>(id)].empty())
    line += "  " + notes[static_cast<size_t>(id)];
  out += line + "\n";
  static const char *kLoopSlots[] = {"body", "remainder", "first"};
  static const char *kAllocSlots[] = {"prologue", "body", "epilogue"};
  static const char *kGridSlots[] = {"tile", "last rows", "last columns", "corner"};
  static const char *kSplitSlots[] = {"first part", "other parts", "last part"};
  for (int slot = 0; slot < kMaxChildren; ++slot) {
    const int c = n.children[slot];
    if (c < 0) continue;
    const bool loop = n.kind == NodeKind::Loop || n.kind == NodeKind::Interleave;
    const bool label = (loop && slot > 0) || n.kind == NodeKind::Alloc || n.kind == NodeKind::Grid;
    if (label) {
      const char *name = loop                       ? kLoopSlots[slot]
                         : n.kind == NodeKind::Grid ? (n.dim == 2 ? kSplitSlots : kGridSlots)[slot]
                                                    : kAllocSlots[slot];
      out += std::string((indent + 1) * 2, ' ') + name + ":\n";
      format_node(p, notes, c, indent + 2, out);
    } else {
      format_node(p, notes, c, indent + 1, out);
    }
  }
}

}  // namespace

int64_t Plan::grid_iterations() const {
  return parallel_root() ? tessel::grid_iterations(nodes[static_cast<size_t>(root)]) : 0;
}

int64_t Plan::reduction_parts() const {
  return parallel_root() && nodes[static_cast<size_t>(root)].dim == 2 ? grid_iterations() : 0;
}

bool build_plan(Solver &solver, const Spec &s, Plan *out, bool helped) {
  const Spec root = start_plan(s, out);
  MemoTable *table = solver.memo().front_table();
  std::optional<SearchHelper> helper;
  if (helped && table && worth_a_helper(root)) helper.emplace(solver.target(), *table, root);
  const MemoEntry e = solver.solve(root);
  if (helper)
    for (const auto &[spec, entry] : helper->finish()) solver.memo().note_solved(spec, entry);
  if (!e.solvable) return false;
  // The solved decisions: a spec's is the same wherever it recurs (exact entries stay).
  struct Decide {
    Solver &solver;
    bool operator()(const Spec &spec, Action *action, Cost *cost, bool *costed) {
      const MemoEntry d = solver.solve(spec);
      TESSEL_CHECK(d.solvable, "plan replay reached an unsolvable spec");
      *action = d.action;
      *cost = d.cost;
      *costed = true;
      return true;
    }
    bool follows(const PlanNode *, size_t) { return true; }
  } decide{solver};
  BuiltSubtrees built;
  PlanBuilder builder(solver.target(), *out, decide, built);
  out->root = builder.build(root, {0, 1, 2}, 0);
  out->cost = e.cost;
  return true;
}

bool replay_plan(const PlanRecord &record, const Spec &s, const Target &t, Plan *out) {
  const Spec root = start_plan(s, out);
  if (record.actions.empty() || spec_key(root) != record.root) {
    clear_plan(out);
    return false;
  }
  // One allocation each: growing by doubling touched twice the pages, and fresh pages are a
  // large share of a warm first call's time on a VM (~1.2 us each on the Zen 4 measured;
  // 1000^3's plan has 398 nodes, 51 KB).
  out->nodes.reserve(record.actions.size());
  out->tensors.reserve(record.actions.size() + 3);
  // The thread's tables, kept (kKeptPlanNodes).
  struct Tables {
    std::vector<uint32_t> checked;
    BuiltSubtrees built;
    std::vector<Action> scratch;
    Tables() {
      keep_room(checked, 2 * kKeptPlanNodes);
      built.reserve(kKeptPlanNodes);
      built.touch_room();
    }
  };
  static thread_local ThreadHeap<Tables> kept_tables;
  Tables &tables = kept_tables.get();
  // Specs repeat inside a plan and checking an action enumerates its kind: nodes already
  // checked are found by memo_hash of their spec, in an open-addressing table of node ids
  // (+1; 0 = empty), and compared in full.
  size_t slots = 16;
  while (slots < 2 * record.actions.size()) slots *= 2;
  std::vector<uint32_t> &checked = tables.checked;
  checked.assign(slots, 0);
  auto already_checked = [&](const Spec &spec, const Action &a, bool insert) {
    const uint64_t h = memo_hash(spec);
    for (size_t i = (h >> 1) & (slots - 1);; i = (i + 1) & (slots - 1)) {
      if (!checked[i]) {
        if (insert) checked[i] = static_cast<uint32_t>(out->nodes.size() + 1);
        return false;
      }
      const PlanNode &n = out->nodes[checked[i] - 1];
      if (n.action == a && same_spec(n.spec, spec)) return true;
    }
  };
  // Each node takes the record's next action, checked as a stored decision always is: one
  // that the enumeration does not offer for the spec today stops the replay. A copied
  // subtree takes as many actions, which must be its nodes' own (checked when first built).
  struct Decide {
    const std::vector<Action> &actions;
    decltype(already_checked) &checked;
    const Target &t;
    size_t next = 0;  // the record's next action
    std::vector<Action> &scratch;
    bool operator()(const Spec &spec, Action *action, Cost *, bool *costed) {
      if (next == actions.size()) return false;
      const Action &a = actions[next];
      if (!checked(spec, a, true) && !action_applies(spec, a, t, scratch)) return false;
      *action = a;
      ++next;
      *costed = false;
      return true;
    }
    bool follows(const PlanNode *nodes, size_t count) {
      if (count > actions.size() - next) return false;
      for (size_t i = 0; i < count; ++i)
        if (!(nodes[i].action == actions[next + i])) return false;
      next += count;
      return true;
    }
  } decide{record.actions, already_checked, t, 0, tables.scratch};
  PlanBuilder builder(t, *out, decide, tables.built, record.actions.size());
  out->root = builder.build(root, {0, 1, 2}, 0);
  // A record with actions left over was not made for this plan.
  if (out->root < 0 || decide.next != record.actions.size()) {
    clear_plan(out);
    return false;
  }
  out->cost = out->nodes[out->root].cost;
  return true;
}

PlanRecord plan_record(const Plan &p) {
  PlanRecord record;
  if (p.root < 0) return record;
  record.root = spec_key(p.nodes[p.root].spec);
  record.actions.reserve(p.nodes.size());
  for (const PlanNode &n : p.nodes) record.actions.push_back(n.action);
  return record;
}

std::string format_plan(const Plan &p, const std::vector<std::string> &notes) {
  std::string out;
  if (p.root >= 0) format_node(p, notes, p.root, 0, out);
  return out;
}

}  // namespace tessel
