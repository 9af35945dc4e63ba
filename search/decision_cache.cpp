#include "decision_cache.h"

#include <mutex>

namespace tessel {

DecisionCache::DecisionCache(MemoStore *store, Warn warn) : store_(store), warn_(std::move(warn)) {}

bool DecisionCache::find(const SpecKey &key, Decision *out, bool reread) {
  const BlockId id = block_of(key);
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const auto it = decisions_.find(key);
    if (it != decisions_.end()) {
      *out = it->second;
      return true;
    }
    if (!store_ || (loaded_.count(id) && !reread)) return false;
  }
  load_block(id);
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const auto it = decisions_.find(key);
  if (it == decisions_.end()) return false;
  *out = it->second;
  return true;
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
  for (const StoredEntry &e : entries) decisions_.emplace(e.key, e.decision);  // ours win
  loaded_.insert(id);
}

bool DecisionCache::prefetch_plan(const SpecKey &root) {
  if (!store_) return false;
  PlanRecord record;
  std::string why;
  const MemoStore::Read r = store_->read_plan(root, &record, &why);
  if (r == MemoStore::Read::Damaged && warn_)
    warn_("damaged", "ignoring a damaged plan record of " + store_->path() + " (" + why + ")");
  if (r != MemoStore::Read::Found) return false;
  std::unique_lock<std::shared_mutex> lock(mutex_);
  for (const StoredEntry &e : record.decisions) decisions_.emplace(e.key, e.decision);
  return true;
}

void DecisionCache::publish(const std::vector<StoredEntry> &entries, const PlanRecord *plan) {
  if (entries.empty() && !plan) return;
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    for (const StoredEntry &e : entries) decisions_[e.key] = e.decision;
  }
  std::string error;
  std::vector<PlanRecord> plans;
  if (plan) plans.push_back(*plan);
  if (store_ && !store_->read_only() && !store_->merge(entries, plans, &error) && warn_)
    warn_("write", "could not save solved specs: " + error);
}

}  // namespace tessel
