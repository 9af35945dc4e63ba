// The solver: exact memoized dynamic programming over the action space. The best plan for a
// spec is its cheapest action whose sub-specs are all solvable, each sub-spec solved the same
// way. Costs combine affinely: an action's local cost plus each child's cost times the number
// of times it runs.
//
// Branch and bound keeps it fast without giving up exactness: a spec is solved under a budget
// (the most its parent could use), actions are tried cheapest-bound first, and an action is
// skipped once its local cost plus lower bounds of its unsolved children exceed the best found.
// A search cut off by its budget memoizes the lower bound it proved, never a guess. Ties are
// broken by cycles, then workspace, then depth, then enumeration order, exactly as plain DP.
#pragma once
#include <cstdint>
#include <vector>

#include "memo.h"
#include "target.h"

namespace tessel {

struct SearchStats {
  int64_t specs_solved = 0;  // specs whose actions were enumerated
  int64_t memo_hits = 0;
  int64_t actions_tried = 0;
  int64_t actions_pruned = 0;  // skipped by branch and bound
  double seconds = 0;
};

class Solver {
 public:
  // `helper_depth` > 0 makes this a SearchHelper's solver: above that depth it takes each
  // spec's second-best action first, and it stops when its memo says so.
  Solver(const Target &target, MemoDb &memo, int helper_depth = 0)
      : target_(target), memo_(memo), helper_depth_(helper_depth) {}

  // The best decision for `s` (canonicalized first). `solvable` is false when no action
  // sequence reaches kernels within the spec's limits.
  MemoEntry solve(const Spec &s);

  const Target &target() const { return target_; }
  MemoDb &memo() { return memo_; }
  const SearchStats &stats() const { return stats_; }

 private:
  // `s` is canonical with memo_hash(s) `hash`; `target_bound` is target_.lower_bound(s), or
  // negative when not computed yet (it is pure, so a child's is computed once, when it is
  // bounded).
  // `eager`: search past `budget`, up to kEagerMargin over the spec's bound (see there).
  MemoEntry solve_within(const Spec &s, uint64_t hash, double target_bound, double budget,
                         int depth, bool eager = true);
  // The best lower bound known for `s`; sets `target_bound` when it computed it.
  double known_lower_bound(const Spec &s, uint64_t hash, double *target_bound);
  // known_lower_bound for a spec whose memo entry (if `known`, with bound `memoized`) does not
  // cover the target's bound.
  double lower_bound_with_target(const Spec &s, bool known, double memoized, double *target_bound);
  // A helper asked to stop: what it has not finished proves nothing, so it returns unknown
  // entries and stores none.
  bool stopped() const { return helper_depth_ > 0 && memo_.stopping(); }

  const Target &target_;
  MemoDb &memo_;
  const int helper_depth_;
  SearchStats stats_;
};

// An action's cost is its expansion's local cost, with each child's cost added in slot order.
Cost local_cost(const Expansion &e);
void add_child_cost(Cost &total, const Cost &child, double multiplicity, const Expansion &e);

}  // namespace tessel
