// MemoDb: where the solver keeps the best decision for every spec it solved. The in-memory
// table lives here; the persistent database implements the same interface.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "action.h"
#include "cost.h"
#include "spec.h"
#include "zeroed_array.h"

namespace tessel {

// MemoTable hashes and compares a Spec's bytes: that needs a Spec without padding, and with
// one representation per value.
static_assert(std::has_unique_object_representations_v<Spec>,
              "the memo keys on a Spec's bytes: keep Spec free of padding");

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

// What bounding a spec reads of its memo entry.
struct MemoBound {
  bool exact = false;
  bool solvable = false;
  bool covers_target_bound = false;
  double value = 0;  // exact: the optimum's cycles; otherwise the entry's lower bound
};
inline MemoBound bound_of(const MemoEntry &e) {
  return {e.exact, e.solvable, e.covers_target_bound, e.exact ? e.cost.cycles : e.lower_bound};
}

// Word i of a spec's bytes (the last one zero-padded), loaded with a constant size: one load.
constexpr size_t kSpecWords = (sizeof(Spec) + 7) / 8;
template <size_t I>
inline uint64_t spec_word(const Spec &s) {
  constexpr size_t kBytes = 8 * I + 8 <= sizeof(Spec) ? 8 : sizeof(Spec) - 8 * I;
  uint64_t w = 0;
  std::memcpy(&w, reinterpret_cast<const unsigned char *>(&s) + 8 * I, kBytes);
  return w;
}
template <size_t... I>
inline std::array<uint64_t, kSpecWords> spec_words(const Spec &s, std::index_sequence<I...>) {
  return {spec_word<I>(s)...};
}
inline std::array<uint64_t, kSpecWords> spec_words(const Spec &s) {
  return spec_words(s, std::make_index_sequence<kSpecWords>());
}

// The memo's hash of a spec: a multilinear hash of its words (independent multiplies, so
// they issue together), then splitmix64's finalizer to bring the high bits down.
inline uint64_t memo_hash(const Spec &s) {
  static constexpr uint64_t kMul[] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                                      0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull,
                                      0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull};
  static_assert(kSpecWords <= sizeof(kMul) / sizeof(kMul[0]));
  const std::array<uint64_t, kSpecWords> w = spec_words(s);
  uint64_t h = 0;
  for (size_t i = 0; i < kSpecWords; ++i) h += w[i] * kMul[i];
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

inline bool same_spec(const Spec &a, const Spec &b) {
  const std::array<uint64_t, kSpecWords> x = spec_words(a), y = spec_words(b);
  uint64_t diff = 0;
  for (size_t i = 0; i < kSpecWords; ++i) diff |= x[i] ^ y[i];
  return diff == 0;
}

// MemoTable: the memo's entries in memory, a hash table from specs by open addressing with
// linear probing. It sits in the search's hottest loop, a lookup for every child of every
// action, and soon outgrows the caches (a million lookups among 50k entries, 12 MiB, at
// 1000^3). So what bounding a child reads (the spec, its hash, whether the entry is exact, its
// cost or bound) is one 64-byte line, with the hash in it, where probing reads it anyway (a
// separate array of hashes, as KeyTable's, costs a second line); the rest of an entry (the
// action, workspace, depth) is in a parallel array that only full lookups read. Specs are the
// keys as they are: their bytes identify them, and building a SpecKey for every lookup was a
// tenth of a search.
class MemoTable {
 public:
  // `hash` is memo_hash(s) in every call.
  bool find(const Spec &s, uint64_t hash, MemoEntry *out) const {
    const size_t i = find_slot(s, hash);
    if (i == kNone) return false;
    const Hot &h = hot_[i];
    const Cold &c = cold_[i];
    out->exact = h.flags & kExact;
    out->solvable = h.flags & kSolvable;
    out->covers_target_bound = h.flags & kCovers;
    out->action = c.action;
    out->cost = {out->exact ? h.value : c.other, c.peak_bytes, c.depth};
    out->lower_bound = out->exact ? c.other : h.value;
    return true;
  }
  // The part of find that bounding reads: one line.
  bool find_bound(const Spec &s, uint64_t hash, MemoBound *out) const {
    const size_t i = find_slot(s, hash);
    if (i == kNone) return false;
    const Hot &h = hot_[i];
    *out = {bool(h.flags & kExact), bool(h.flags & kSolvable), bool(h.flags & kCovers), h.value};
    return true;
  }
  // Inserts or replaces.
  void put(const Spec &s, uint64_t hash, const MemoEntry &e) {
    // Up to three quarters full: four in five lookups find an entry, and a table half the
    // size misses the caches less than probes of the fuller one cost (1000^3: -6%).
    if ((count_ + 1) * 4 > hot_.size() * 3) grow();
    const size_t i = slot(s, hash | 1);
    Hot &h = hot_[i];
    if (!h.hash) {
      h.hash = hash | 1;
      h.spec = s;
      ++count_;
    }
    h.flags = uint8_t((e.exact ? kExact : 0) | (e.solvable ? kSolvable : 0) |
                      (e.covers_target_bound ? kCovers : 0));
    h.value = e.exact ? e.cost.cycles : e.lower_bound;
    cold_[i] = {e.action, e.cost.peak_bytes, e.cost.depth, e.exact ? e.lower_bound : e.cost.cycles};
  }
  // Starts loading the line a lookup of this hash reads first.
  void prefetch(uint64_t hash) const {
    if (!hot_.empty()) __builtin_prefetch(&hot_[home(hash | 1)]);
  }
  size_t size() const { return count_; }
  template <class F>
  void for_each(F &&f) const {
    MemoEntry e;
    for (size_t i = 0; i < hot_.size(); ++i)
      if (hot_[i].hash && find(hot_[i].spec, hot_[i].hash, &e)) f(hot_[i].spec, e);
  }

