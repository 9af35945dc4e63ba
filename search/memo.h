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
  Action action;           // the best action (exact and solvable)
  Cost cost;               // exact: the optimum
  double lower_bound = 0;  // not exact: every plan costs more than this
};

// A spec's memo key and the key's hash. The solver looks each child up while bounding its
// parent's actions and again when it solves it: it computes these once per child (keys and
// hashes were a sixth of a search when every lookup made its own).
struct MemoKey {
  SpecKey key{};
  uint64_t hash = 0;  // key_hash(key)
};
inline MemoKey memo_key(const Spec &s) {
  MemoKey k{spec_key(s), 0};
  k.hash = key_hash(k.key);
  return k;
}

class MemoDb {
 public:
  virtual ~MemoDb() = default;
  // Looks up a canonical spec whose key is `k` (memo_key(s)).
  virtual bool get(const Spec &s, const MemoKey &k, MemoEntry *out) = 0;
  virtual void put(const Spec &s, const MemoKey &k, const MemoEntry &e) = 0;
  virtual size_t size() const = 0;
  bool get(const Spec &s, MemoEntry *out) { return get(s, memo_key(s), out); }
  void put(const Spec &s, const MemoEntry &e) { put(s, memo_key(s), e); }
};

// The solver's memo in memory (key_table.h).
class InMemoryMemo final : public MemoDb {
 public:
  using MemoDb::get;
  using MemoDb::put;
  bool get(const Spec &, const MemoKey &k, MemoEntry *out) override {
    const MemoEntry *e = table_.find(k.key, k.hash);
    if (e) *out = *e;
    return e != nullptr;
  }
  void put(const Spec &, const MemoKey &k, const MemoEntry &e) override {
    table_.put(k.key, k.hash, e);
  }
  size_t size() const override { return table_.size(); }
  template <class F>
  void for_each(F &&f) const {
    table_.for_each([&](const SpecKey &k, const MemoEntry &e) { f(spec_from_key(k), e); });
  }

 private:
  KeyTable<MemoEntry> table_;
};

}  // namespace tessel
