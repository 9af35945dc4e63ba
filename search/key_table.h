// KeyTable: a hash table from spec keys to values, by open addressing with linear probing.
// The process's shared decisions sit in the search's path (a lookup for each spec a search
// meets first) and hold millions of entries, so: no node per entry (one allocation per entry
// was most of the cost under ASan), and lookups that walk a dense array of 64-bit hash tags
// (eight to a cache line), touching a slot only when its tag matches. Tag 0 marks an empty
// slot. (The solver's memo has its own table, memo_table.h.)
#pragma once
#include <cstddef>
#include <cstdint>

#include "spec.h"
#include "zeroed_array.h"

namespace tessel {

template <class V>
class KeyTable {
 public:
  const V *find(const SpecKey &key) const {
    if (tags_.empty()) return nullptr;
    const size_t i = slot(key, tag_of(key));
    return tags_[i] ? &slots_[i].value : nullptr;
  }
  // Inserts or replaces.
  void put(const SpecKey &key, const V &value) { *insert(key) = value; }
  // Inserts unless present; returns whether it did.
  bool put_new(const SpecKey &key, const V &value) {
    const size_t before = count_;
    V *v = insert(key);
    if (count_ == before) return false;
    *v = value;
    return true;
  }
  size_t size() const { return count_; }
  // Forgets every entry, keeping the table's memory for the next ones (no regrowth).
  void clear() {
    for (size_t i = 0; i < tags_.size(); ++i) tags_[i] = 0;
    count_ = 0;
  }
  // Room for `n` entries in all without growing again: one table of the final size instead
  // of a chain of doublings (each a fresh table, zeroed by the kernel page by page, then
  // rehashed into).
  void reserve(size_t n) {
    size_t size = tags_.empty() ? 1024 : tags_.size();
    while (n * 2 > size) size *= 2;
    if (size > tags_.size()) rehash(size);
  }
  template <class F>
  void for_each(F &&f) const {
    for (size_t i = 0; i < tags_.size(); ++i)
      if (tags_[i]) f(slots_[i].key, slots_[i].value);
  }

 private:
  struct Slot {
    SpecKey key{};
    V value{};
  };
  static uint64_t tag_of(const SpecKey &key) { return key_hash(key) | 1; }  // never 0
  // Inline, where operator== calls memcmp.
  static bool same(const SpecKey &a, const SpecKey &b) {
    return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0;
  }
  size_t slot(const SpecKey &key, uint64_t tag) const {
    const size_t mask = tags_.size() - 1;
    // Tags set their lowest bit: probes start from the bits above it (from tag & mask, they
    // only ever started at odd slots, as if the table were half as large).
    for (size_t i = (tag >> 1) & mask;; i = (i + 1) & mask)
      if (!tags_[i] || (tags_[i] == tag && same(slots_[i].key, key))) return i;
  }
  V *insert(const SpecKey &key) {
    if ((count_ + 1) * 2 > tags_.size()) grow();
    const uint64_t tag = tag_of(key);
    const size_t i = slot(key, tag);
    if (!tags_[i]) {
      tags_[i] = tag;
      slots_[i].key = key;
      ++count_;
    }
    return &slots_[i].value;
  }
  void grow() { rehash(tags_.empty() ? 1024 : tags_.size() * 2); }
  void rehash(size_t size) {
    ZeroedArray<uint64_t> old_tags = std::move(tags_);
    ZeroedArray<Slot> old_slots = std::move(slots_);
    tags_ = ZeroedArray<uint64_t>(size);
    slots_ = ZeroedArray<Slot>(size);
    for (size_t i = 0; i < old_tags.size(); ++i)
      if (old_tags[i]) {
        const size_t j = slot(old_slots[i].key, old_tags[i]);
        tags_[j] = old_tags[i];
        slots_[j] = old_slots[i];
      }
  }

  ZeroedArray<uint64_t> tags_;
  ZeroedArray<Slot> slots_;  // read only where the tag is set
  size_t count_ = 0;
};

}  // namespace tessel
