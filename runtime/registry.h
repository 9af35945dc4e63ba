// The kernel registry: key -> compiled kernel, shared by every thread of the process.
//
// A hit takes a shard's reader lock and one hash probe. A miss inserts a pending entry and
// compiles outside every lock; other threads asking for the same key wait on that entry
// (one search and one emission per key), while different keys compile in parallel.
// Bounded: past the capacity, each shard drops its oldest ready kernels (FIFO). A dropped
// kernel stays alive until its last user returns (shared ownership), so eviction never
// pulls code from under a running call.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "compiler.h"

namespace tessel::runtime {

class Registry {
 public:
  explicit Registry(size_t capacity);
  static Registry &instance();

  // The kernel for `key`, compiled on first request. `hit` tells whether it was resident.
  tessel_status get(const KernelKey &key, std::shared_ptr<const CompiledKernel> *out,
                    bool *hit = nullptr);
  // The kernel for `key` if this thread got it lately, without a lock or a reference count:
  // repeated small calls spend more in the lookup than in the kernel. The pointer stays
  // valid until this thread's next get() (each thread keeps its last few kernels alive).
  const CompiledKernel *recent(const KernelKey &key);

  // Hits include those served from threads' recent kernels, which are the process's, not
  // any one registry's (ThreadState counts them).
  struct Stats {
    int64_t kernels = 0, hits = 0, misses = 0, evictions = 0;
    double search_seconds = 0, emit_seconds = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    std::mutex mutex;
    std::condition_variable ready_cv;
    bool done = false;
    tessel_status status = TESSEL_OK;
    std::string error;
    std::shared_ptr<const CompiledKernel> kernel;
  };
  struct Shard {
    mutable std::shared_mutex mutex;
    std::unordered_map<KernelKey, std::shared_ptr<Entry>, KernelKeyHash> map;
    std::deque<KernelKey> order;  // insertion order, for eviction
  };
  static constexpr size_t kShards = 64;

  Shard &shard(const KernelKey &key) { return shards_[KernelKeyHash{}(key) % kShards]; }
  tessel_status get_shared(const KernelKey &key, std::shared_ptr<const CompiledKernel> *out,
                           bool *hit);
  void evict_if_full(Shard &s);

  size_t per_shard_capacity_;
  Shard shards_[kShards];
  std::atomic<int64_t> hits_{0}, misses_{0}, evictions_{0}, kernels_{0};
  std::atomic<int64_t> search_ns_{0}, emit_ns_{0};
};

}  // namespace tessel::runtime
