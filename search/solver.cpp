#include "solver.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>

#include "check.h"
#include "thread_heap.h"

namespace tessel {
namespace {

constexpr int kMaxDepth = 256;
// How far above a spec's lower bound its search reaches at first (see solve, solve_within):
// the model's overheads over its bound are rarely larger. Measured with callgrind over every
// shapes.txt shape (cold, solve + plan): 1.25 +14% instructions at 1000^3, 1.5 2.29G in all
// at one thread (2.37G at two), 2.5 2.18G (2.27G), 3 and 4 within 1% of 2.5 at 1000^3 and
// 129^3. A wider margin solves a child fully the first time instead of again for a later
// parent with more budget; the plans are the same at any margin.
constexpr double kEagerMargin = 2.5;
// A target bound not computed yet (bounds are never negative).
constexpr double kNotComputed = -1;

}  // namespace

Cost local_cost(const Expansion &e) {
  return Cost{e.local_cycles, e.alloc_bytes, 1};
}

void add_child_cost(Cost &total, const Cost &child, double multiplicity, const Expansion &e) {
  total.cycles += child.cycles * multiplicity;
  // The node's own workspace stays allocated while the child runs.
  total.peak_bytes = std::max(total.peak_bytes, child.peak_bytes + e.alloc_bytes);
  total.depth = std::max(total.depth, child.depth + 1);
}

// Inline where the solver bounds children: most are answered from the memo's front table,
// and a call for each cost a twentieth of a search.
[[gnu::always_inline]] inline double Solver::known_lower_bound(const Spec &s, uint64_t hash,
                                                               double *target_bound) {
  MemoBound e;
  const bool known = memo_.get_bound(s, hash, &e);
  if (known && e.exact) return e.solvable ? e.value : std::numeric_limits<double>::infinity();
  // A spec is often bounded again while it is only partly solved: the target's bound (a tenth
  // of a search, computed for each) is then already in the memoized one.
  if (known && e.covers_target_bound) return e.value;
  return lower_bound_with_target(s, known, e.value, target_bound);
}

double Solver::lower_bound_with_target(const Spec &s, bool known, double memoized,
                                       double *target_bound) {
  *target_bound = target_.lower_bound(s);
  return known ? std::max(memoized, *target_bound) : *target_bound;
}

MemoEntry Solver::solve(const Spec &s) {
  const auto start = std::chrono::steady_clock::now();
  // Iterative widening: search under a budget kEagerMargin above the lower bound, and widen
  // it until a plan fits. Each failed round leaves proven lower bounds in the memo, so the
  // next round prunes more; the first plan found is the exact optimum.
  const Spec c = canonical(s);
  const uint64_t hash = memo_hash(c);
  double target_bound = kNotComputed;
  MemoEntry e;
  double budget = known_lower_bound(c, hash, &target_bound) * kEagerMargin;
  for (int round = 0; round < 64 && std::isfinite(budget); ++round) {
    e = solve_within(c, hash, target_bound, budget, 0);
    if (e.exact || stopped()) break;
    budget = std::max(budget, e.lower_bound) * kEagerMargin;
  }
  if (!e.exact && !stopped())
    e = solve_within(c, hash, target_bound, std::numeric_limits<double>::infinity(), 0);
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  TESSEL_CHECK(e.exact || stopped(), "an unbounded search must end exact");
  return e;
}

namespace {

// An action of the spec being solved, bounded. Its children are expansion.children[i].spec:
// expand() keeps a canonical spec's children canonical (tests/search/actions_test.cpp).
struct Candidate {
  // expand_into() rewrites it in place: building an expansion afresh (four default specs) and
  // copying it in were most of the cost of a candidate.
  Expansion expansion;
  uint32_t present = 0;  // bit `slot` set when expansion.children[slot].present
  // Per present slot (the rest are never read, so not cleared: that was 1% of a search).
  std::array<uint64_t, kMaxChildren> hashes;  // memo_hash of each child
  std::array<double, kMaxChildren> child_bounds;
  std::array<double, kMaxChildren> target_bounds;
};

// A candidate's bound and position in the enumeration order (the final tie-break), ordered
// apart from the candidates so ordering moves and reads only these.
struct Ranked {
  double bound;
  int index;
};

struct Scratch {
  std::vector<Action> actions;
  std::vector<Candidate> candidates;
  std::vector<Ranked> order;
};

// Budgets are compared with a little slack so rounding never turns a tie into a cut.
double slack(double budget) {
  return budget + 1e-9 * std::abs(budget) + 1e-9;
}

// A helper's first candidate: the second-cheapest bound, when it is within the limit (the
// candidates left are then taken in order again, so the first is never pruned unseen).
bool second_cheapest(const std::vector<Ranked> &order, size_t first, double limit, size_t *out) {
  if (order.size() < 2) return false;
  size_t second = first == 0 ? 1 : 0;
  for (size_t j = 0; j < order.size(); ++j)
    if (j != first && order[j].bound < order[second].bound) second = j;
  if (order[second].bound > slack(limit)) return false;
  *out = second;
  return true;
}

}  // namespace

MemoEntry Solver::solve_within(const Spec &s, uint64_t hash, double target_bound, double budget,
                               int depth, bool eager) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (stopped()) return MemoEntry{};
  MemoEntry found;
  const bool known = memo_.get(s, hash, &found);
  if (known && found.exact) {
    ++stats_.memo_hits;
    return found;
  }
  if (target_bound < 0 && !(known && found.covers_target_bound))
    target_bound = target_.lower_bound(s);
  // max(lower_bound, target_bound) when the memoized bound does not already cover it.
  const double floor = known && found.covers_target_bound
                           ? found.lower_bound
                           : std::max(known ? found.lower_bound : 0.0, target_bound);
  if (floor > slack(budget)) {
    ++stats_.memo_hits;
    MemoEntry cut;
    cut.lower_bound = floor;
    return cut;
  }
  // Every action makes a strictly smaller problem (a dimension, a level, a layout class or
  // the op moves one way), so the recursion ends; this only guards that argument.
  TESSEL_CHECK(depth < kMaxDepth, "solver recursion does not terminate");
  ++stats_.specs_solved;

