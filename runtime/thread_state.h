// What one thread keeps between its calls: the kernels it ran lately and its packing buffer.
// It all sits behind one thread-local pointer so that a call pays for one thread-local access
// (thread_state.cpp says why not a cheaper TLS model).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "compiler.h"

namespace tessel::runtime {

// A thread's last few kernels, most recent first. Holding a reference to each is what lets
// this thread run them without a lock or a reference count while the registry may evict
// them at any time.
class RecentKernels {
 public:
  static constexpr int kSize = 8;
  const CompiledKernel *find(const KernelKey &key) const {
    for (const auto &k : kernels_)
      if (k && k->key == key) return k.get();
    return nullptr;
  }
  // Puts `k` first unless it is already held.
  void remember(const std::shared_ptr<const CompiledKernel> &k);

 private:
  std::array<std::shared_ptr<const CompiledKernel>, kSize> kernels_;
};

class ThreadState {
 public:
  // The calling thread's state, made on its first call.
  static ThreadState &get();

  const CompiledKernel *find_recent(const KernelKey &key) const { return recent_.find(key); }
  void remember(const std::shared_ptr<const CompiledKernel> &k) { recent_.remember(k); }

  // Counts a call this thread served from its recent kernels. Only this thread writes the
  // counter, so it needs no locked instruction: one shared counter would bounce its cache
  // line between all the cores that call.
  void count_hit() {
    hits_.store(hits_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  int64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  // Those hits summed over every thread of the process, running or exited.
  static int64_t all_hits();

  // This thread's packing buffer, at least `bytes` long and 64-byte aligned; grown on demand
  // and kept (a kernel's workspace is at most a few MiB: the search sizes packed blocks to
  // the caches).
  void *workspace(int64_t bytes) { return bytes <= capacity_ ? buffer_.get() : grow(bytes); }

 private:
  static ThreadState &create();
  void *grow(int64_t bytes);

  RecentKernels recent_;
  std::atomic<int64_t> hits_{0};  // atomic only because all_hits() reads it from elsewhere

  struct FreeDeleter {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, FreeDeleter> buffer_;
  int64_t capacity_ = 0;
};

// constinit tells other translation units there is no dynamic initialization, so they read
// the pointer directly instead of calling a TLS wrapper function.
extern constinit thread_local ThreadState *t_thread_state;

inline ThreadState &ThreadState::get() {
  ThreadState *s = t_thread_state;
  return s ? *s : create();
}

}  // namespace tessel::runtime
