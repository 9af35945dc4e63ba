#include "memo.h"

namespace tessel {

static uint64_t tag_of(const SpecKey &key) {
  return key_hash(key) | 1;
}  // never 0

size_t InMemoryMemo::find(const SpecKey &key, uint64_t tag) const {
  const size_t mask = tags_.size() - 1;
  for (size_t i = tag & mask;; i = (i + 1) & mask)
    if (!tags_[i] || (tags_[i] == tag && slots_[i].key == key)) return i;
}

bool InMemoryMemo::get(const Spec &s, MemoEntry *out) {
  if (tags_.empty()) return false;
  const SpecKey key = spec_key(s);
  const size_t i = find(key, tag_of(key));
  if (!tags_[i]) return false;
  *out = slots_[i].entry;
  return true;
}

void InMemoryMemo::put(const Spec &s, const MemoEntry &e) {
  if ((count_ + 1) * 2 > tags_.size()) grow();
  const SpecKey key = spec_key(s);
  const uint64_t tag = tag_of(key);
  const size_t i = find(key, tag);
  if (!tags_[i]) {
    tags_[i] = tag;
    slots_[i].key = key;
    ++count_;
  }
  slots_[i].entry = e;
}

void InMemoryMemo::grow() {
  std::vector<uint64_t> old_tags = std::move(tags_);
  std::vector<Slot> old_slots = std::move(slots_);
  const size_t size = old_tags.empty() ? 1024 : old_tags.size() * 2;
  tags_.assign(size, 0);
  slots_.assign(size, Slot{});
  for (size_t i = 0; i < old_tags.size(); ++i)
    if (old_tags[i]) {
      const size_t j = find(old_slots[i].key, old_tags[i]);
      tags_[j] = old_tags[i];
      slots_[j] = old_slots[i];
    }
}

}  // namespace tessel
