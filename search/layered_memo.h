// LayeredMemo: the solver's memo when decisions are shared. A thread's own InMemoryMemo sits
// in front of the process's DecisionCache (and through it the database on disk).
//
// A shared decision is replayed before it is believed: its action must be one that the
// enumeration offers for the spec today, and its children's decisions must replay too. The
// replay recomputes the exact cost, so what comes back equals what solving would have found,
// and a stale or damaged decision can cost a search but never produce a wrong plan.
#pragma once
#include <cstdint>
#include <vector>

#include "decision_cache.h"
#include "memo.h"
#include "target.h"

namespace tessel {

class LayeredMemo final : public MemoDb {
 public:
  LayeredMemo(InMemoryMemo &local, DecisionCache &shared, const Target &target)
      : local_(local), shared_(shared), target_(target) {
    front_ = &local.table();
  }

  using MemoDb::get;
  using MemoDb::put;
  bool get(const Spec &s, uint64_t hash, MemoEntry *out) override;
  void put(const Spec &s, uint64_t hash, const MemoEntry &e) override;
  size_t size() const override { return local_.size(); }
  void note_solved(const Spec &s, const MemoEntry &e) override;

  // Exact results solved through this memo since the last call, as decisions to publish.
  StoredEntries take_solved();
  // Shared decisions that failed their replay (not counting those missing a sub-spec's
  // decision: those are misses).
  int64_t rejected() const { return rejected_; }
  int64_t replayed() const { return replayed_; }

 private:
  // Missing: nothing shared (a miss). Invalid: a decision that does not apply today.
  enum class Replay { Ok, Missing, Invalid };
  // The shared decision for `s`, replayed into an exact entry (and kept locally). `reread`
  // asks the store again for a spec its block did not have when read.
  Replay find_shared(const Spec &s, uint64_t hash, MemoEntry *out, bool reread);
  Replay replay(const Spec &s, const Decision &d, MemoEntry *out);

  InMemoryMemo &local_;
  DecisionCache &shared_;
  const Target &target_;
  StoredEntries solved_;
  std::vector<Action> actions_;
  int64_t rejected_ = 0;
  int64_t replayed_ = 0;
};

}  // namespace tessel