  // Scratch vectors per recursion depth, reused across specs: allocation was a tenth of the
  // solver's time.
  static thread_local ThreadHeap<std::array<Scratch, kMaxDepth>> scratch_by_depth;
  Scratch &scratch = scratch_by_depth.get()[depth];
  std::vector<Action> &actions = scratch.actions;
  actions.clear();
  enumerate_actions(s, target_, actions);
  std::vector<Candidate> &candidates = scratch.candidates;
  std::vector<Ranked> &order = scratch.order;
  if (candidates.size() < actions.size()) candidates.resize(actions.size());
  order.clear();
  // Expand every action first, and ask the memo to fetch each child's entry while the rest
  // are expanded: the memo is far larger than the caches, and waiting for each lookup in
  // turn was much of a search's time.
  for (size_t i = 0; i < actions.size(); ++i) {
    Candidate &c = candidates[i];
    expand_into(s, actions[i], target_, c.expansion);
    c.present = 0;
    for (int slot = 0; slot < kMaxChildren; ++slot) {
      const Child &child = c.expansion.children[slot];
      if (!child.present) continue;
      c.present |= 1u << slot;
      c.hashes[slot] = memo_hash(child.spec);
      memo_.prefetch(c.hashes[slot]);
    }
  }
  // The first candidate to take is found while bounding (see the loop below).
  size_t first = 0;
  for (size_t i = 0; i < actions.size(); ++i) {
    Candidate &c = candidates[i];
    double bound = c.expansion.local_cycles;
    for (uint32_t left = c.present; left != 0; left &= left - 1) {
      const int slot = std::countr_zero(left);
      const Child &child = c.expansion.children[slot];
      c.target_bounds[slot] = kNotComputed;
      c.child_bounds[slot] = known_lower_bound(child.spec, c.hashes[slot], &c.target_bounds[slot]);
      // A child that runs zero times still has to exist.
      bound += child.multiplicity > 0 ? child.multiplicity * c.child_bounds[slot]
                                      : (c.child_bounds[slot] == kInf ? kInf : 0);
    }
    order.push_back({bound, static_cast<int>(i)});
    if (bound < order[first].bound) first = i;  // ties: the lower index, already there
  }
  MemoEntry best;
  int best_index = -1;
  // The most a useful plan may cost. Solving a little past the budget costs little more, and
  // saves re-solving this spec when a later parent can afford more: search up to a margin
  // over the known bound.
  double limit = eager ? std::max(budget, floor * kEagerMargin) : budget;
  double cut_bound = kInf;  // the least any skipped action could cost
  // Candidates are taken cheapest bound first, ties in enumeration order (a stable sort's
  // order). A spec tries two or three before its limit prunes the rest, so each is found by
  // a scan of those left: sorting all of them was a twentieth of a search.
  for (size_t taken = 0; taken < order.size();) {
    size_t next = taken == 0 ? first : taken;
    if (taken == 0 && depth < helper_depth_) {
      second_cheapest(order, first, limit, &next);
    } else if (taken > 0) {
      for (size_t j = taken + 1; j < order.size(); ++j)
        if (order[j].bound < order[next].bound ||
            (order[j].bound == order[next].bound && order[j].index < order[next].index))
          next = j;
    }
    std::swap(order[taken], order[next]);
    const Ranked r = order[taken++];
    if (r.bound > slack(limit)) {
      // The bounds left are no smaller, and the limit does not change: all are pruned, and
      // this is the least of them.
      stats_.actions_pruned += static_cast<int64_t>(order.size() - taken) + 1;
      cut_bound = std::min(cut_bound, r.bound);
      break;
    }
    ++stats_.actions_tried;
    const Candidate &c = candidates[r.index];
    const Expansion &e = c.expansion;
    Cost total = local_cost(e);
    double rest = r.bound - e.local_cycles;
    bool complete = true;
    for (uint32_t left = c.present; left != 0 && complete; left &= left - 1) {
      const int slot = std::countr_zero(left);
      const Child &child = e.children[slot];
      const double mult = child.multiplicity;
      if (mult > 0) rest -= mult * c.child_bounds[slot];
      const double child_budget = mult > 0 ? (limit - total.cycles - rest) / mult : kInf;
      // A parallel split's tiles are specs no serial plan shares: searched only within the
      // budget, they are not solved in full for grids that lose.
      const MemoEntry sub = solve_within(child.spec, c.hashes[slot], c.target_bounds[slot],
                                         child_budget, depth + 1, e.node != NodeKind::Grid);
      if (!sub.exact || !sub.solvable) {
        complete = false;
        const double sub_bound = sub.exact ? kInf : sub.lower_bound;
        cut_bound = std::min(cut_bound, mult > 0 ? total.cycles + mult * sub_bound + rest
                                                 : (sub_bound == kInf ? kInf : total.cycles));
        break;
      }
      add_child_cost(total, sub.cost, mult, e);
    }
    if (!complete) continue;
    if (total.cycles > slack(limit)) {
      cut_bound = std::min(cut_bound, total.cycles);
      continue;
    }
    const bool better =
        !best.solvable || cheaper(total, best.cost) || (total == best.cost && r.index < best_index);
    if (better) {
      best.exact = best.solvable = true;
      best.action = actions[r.index];
      best.cost = total;
      best_index = r.index;
      limit = std::min(limit, total.cycles);
    }
  }
  if (stopped()) return MemoEntry{};
  if (best.solvable) {
    memo_.put(s, hash, best);
    return best;
  }
  MemoEntry cut;
  if (cut_bound == kInf) {
    cut.exact = true;  // no action can ever complete: unsolvable, whatever the budget
  } else {
    cut.lower_bound = std::max(floor, cut_bound);
    cut.covers_target_bound = true;  // floor covers it
  }
  memo_.put(s, hash, cut);
  return cut;
}

}  // namespace tessel
