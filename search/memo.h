// MemoDb: where the solver keeps the best decision for every spec it solved. InMemoryMemo
// keeps them in a MemoTable (memo_table.h); LayeredMemo puts the shared decisions, and
// through them the persistent database, behind one.
#pragma once
#include <cstddef>
#include <cstdint>

#include "memo_entry.h"
#include "memo_table.h"

namespace tessel {

class MemoDb {
 public:
  MemoDb() = default;
  MemoDb(const MemoDb &) = delete;  // front_ points into the object
  MemoDb &operator=(const MemoDb &) = delete;
  virtual ~MemoDb() = default;
  // Looks up a canonical spec; `hash` is memo_hash(s).
  virtual bool get(const Spec &s, uint64_t hash, MemoEntry *out) = 0;
  virtual void put(const Spec &s, uint64_t hash, const MemoEntry &e) = 0;
  virtual size_t size() const = 0;
  // get, for what bounding the spec reads. The solver's hottest call: the front table answers
  // it inline when it has the spec.
  bool get_bound(const Spec &s, uint64_t hash, MemoBound *out) {
    if (front_ && front_->find_bound(s, hash, out)) return true;
    return get_bound_behind(s, hash, out);
  }
  // A hint that the spec of this memo_hash will be looked up soon.
  void prefetch(uint64_t hash) const {
    if (front_) front_->prefetch(hash);
  }
  bool get(const Spec &s, MemoEntry *out) { return get(s, memo_hash(s), out); }
  void put(const Spec &s, const MemoEntry &e) { put(s, memo_hash(s), e); }

  // The table a helper thread may search beside this memo's owner (SearchHelper), or null.
  MemoTable *front_table() { return front_; }
  // A helper's exact result, put straight into the front table: for memos that keep a record
  // of what was solved.
  virtual void note_solved(const Spec &, const MemoEntry &) {}
  // Whether a search through this memo should stop (a helper's, when asked to).
  virtual bool stopping() const { return false; }

 protected:
  // get_bound for a spec the front table does not have (or without a front table).
  virtual bool get_bound_behind(const Spec &s, uint64_t hash, MemoBound *out) {
    MemoEntry e;
    if (!get(s, hash, &e)) return false;
    *out = bound_of(e);
    return true;
  }
  // The in-memory table a lookup tries first: what it holds is the memo's answer.
  MemoTable *front_ = nullptr;
};

// The solver's memo in memory.
class InMemoryMemo final : public MemoDb {
 public:
  InMemoryMemo() { front_ = &table_; }
  using MemoDb::get;
  using MemoDb::put;
  bool get(const Spec &s, uint64_t hash, MemoEntry *out) override {
    return table_.find(s, hash, out);
  }
  void put(const Spec &s, uint64_t hash, const MemoEntry &e) override { table_.put(s, hash, e); }
  size_t size() const override { return table_.size(); }
  void clear() { table_.clear(); }
  MemoTable &table() { return table_; }
  template <class F>
  void for_each(F &&f) const {
    table_.for_each(f);
  }

 protected:
  bool get_bound_behind(const Spec &, uint64_t, MemoBound *) override { return false; }

 private:
  MemoTable table_;
};

}  // namespace tessel
