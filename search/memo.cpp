#include "memo.h"

namespace tessel {

static uint64_t key_hash(const SpecKey &key) {
  uint64_t h = 0;
  for (uint64_t w : key) {
    uint64_t z = h + w + 0x9e3779b97f4a7c15ull;  // splitmix64 finalizer per word
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    h = z ^ (z >> 31);
  }
  return h;
}

size_t InMemoryMemo::find(const SpecKey &key, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask)
    if (!slots_[i].used || slots_[i].key == key) return i;
}

bool InMemoryMemo::get(const Spec &s, MemoEntry *out) {
  if (slots_.empty()) return false;
  const SpecKey key = spec_key(s);
  const Slot &slot = slots_[find(key, key_hash(key))];
  if (!slot.used) return false;
  *out = slot.entry;
  return true;
}

void InMemoryMemo::put(const Spec &s, const MemoEntry &e) {
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const SpecKey key = spec_key(s);
  Slot &slot = slots_[find(key, key_hash(key))];
  if (!slot.used) {
    slot.used = true;
    slot.key = key;
    ++count_;
  }
  slot.entry = e;
}

void InMemoryMemo::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  for (Slot &slot : old)
    if (slot.used) slots_[find(slot.key, key_hash(slot.key))] = std::move(slot);
}

}  // namespace tessel
