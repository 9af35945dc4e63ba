#include "decision_cache.h"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace tessel {

DecisionCache::DecisionCache(MemoStore *store, Warn warn, bool background_writes)
    : store_(store), warn_(std::move(warn)) {
  if (store_ && !store_->read_only() && background_writes)
    writer_ = std::make_unique<MemoWriter>(
        *store_,
        [this](const std::string &error) {
          if (warn_) warn_("write", "could not save solved specs: " + error);
        },
        [this](std::span<const StoredEntry> entries) { absorb(entries); });
}

void DecisionCache::flush() {
  if (writer_) writer_->flush();
}

bool DecisionCache::find(const SpecKey &key, Decision *out, bool reread) {
  const BlockId id = block_of(key);
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    if (const Decision *d = decisions_.find(key)) {
      *out = *d;
      return true;
    }
    if (!store_ || (loaded_.count(id) && !reread)) return false;
  }
  if (!reread && unlisted(id)) return false;
  load_block(id);
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const Decision *d = decisions_.find(key);
  if (d) *out = *d;
  return d != nullptr;
}

bool DecisionCache::unlisted(const BlockId &id) {
  std::lock_guard<std::mutex> lock(list_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!period_started_ || now - period_start_ > kListLife) {
    period_started_ = true;
    period_start_ = now;
    const int64_t bytes = store_->file_bytes();
    queries_left_ = bytes <= kListAtOnceBytes ? 0 : bytes / kListBytesPerQuery;
    list_tried_ = listed_ = false;
    list_.clear();
  }
  if (!list_tried_ && queries_left_-- <= 0) {
    list_tried_ = true;
    period_start_ = now;
    std::string error;
    listed_ = store_->for_each_block_id([&](const BlockId &b) { list_.push_back(b); }, &error);
    std::sort(list_.begin(), list_.end());
  }
  return listed_ && !std::binary_search(list_.begin(), list_.end(), id);
}

void DecisionCache::load_block(const BlockId &id) {
  // Read outside the lock: other threads keep finding decisions meanwhile. Two threads may
  // read the same block; the second insert changes nothing.
  std::vector<StoredEntry> entries;
  std::string why;
  const MemoStore::Read r = store_->read_block(id, &entries, &why);
  if (r == MemoStore::Read::Damaged && warn_)
    warn_("damaged", "ignoring a damaged block of " + store_->path() + " (" + why + ")");
  std::unique_lock<std::shared_mutex> lock(mutex_);
  make_room(entries.size());
  decisions_.reserve(decisions_.size() + entries.size());
  // Ours win over the store's; among the store's, the latest part's.
  for (auto e = entries.rbegin(); e != entries.rend(); ++e) decisions_.put_new(e->key, e->decision);
  loaded_.insert(id);
}

bool DecisionCache::read_plan(const SpecKey &root, PlanRecord *out) {
  if (!store_) return false;
  std::string why;
  const MemoStore::Read r = store_->read_plan(root, out, &why);
  if (r == MemoStore::Read::Damaged && warn_)
    warn_("damaged", "ignoring a damaged plan record of " + store_->path() + " (" + why + ")");
  return r == MemoStore::Read::Found;
}

void DecisionCache::absorb(std::span<const StoredEntry> entries) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  make_room(entries.size());
  decisions_.reserve(decisions_.size() + entries.size());
  for (const StoredEntry &e : entries) decisions_.put(e.key, e.decision);
}

void DecisionCache::make_room(size_t incoming) {
  if (decisions_.size() + incoming <= kMaxDecisions) return;
  decisions_.clear();
  loaded_.clear();
}

void DecisionCache::publish(std::span<const StoredEntry> entries, const PlanRecord *plan) {
  if (entries.empty() && !plan) return;
  // With a writer, the table takes the decisions on the writer's thread too: inserting a
  // cold 1000^3's ~55k entries (a fresh table of several MiB, faulted in page by page) took
  // 3-33 ms of its first call. Until then another thread's search may solve them again, and
  // this thread's own memo has them anyway.
  if (writer_) {
    writer_->add(entries, plan);
    return;
  }
  absorb(entries);
  if (!store_ || store_->read_only()) return;
  std::string error;
  std::vector<PlanRecord> plans;
  if (plan) plans.push_back(*plan);
  if (!store_->merge(entries, plans, &error) && warn_)
    warn_("write", "could not save solved specs: " + error);
}

}  // namespace tessel
