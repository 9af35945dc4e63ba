// MemoTable: the memo's entries in memory, a hash table from specs by open addressing with
// linear probing. It sits in the search's hottest loop, a lookup for every child of every
// action, and soon outgrows the caches (a million lookups among 50k entries at 1000^3). So
// what bounding a child reads (the spec, its hash, whether the entry is exact, its cost or
// bound) is one 64-byte line, with the hash in it, where probing reads it anyway (a separate
// array of hashes, as KeyTable's, costs a second line); the rest of an entry (the action,
// workspace, depth) is in a parallel array that only full lookups read. Specs are the keys
// as they are: their bytes identify them, and building a SpecKey for every lookup was a tenth
// of a search.
//
// A helper thread may search the same table while its owner does (SearchHelper). A slot's
// spec is written once, before its tag publishes it. What changes later (flags, value, the
// cold part) is guarded by the slot's sequence number, odd while a writer holds the slot:
// readers retry a read that overlapped a write. Those fields are read with acquire and
// written with release atomic accesses (plain loads and stores on x86), which also keeps a
// reader's second look at the sequence number after its reads without fences (which
// ThreadSanitizer does not support). Entries only improve: an exact entry stays, a bound only
// rises, so what either thread proved stays proved. The table grows only while no helper
// uses it. Single-threaded, all this costs 2.7% more instructions per search.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "memo_entry.h"
#include "zeroed_array.h"

namespace tessel {

class MemoTable {
 public:
  MemoTable() = default;
  MemoTable(const MemoTable &) = delete;
  MemoTable &operator=(const MemoTable &) = delete;

  // `hash` is memo_hash(s) in every call.
  bool find(const Spec &s, uint64_t hash, MemoEntry *out) const {
    return lookup(s, hash, [&](const Hot &h, size_t i) {
      const Cold c = read_cold(i);
      const uint8_t flags = load(h.flags);
      const double value = load(h.value);
      out->exact = flags & kExact;
      out->solvable = flags & kSolvable;
      out->covers_target_bound = flags & kCovers;
      out->action = c.action;
      out->cost = {out->exact ? value : c.other, c.peak_bytes, c.depth};
      out->lower_bound = out->exact ? c.other : value;
    });
  }
  // The part of find that bounding reads: one line.
  bool find_bound(const Spec &s, uint64_t hash, MemoBound *out) const {
    return lookup(s, hash, [&](const Hot &h, size_t) {
      const uint8_t flags = load(h.flags);
      *out = {bool(flags & kExact), bool(flags & kSolvable), bool(flags & kCovers), load(h.value)};
    });
  }
  // Inserts, or improves the entry (see above). The owner's call: it may grow the table,
  // first waiting for helpers to stop.
  void put(const Spec &s, uint64_t hash, const MemoEntry &e);
  // put for a helper: never grows the table; near full, it asks helpers to stop and then
  // drops what they put.
  void put_from_helper(const Spec &s, uint64_t hash, const MemoEntry &e);
  // Starts loading the line a lookup of this hash reads first.
  void prefetch(uint64_t hash) const {
    if (!hot_.empty()) __builtin_prefetch(&hot_[home(hash | 1)]);
  }
  size_t size() const { return count_.load(std::memory_order_relaxed); }
  // Owner only, with no helper: room for `entries` without growing.
  void reserve(size_t entries);
  // Owner only, with no helper: forgets every entry and gives the memory back.
  void clear();
  // Owner only, with no helper.
  template <class F>
  void for_each(F &&f) const {
    MemoEntry e;
    for (size_t i = 0; i < hot_.size(); ++i)
      if (hot_[i].tag && find(hot_[i].key, hot_[i].tag, &e)) f(hot_[i].key, e);
  }

