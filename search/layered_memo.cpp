#include "layered_memo.h"

#include <utility>

#include "solver.h"

namespace tessel {

bool LayeredMemo::get(const Spec &s, uint64_t hash, MemoEntry *out) {
  if (local_.get(s, hash, out)) return true;
  if (find_shared(s, hash, out, false) == Replay::Ok) return true;
  // Nothing usable is known: remember that locally (an inexact entry with no bound means
  // exactly "unknown" to the solver), so the next lookup does not ask again.
  local_.put(s, hash, MemoEntry{});
  return false;
}

void LayeredMemo::put(const Spec &s, uint64_t hash, const MemoEntry &e) {
  local_.put(s, hash, e);
  note_solved(s, e);
}

void LayeredMemo::note_solved(const Spec &s, const MemoEntry &e) {
  if (e.exact) solved_.push_back({spec_key(s), Decision{e.solvable, e.action}});
}

StoredEntries LayeredMemo::take_solved() {
  return std::exchange(solved_, {});
}

LayeredMemo::Replay LayeredMemo::find_shared(const Spec &s, uint64_t hash, MemoEntry *out,
                                             bool reread) {
  Decision d;
  if (!shared_.find(spec_key(s), &d, reread)) return Replay::Missing;
  const Replay r = replay(s, d, out);
  if (r == Replay::Ok) {
    ++replayed_;
    local_.put(s, hash, *out);
  } else if (r == Replay::Invalid) {
    ++rejected_;
  }
  return r;
}

LayeredMemo::Replay LayeredMemo::replay(const Spec &s, const Decision &d, MemoEntry *out) {
  out->exact = true;
  out->solvable = d.solvable;
  if (!d.solvable) return Replay::Ok;
  if (!action_applies(s, d.action, target_, actions_)) return Replay::Invalid;
  const Expansion x = expand(s, d.action, target_);
  Cost total = local_cost(x);
  for (const Child &child : x.children) {
    if (!child.present) continue;
    // A child known here only by a bound (from an earlier search) may still be decided in
    // the shared table; one missing there may have been written since its block was read.
    const Spec c = canonical(child.spec);
    const uint64_t hash = memo_hash(c);
    MemoEntry sub;
    if (!local_.get(c, hash, &sub) || !sub.exact) {
      const Replay r = find_shared(c, hash, &sub, true);
      if (r != Replay::Ok) return r;
    }
    if (!sub.solvable) return Replay::Invalid;
    add_child_cost(total, sub.cost, child.multiplicity, x);
  }
  out->action = d.action;
  out->cost = total;
  return Replay::Ok;
}

}  // namespace tessel
