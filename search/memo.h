// MemoDb: where the solver keeps the best decision for every spec it solved. The in-memory
// table lives here; the persistent database implements the same interface.
#pragma once
#include <cstddef>
#include <vector>

#include "action.h"
#include "cost.h"
#include "key_table.h"
#include "spec.h"

namespace tessel {

// Either the exact optimum of a spec (`exact`; `solvable` false means no plan exists), or
// only a proven lower bound on it, left by a search that was cut off by its budget.
struct MemoEntry {
  bool exact = false;
  bool solvable = false;
  // Not exact: lower_bound is at least the target's bound on the spec (Target::lower_bound),
  // as the solver's bounds are; false when nothing is known.
  bool covers_target_bound = false;
  Action action;           // the best action (exact and solvable)
  Cost cost;               // exact: the optimum
  double lower_bound = 0;  // not exact: every plan costs more than this
};

// Where the memo finds a spec: the hash of its bytes (key_table.h). The solver looks each
// child up while bounding its parent's actions and again when it solves it: it hashes each
// child once (building keys and hashes for every lookup was a sixth of a search).
inline uint64_t memo_hash(const Spec &s) {
  return table_hash(s);
}

class MemoDb {
 public:
  virtual ~MemoDb() = default;
  // Looks up a canonical spec; `hash` is memo_hash(s).
  virtual bool get(const Spec &s, uint64_t hash, MemoEntry *out) = 0;
  virtual void put(const Spec &s, uint64_t hash, const MemoEntry &e) = 0;
  virtual size_t size() const = 0;
  // A hint that the spec of this memo_hash will be looked up soon.
  virtual void prefetch(uint64_t) const {}
  bool get(const Spec &s, MemoEntry *out) { return get(s, memo_hash(s), out); }
  void put(const Spec &s, const MemoEntry &e) { put(s, memo_hash(s), e); }
};

// The solver's memo in memory (key_table.h), keyed by the specs themselves.
class InMemoryMemo final : public MemoDb {
 public:
  using MemoDb::get;
  using MemoDb::put;
  bool get(const Spec &s, uint64_t hash, MemoEntry *out) override {
    const MemoEntry *e = table_.find(s, hash);
    if (e) *out = *e;
    return e != nullptr;
  }
  void put(const Spec &s, uint64_t hash, const MemoEntry &e) override { table_.put(s, hash, e); }
  size_t size() const override { return table_.size(); }
  void prefetch(uint64_t hash) const override { table_.prefetch(hash); }
  template <class F>
  void for_each(F &&f) const {
    table_.for_each(f);
  }

 private:
  KeyTable<MemoEntry, Spec> table_;
};

}  // namespace tessel
