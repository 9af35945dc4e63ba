#include "alternatives.h"

#include <algorithm>

#include "solver.h"

namespace tessel {

std::vector<Alternative> alternatives(Solver &solver, const Spec &s) {
  const Spec c = canonical(s);
  const Target &target = solver.target();
  std::vector<Action> actions;
  enumerate_actions(c, target, actions);
  std::vector<Alternative> out;
  out.reserve(actions.size());
  for (const Action &a : actions) {
    Alternative alt{a, true, {}};
    const Expansion e = expand(c, a, target);
    alt.cost = local_cost(e);
    // Summed as the solver sums a candidate (a child that runs zero times still has to exist).
    for (const Child &child : e.children) {
      if (!child.present) continue;
      const MemoEntry sub = solver.solve(child.spec);
      if (!sub.solvable) {
        alt.solvable = false;
        break;
      }
      add_child_cost(alt.cost, sub.cost, child.multiplicity, e);
    }
    out.push_back(alt);
  }
  // Stable: equal costs keep the enumeration order, the solver's tie-break.
  std::stable_sort(out.begin(), out.end(), [](const Alternative &x, const Alternative &y) {
    if (x.solvable != y.solvable) return x.solvable;
    return x.solvable && cheaper(x.cost, y.cost);
  });
  return out;
}

}  // namespace tessel