  // Helpers: the owner counts one in before its thread starts; the helper counts itself
  // out once it no longer touches the table. A helper stops searching when asked: for the
  // table to grow, after which it may join again (rejoin), or for good (end_helpers).
  void add_helper();
  void remove_helper() { helpers_.fetch_sub(1, std::memory_order_release); }
  bool helpers_asked_to_stop() const { return stop_helpers_.load(std::memory_order_relaxed); }
  // How many times the table has grown. Constant while a helper is counted in.
  uint32_t growths() const { return growths_.load(std::memory_order_acquire); }
  // Helper, counted out after a stop: waits until the table has grown past `growths` and
  // counts itself in again (true), or until the owner ends helping (false).
  bool rejoin(uint32_t growths);
  // Owner: asks helpers to stop for good and waits until none is left.
  void end_helpers();

 private:
  static constexpr uint8_t kExact = 1, kSolvable = 2, kCovers = 4;
  // The key is written once, before the tag that publishes it (release), and read only after
  // the tag (acquire): plain accesses. What changes later (flags, value, Cold) is read and
  // written under the slot's sequence number.
  struct alignas(64) Hot {
    uint64_t tag;  // memo_hash | 1; 0: an empty slot
    Spec key;
    uint8_t flags;
    uint16_t seq;  // odd while a writer holds the slot
    double value;  // exact: cost.cycles; otherwise lower_bound
  };
  static_assert(sizeof(Hot) == 64, "what bounding reads is one line: keep Spec at 44 bytes");
  struct Cold {
    Action action;
    int32_t depth;
    int64_t peak_bytes;
    double other;  // exact: lower_bound; otherwise cost.cycles (entries read back as put)
  };
  static_assert(sizeof(Cold) == 32, "Cold is read and written as four words");
  struct ColdWords {
    uint64_t w[4];
  };

  template <class T>
  static T load(const T &x) {
    T v;
    __atomic_load(&x, &v, __ATOMIC_ACQUIRE);
    return v;
  }
  template <class T>
  static void store(T &x, T v) {
    __atomic_store(&x, &v, __ATOMIC_RELEASE);
  }
  Cold read_cold(size_t i) const;
  // Waiting for another thread's write to a slot, or for helpers to leave: spin briefly, then
  // yield, in case that thread has lost its core.
  static void back_off(int attempt);

  // Where a probe for this tag (memo_hash | 1) starts: bits above the one the tag sets.
  size_t home(uint64_t tag) const { return (tag >> 1) & mask_; }
  // Calls read(slot, index) on the slot holding `s`, again until the read did not overlap a
  // write; false when `s` is absent. A slot's tag never changes once set, so only the slot
  // with the spec is read under its sequence number.
  template <class Read>
  bool lookup(const Spec &s, uint64_t hash, Read &&read) const {
    if (hot_.empty()) return false;
    const uint64_t tag = hash | 1;
    for (size_t i = home(tag);; i = (i + 1) & mask_) {
      const Hot &h = hot_[i];
      const uint64_t t = load(h.tag);
      if (t == 0) return false;
      if (t != tag || !same_spec(h.key, s)) continue;
      for (int attempt = 0;; ++attempt) {
        const uint16_t seq = __atomic_load_n(&h.seq, __ATOMIC_ACQUIRE);
        if (seq & 1) {
          back_off(attempt);
          continue;
        }
        read(h, i);
        if (__atomic_load_n(&h.seq, __ATOMIC_RELAXED) == seq) return true;
      }
    }
  }
  void store_entry(const Spec &s, uint64_t hash, const MemoEntry &e);
  bool full(size_t entries) const { return entries * 4 > hot_.size() * 3; }
  void grow(size_t slots);
  // Owner: asks helpers to stop, waits until none is left, and clears the request.
  void stop_helpers();

  ZeroedArray<Hot> hot_;  // an all-zero Hot is an empty slot
  ZeroedArray<ColdWords> cold_;
  size_t mask_ = 0;  // hot_.size() - 1
  std::atomic<size_t> count_{0};
  std::atomic<int> helpers_{0};
  std::atomic<bool> stop_helpers_{false};
  // Held while the table grows or helping ends: a helper joins again only between growths.
  std::mutex helpers_mutex_;
  std::condition_variable helper_may_join_;  // after a growth, or once helping ends
  std::atomic<uint32_t> growths_{0};
  bool helping_ = false;  // from add_helper to end_helpers, under helpers_mutex_
};

}  // namespace tessel
