// MemoDb: where the solver keeps the best decision for every spec it solved. The in-memory
// table lives here; the persistent database implements the same interface.
#pragma once
#include <cstddef>
#include <vector>

#include "action.h"
#include "cost.h"
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

// Open addressing with linear probing over the specs' integer keys: the solver's hottest
// data structure (a lookup per child of every action tried).
class InMemoryMemo final : public MemoDb {
 public:
  bool get(const Spec &s, MemoEntry *out) override;
  void put(const Spec &s, const MemoEntry &e) override;
  size_t size() const override { return count_; }
  template <class F>
  void for_each(F &&f) const {
    for (size_t i = 0; i < tags_.size(); ++i)
      if (tags_[i]) f(spec_from_key(slots_[i].key), slots_[i].entry);
  }

 private:
  // Lookups are memory-bound: probing walks a dense array of 64-bit hash tags (eight to a
  // cache line) and touches a slot only when its tag matches. Tag 0 marks an empty slot.
  struct Slot {
    SpecKey key{};
    MemoEntry entry;
  };
  size_t find(const SpecKey &key, uint64_t tag) const;
  void grow();

  std::vector<uint64_t> tags_;
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace tessel
