// DecisionCache: the decisions this process knows, shared by all its compiling threads.
//
// A block is read from the store the first time one of its specs is asked for, then served
// from memory; decisions solved here are added and written to the store, either at once or
// by a background MemoWriter's thread. Without a store (database off or unusable) it is a
// plain in-memory table.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "key_table.h"
#include "memo_block.h"
#include "memo_store.h"
#include "memo_writer.h"

namespace tessel {

class DecisionCache {
 public:
  // `warn` hears about damaged blocks and failed writes, by topic (the caller decides how
  // often to say so). `store` may be null, and must outlive the cache.
  using Warn = std::function<void(const char *topic, const std::string &message)>;
  // `background_writes`: merge into the store from a MemoWriter thread rather than in
  // publish().
  explicit DecisionCache(MemoStore *store, Warn warn = nullptr, bool background_writes = false);

  // The decision stored for a canonical spec's key. `reread`: when the key's block was read
  // before without it, read the block again (another process may have written it since).
  bool find(const SpecKey &key, Decision *out, bool reread = false);
  // The plan record of a top-level spec, if the store has an intact one (replay_plan in
  // plan.h rebuilds the plan from it without reading a block).
  bool read_plan(const SpecKey &root, PlanRecord *out);
  // Adds decisions solved by this process, and merges them into the store with the plan
  // record of the top-level spec they were solved for (if given). With background writes,
  // both happen on the writer's thread, a little later (flush() waits for them).
  void publish(std::span<const StoredEntry> entries, const PlanRecord *plan = nullptr);

  // Returns once every decision published so far is in the table and the store (or failed
  // to be written).
  void flush();

  MemoStore *store() const { return store_; }

  // The most decisions the table holds (make_room): 256 MiB at most. Searches running at
  // once need theirs together: at 2^19 (64 MiB) sixteen threads over a database of a few
  // thousand shapes restarted the table again and again, each time reading blocks anew
  // (a test of theirs took 16 s instead of 0.9).
  static constexpr size_t kMaxDecisions = size_t{1} << 21;

  // Listing the store costs about as much as a query for one block per this many of its bytes
  // (file and log); a store up to kListAtOnceBytes is listed at the first block asked for.
  static constexpr int64_t kListBytesPerQuery = 2048;
  static constexpr int64_t kListAtOnceBytes = 512 << 10;

 private:
  void load_block(const BlockId &id);
  // Whether the store is known not to hold block `id`, from a list of the blocks it holds. A
  // cold 1000^3 asks for ~10k blocks, most of them absent, at ~6.5 us a query: 65 ms of its
  // first call over a store of 1.6 MiB, which lists in 6 ms (12.5k blocks). Listing costs
  // with the store's size, so a store is listed once the blocks asked for one by one would
  // have cost about as much (kListBytesPerQuery), at once when it is small (kListAtOnceBytes,
  // a first run's, say). A list lasts kListLife: blocks other processes write are seen at the
  // next listing; a reread asks the store at once.
  bool unlisted(const BlockId &id);
  // Puts decisions solved here in the table (they win over the store's).
  void absorb(std::span<const StoredEntry> entries);
  // With the lock held, before `incoming` decisions go in: past kMaxDecisions the table
  // starts over, in the memory it has. What the store holds is read again as searches ask
  // for it; without a store, later searches solve again what they need. A process meeting
  // ever new shapes would otherwise keep every decision it ever saw.
  void make_room(size_t incoming);

  MemoStore *store_;
  Warn warn_;
  std::shared_mutex mutex_;
  KeyTable<Decision> decisions_;
  std::unordered_set<BlockId, BlockIdHash> loaded_;

  // A list serves one search or so: a long-lived process lists again after this long.
  static constexpr std::chrono::seconds kListLife{1};
  std::mutex list_mutex_;  // guards the rest
  bool period_started_ = false;
  std::chrono::steady_clock::time_point period_start_;  // of the list, or of the queries
  int64_t queries_left_ = 0;                            // single-block queries before listing
  bool list_tried_ = false;
  bool listed_ = false;  // list_ holds every block of the store as of period_start_
  std::vector<BlockId, ZeroedAllocator<BlockId>> list_;  // sorted
  std::unique_ptr<MemoWriter> writer_;  // destroyed first: it writes what is pending
};

}  // namespace tessel
