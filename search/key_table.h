// KeyTable: a hash table from spec keys to values, by open addressing with linear probing.
// The solver's memo and the process's shared decisions both sit in the search's hottest loop
// (a lookup per child of every action tried) and hold millions of entries, so: no node per
// entry (one allocation per entry was most of the cost under ASan), and lookups that walk a
// dense array of 64-bit hash tags (eight to a cache line), touching a slot only when its tag
// matches. Tag 0 marks an empty slot.
//
// Keys are SpecKeys (the shared decisions, which the database keys on) or Specs themselves
// (the solver's memo: building a SpecKey for every child looked up was a tenth of a search,
// and a Spec's bytes identify it as well).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "spec.h"

namespace tessel {

// A Spec is its bytes: no padding, and no two representations of one value (so equal specs
// have equal bytes and the other way round).
static_assert(std::has_unique_object_representations_v<Spec>);

inline uint64_t table_hash(const SpecKey &key) {
  return key_hash(key);
}
inline bool table_same(const SpecKey &a, const SpecKey &b) {
  // Inline, where operator== calls memcmp.
  return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0;
}

// Word i of a spec's bytes (the last one zero-padded), for hashing and comparing. Loaded
// one word at a time with constant sizes, which compile to single loads.
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

// As key_hash: one multiply per word, then splitmix64's finalizer.
inline uint64_t table_hash(const Spec &s) {
  static constexpr uint64_t kMul[] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                                      0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull,
                                      0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull};
  static_assert(kSpecWords <= sizeof(kMul) / sizeof(kMul[0]));
  const std::array<uint64_t, kSpecWords> w = spec_words(s);
  uint64_t h = 0;
  for (size_t i = 0; i < kSpecWords; ++i) h = (h ^ w[i]) * kMul[i] + (h >> 29);
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}
inline bool table_same(const Spec &a, const Spec &b) {
  const std::array<uint64_t, kSpecWords> x = spec_words(a), y = spec_words(b);
  uint64_t diff = 0;
  for (size_t i = 0; i < kSpecWords; ++i) diff |= x[i] ^ y[i];
  return diff == 0;
}

template <class V, class K = SpecKey>
class KeyTable {
 public:
  const V *find(const K &key) const { return find(key, table_hash(key)); }
  // With `hash` = table_hash(key), for callers that look a key up more than once.
  const V *find(const K &key, uint64_t hash) const {
    if (tags_.empty()) return nullptr;
    const size_t i = slot(key, hash | 1);
    return tags_[i] ? &slots_[i].value : nullptr;
  }
  // Inserts or replaces.
  void put(const K &key, const V &value) { put(key, table_hash(key), value); }
  void put(const K &key, uint64_t hash, const V &value) { *insert(key, hash) = value; }
  // Inserts unless present; returns whether it did.
  bool put_new(const K &key, const V &value) {
    const size_t before = count_;
    V *v = insert(key, table_hash(key));
    if (count_ == before) return false;
    *v = value;
    return true;
  }
  size_t size() const { return count_; }
  // Starts loading what find(key, hash) reads first: the key's tag and slot.
  void prefetch(uint64_t hash) const {
    if (tags_.empty()) return;
    const size_t i = hash & (tags_.size() - 1);
    __builtin_prefetch(&tags_[i]);
    __builtin_prefetch(&slots_[i]);
    __builtin_prefetch(reinterpret_cast<const char *>(&slots_[i] + 1) - 1);
  }
  template <class F>
  void for_each(F &&f) const {
    for (size_t i = 0; i < tags_.size(); ++i)
      if (tags_[i]) f(slots_[i].key, slots_[i].value);
  }

 private:
  struct Slot {
    K key{};
    V value{};
  };
  size_t slot(const K &key, uint64_t tag) const {
    const size_t mask = tags_.size() - 1;
    for (size_t i = tag & mask;; i = (i + 1) & mask)
      if (!tags_[i] || (tags_[i] == tag && table_same(slots_[i].key, key))) return i;
  }
  V *insert(const K &key, uint64_t hash) {
    if ((count_ + 1) * 2 > tags_.size()) grow();
    const uint64_t tag = hash | 1;  // never 0
    const size_t i = slot(key, tag);
    if (!tags_[i]) {
      tags_[i] = tag;
      slots_[i].key = key;
      ++count_;
    }
    return &slots_[i].value;
  }
  void grow() {
    std::vector<uint64_t> old_tags = std::move(tags_);
    std::vector<Slot> old_slots = std::move(slots_);
    const size_t size = old_tags.empty() ? 1024 : old_tags.size() * 2;
    tags_.assign(size, 0);
    slots_.assign(size, Slot{});
    for (size_t i = 0; i < old_tags.size(); ++i)
      if (old_tags[i]) {
        const size_t j = slot(old_slots[i].key, old_tags[i]);
        tags_[j] = old_tags[i];
        slots_[j] = old_slots[i];
      }
  }

  std::vector<uint64_t> tags_;
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace tessel
