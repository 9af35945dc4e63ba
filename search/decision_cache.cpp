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
    warn_("damaged block", "ignoring a damaged block of " + store_->path() + " (" + why + ")");
  std::unique_lock<std::shared_mutex> lock(mutex_);
  for (const StoredEntry &e : entries) decisions_.emplace(e.key, e.decision);  // ours win
  loaded_.insert(id);
}

void DecisionCache::publish(const std::vector<StoredEntry> &entries) {
  if (entries.empty()) return;
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    for (const StoredEntry &e : entries) decisions_[e.key] = e.decision;
  }
  std::string error;
  if (store_ && !store_->read_only() && !store_->merge(entries, &error) && warn_)
    warn_("write", "could not save solved specs: " + error);
}

}  // namespace tessel
