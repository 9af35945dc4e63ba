#include "plan.h"

#include <cstdio>

#include "check.h"
#include "solver.h"

namespace tessel {
namespace {

class PlanBuilder {
 public:
  PlanBuilder(Solver &solver, Plan &plan) : solver_(solver), plan_(plan) {}

  int build(const Spec &raw, std::array<int16_t, 3> tensors, int64_t workspace_top) {
    const Spec s = canonical(raw);
    const MemoEntry e = solver_.solve(s);
    TESSEL_CHECK(e.solvable, "plan replay reached an unsolvable spec");
    const Expansion x = expand(s, e.action, solver_.target());
    const int id = static_cast<int>(plan_.nodes.size());
    plan_.nodes.emplace_back();
    {
      PlanNode &n = plan_.nodes[id];
      n.kind = x.node;
      n.spec = s;
      n.action = e.action;
      n.cost = e.cost;
      n.tensors = tensors;
      n.dim = x.dim;
      n.step = x.step;
      n.trips = x.trips;
      n.step2 = x.step2;
      n.trips2 = x.trips2;
      n.operand = x.operand;
      if (x.node == NodeKind::Kernel) n.kernel = KernelId(e.action.a);
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
        t.ext = t.spec.layout.kind == LayoutKind::PanelRows ? t.cols : t.rows;
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
    if (x.node == NodeKind::Block && s.op == Op::Matmul && e.action.kind == ActionKind::ZeroAccum)
      child_tensors[0] = {tensors[2], -1, -1};
    for (int slot = 0; slot < kMaxChildren; ++slot) {
      if (!x.children[slot].present) continue;
      const int child = build(x.children[slot].spec, child_tensors[slot], child_top);
      plan_.nodes[id].children[slot] = child;
    }
    return id;
  }

 private:
  Solver &solver_;
  Plan &plan_;
};

int64_t grid_iterations(const PlanNode &n) {
  const bool last_rows = n.spec.dims[0] % n.step != 0, last_cols = n.spec.dims[1] % n.step2 != 0;
  return (n.trips + last_rows) * (n.trips2 + last_cols);
}

void format_node(const Plan &p, int id, int indent, std::string &out) {
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
    case NodeKind::Grid:
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
  out += line + "\n";
  static const char *kLoopSlots[] = {"body", "remainder", "first"};
  static const char *kAllocSlots[] = {"prologue", "body", "epilogue"};
  static const char *kGridSlots[] = {"tile", "last rows", "last columns", "corner"};
  for (int slot = 0; slot < kMaxChildren; ++slot) {
    const int c = n.children[slot];
    if (c < 0) continue;
    const bool label = (n.kind == NodeKind::Loop && slot > 0) || n.kind == NodeKind::Alloc ||
                       n.kind == NodeKind::Grid;
    if (label) {
      const char *name = n.kind == NodeKind::Loop   ? kLoopSlots[slot]
                         : n.kind == NodeKind::Grid ? kGridSlots[slot]
                                                    : kAllocSlots[slot];
      out += std::string((indent + 1) * 2, ' ') + name + ":\n";
      format_node(p, c, indent + 2, out);
    } else {
      format_node(p, c, indent + 1, out);
    }
  }
}

}  // namespace

int64_t Plan::grid_iterations() const {
  return parallel_root() ? tessel::grid_iterations(nodes[static_cast<size_t>(root)]) : 0;
}

bool build_plan(Solver &solver, const Spec &s, Plan *out) {
  *out = Plan{};
  const MemoEntry e = solver.solve(s);
  if (!e.solvable) return false;
  for (int i = 0; i < 3; ++i) {
    PlanTensor t;
    t.role = PlanTensor::Role(i);
    const Spec c = canonical(s);
    t.spec = c.operands[i];
    t.rows = c.rows(i);
    t.cols = c.cols(i);
    out->tensors.push_back(t);
  }
  PlanBuilder builder(solver, *out);
  out->root = builder.build(s, {0, 1, 2}, 0);
  out->cost = e.cost;
  return true;
}

PlanRecord plan_record(const Plan &p) {
  PlanRecord record;
  if (p.root < 0) return record;
  record.root = spec_key(p.nodes[p.root].spec);
  for (const PlanNode &n : p.nodes)
    record.decisions.push_back({spec_key(n.spec), Decision{true, n.action}});
  return record;
}

std::string format_plan(const Plan &p) {
  std::string out;
  if (p.root >= 0) format_node(p, p.root, 0, out);
  return out;
}

}  // namespace tessel