 private:
  static constexpr uint8_t kExact = 1, kSolvable = 2, kCovers = 4;
  static constexpr size_t kNone = ~size_t{0};
  // One line while a Spec has at most 48 bytes.
  struct alignas(64) Hot {
    uint64_t hash = 0;  // memo_hash | 1; 0: an empty slot
    Spec spec;
    uint8_t flags = 0;
    double value = 0;  // exact: cost.cycles; otherwise lower_bound
  };
  struct Cold {
    Action action;
    int64_t peak_bytes = 0;
    int32_t depth = 0;
    double other = 0;  // exact: lower_bound; otherwise cost.cycles (entries read back as put)
  };

  // Where a probe for this tag (memo_hash | 1) starts: bits above the one the tag sets.
  size_t home(uint64_t tag) const { return (tag >> 1) & mask_; }
  // The slot holding `s`, or the empty slot where it would go. `tag` is memo_hash(s) | 1.
  size_t slot(const Spec &s, uint64_t tag) const {
    for (size_t i = home(tag);; i = (i + 1) & mask_)
      if (!hot_[i].hash || (hot_[i].hash == tag && same_spec(hot_[i].spec, s))) return i;
  }
  size_t find_slot(const Spec &s, uint64_t hash) const {
    if (hot_.empty()) return kNone;
    const size_t i = slot(s, hash | 1);
    return hot_[i].hash ? i : kNone;
  }
  void grow() {
    ZeroedArray<Hot> old_hot = std::move(hot_);
    ZeroedArray<Cold> old_cold = std::move(cold_);
    const size_t size = old_hot.empty() ? 1024 : old_hot.size() * 2;
    hot_ = ZeroedArray<Hot>(size);
    cold_ = ZeroedArray<Cold>(size);
    mask_ = size - 1;
    for (size_t i = 0; i < old_hot.size(); ++i)
      if (old_hot[i].hash) {
        size_t j = home(old_hot[i].hash);  // the specs are distinct: the first free slot
        while (hot_[j].hash) j = (j + 1) & mask_;
        hot_[j] = old_hot[i];
        cold_[j] = old_cold[i];
      }
  }

  ZeroedArray<Hot> hot_;  // an all-zero Hot is an empty slot
  ZeroedArray<Cold> cold_;
  size_t mask_ = 0;  // hot_.size() - 1
  size_t count_ = 0;
};

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

 protected:
  // get_bound for a spec the front table does not have (or without a front table).
  virtual bool get_bound_behind(const Spec &s, uint64_t hash, MemoBound *out) {
    MemoEntry e;
    if (!get(s, hash, &e)) return false;
    *out = bound_of(e);
    return true;
  }
  // The in-memory table a lookup tries first: what it holds is the memo's answer.
  const MemoTable *front_ = nullptr;
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
  const MemoTable &table() const { return table_; }
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
