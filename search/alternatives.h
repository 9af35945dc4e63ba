// Every action the search could take for a spec, each with its exact cost: what the solver's
// choice won against, and by how much (tessel plan --alternatives). A tool for checking the
// cost model against measurements, not for calls: each action's children are solved in
// full, as no search bounded by the best plan would.
#pragma once

#include <vector>

#include "action.h"
#include "cost.h"

namespace tessel {

class Solver;

struct Alternative {
  Action action;
  bool solvable = false;  // every child has a plan within the spec's limits
  Cost cost;              // solvable: the cheapest plan that starts with `action`
};

// The actions enumerate_actions lists for canonical(s), cheapest first as the solver ranks
// them (cost, then enumeration order), the unsolvable last. The first solvable one is the
// solver's decision for the spec, at the same cost.
std::vector<Alternative> alternatives(Solver &solver, const Spec &s);

}  // namespace tessel
