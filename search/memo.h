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

class MemoDb {
 public:
  virtual ~MemoDb() = default;
  // Looks up a canonical spec.
  virtual bool get(const Spec &s, MemoEntry *out) = 0;
  virtual void put(const Spec &s, const MemoEntry &e) = 0;
  virtual size_t size() const = 0;
};

// The solver's memo in memory (key_table.h).
class InMemoryMemo final : public MemoDb {
 public:
  bool get(const Spec &s, MemoEntry *out) override {
    const MemoEntry *e = table_.find(spec_key(s));
    if (e) *out = *e;
    return e != nullptr;
  }
  void put(const Spec &s, const MemoEntry &e) override { table_.put(spec_key(s), e); }
  size_t size() const override { return table_.size(); }
  template <class F>
  void for_each(F &&f) const {
    table_.for_each([&](const SpecKey &k, const MemoEntry &e) { f(spec_from_key(k), e); });
  }

 private:
  KeyTable<MemoEntry> table_;
};

}  // namespace tessel
