#include "memo_table.h"

#include <bit>
#include <cstring>
#include <thread>

namespace tessel {

MemoTable::Cold MemoTable::read_cold(size_t i) const {
  ColdWords words;
  for (int w = 0; w < 4; ++w) words.w[w] = load(cold_[i].w[w]);
  return std::bit_cast<Cold>(words);
}

void MemoTable::back_off(int attempt) {
#if defined(__x86_64__) || defined(__i386__)
  if (attempt < 64) {
    __builtin_ia32_pause();
    return;
  }
#endif
  std::this_thread::yield();
}

void MemoTable::put(const Spec &s, uint64_t hash, const MemoEntry &e) {
  // Up to three quarters full: four in five lookups find an entry, and a table half the
  // size misses the caches less than probes of the fuller one cost (1000^3: -6%).
  if (full(size() + 1)) {
    // No helper joins while the table grows; those it stops may join again once it has.
    std::lock_guard<std::mutex> lock(helpers_mutex_);
    stop_helpers();  // also clears a request a helper made
    grow(hot_.empty() ? 1024 : hot_.size() * 2);
    growths_.fetch_add(1, std::memory_order_release);
    helper_may_join_.notify_all();
  }
  store_entry(s, hash, e);
}

void MemoTable::reserve(size_t entries) {
  size_t slots = hot_.empty() ? 1024 : hot_.size();
  while (entries * 4 > slots * 3) slots *= 2;
  if (slots > hot_.size()) grow(slots);
}

void MemoTable::clear() {
  hot_ = ZeroedArray<Hot>();
  cold_ = ZeroedArray<ColdWords>();
  mask_ = 0;
  count_.store(0, std::memory_order_relaxed);
}

void MemoTable::put_from_helper(const Spec &s, uint64_t hash, const MemoEntry &e) {
  if (full(size() + 1)) {
    // The owner grows the table once the helpers have stopped.
    stop_helpers_.store(true, std::memory_order_relaxed);
    if ((size() + 1) * 8 > hot_.size() * 7) return;
  }
  store_entry(s, hash, e);
}

void MemoTable::add_helper() {
  std::lock_guard<std::mutex> lock(helpers_mutex_);
  helping_ = true;
  helpers_.fetch_add(1, std::memory_order_relaxed);
}

bool MemoTable::rejoin(uint32_t growths) {
  // A growth takes up to ~100 ms (fresh pages): the helper sleeps through it.
  std::unique_lock<std::mutex> lock(helpers_mutex_);
  helper_may_join_.wait(
      lock, [&] { return !helping_ || growths_.load(std::memory_order_relaxed) != growths; });
  if (!helping_) return false;
  helpers_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void MemoTable::end_helpers() {
  std::lock_guard<std::mutex> lock(helpers_mutex_);
  helping_ = false;
  helper_may_join_.notify_all();
  stop_helpers();
}

void MemoTable::stop_helpers() {
  stop_helpers_.store(true, std::memory_order_relaxed);
  // A helper notices at its next spec and unwinds without touching the table again.
  for (int attempt = 0; helpers_.load(std::memory_order_acquire) > 0; ++attempt) back_off(attempt);
  stop_helpers_.store(false, std::memory_order_relaxed);
}

void MemoTable::store_entry(const Spec &s, uint64_t hash, const MemoEntry &e) {
  const uint64_t tag = hash | 1;
  for (size_t i = home(tag);; i = (i + 1) & mask_) {
    Hot &h = hot_[i];
    const auto other_spec = [&](uint64_t t) {
      return t != 0 && !(t == tag && same_spec(h.key, s));
    };
    if (other_spec(load(h.tag))) continue;  // a tag, once set, stays
    // Take the slot: its sequence number from even to odd.
    uint16_t seq = __atomic_load_n(&h.seq, __ATOMIC_RELAXED);
    for (int attempt = 0;
         (seq & 1) || !__atomic_compare_exchange_n(&h.seq, &seq, uint16_t(seq + 1), true,
                                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
         ++attempt) {
      back_off(attempt);
      seq = __atomic_load_n(&h.seq, __ATOMIC_RELAXED);
    }
    const uint64_t t = load(h.tag);
    if (other_spec(t)) {  // taken meanwhile
      __atomic_store_n(&h.seq, uint16_t(seq + 2), __ATOMIC_RELEASE);
      continue;
    }
    const uint8_t flags = load(h.flags);
    const double value = load(h.value);
    // Only improvements: an exact entry is never replaced (exact entries of one spec agree),
    // and a bound is replaced by a higher one, or an equal one that covers the target's.
    const bool improves =
        t == 0 || (!(flags & kExact) && (e.exact || e.lower_bound > value ||
                                         (e.lower_bound == value && e.covers_target_bound)));
    if (t == 0) {
      h.key = s;
      store(h.tag, tag);  // publishes the key
      count_.fetch_add(1, std::memory_order_relaxed);
    }
    if (improves) {
      store(h.flags, uint8_t((e.exact ? kExact : 0) | (e.solvable ? kSolvable : 0) |
                             (e.covers_target_bound ? kCovers : 0)));
      store(h.value, e.exact ? e.cost.cycles : e.lower_bound);
      const Cold c{e.action, e.cost.depth, e.cost.peak_bytes,
                   e.exact ? e.lower_bound : e.cost.cycles};
      const ColdWords cw = std::bit_cast<ColdWords>(c);
      for (int w = 0; w < 4; ++w) store(cold_[i].w[w], cw.w[w]);
    }
    __atomic_store_n(&h.seq, uint16_t(seq + 2), __ATOMIC_RELEASE);
    return;
  }
}

void MemoTable::grow(size_t slots) {
  // No helper uses the table (put stopped them): plain copies.
  ZeroedArray<Hot> old_hot = std::move(hot_);
  ZeroedArray<ColdWords> old_cold = std::move(cold_);
  hot_ = ZeroedArray<Hot>(slots);
  cold_ = ZeroedArray<ColdWords>(slots);
  mask_ = slots - 1;
  for (size_t i = 0; i < old_hot.size(); ++i)
    if (old_hot[i].tag) {
      size_t j = home(old_hot[i].tag);  // the specs are distinct: the first free slot
      while (hot_[j].tag) j = (j + 1) & mask_;
      hot_[j] = old_hot[i];  // its sequence number even: nobody writes now
      cold_[j] = old_cold[i];
    }
}

}  // namespace tessel
