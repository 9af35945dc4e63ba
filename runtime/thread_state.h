// What one thread keeps between its calls: the kernels it ran lately, its recent tessel_sgemm
// calls and its packing buffer. It all sits behind one thread-local pointer so that a call
// pays for one thread-local access (thread_state.cpp says why not a cheaper TLS model).
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
  // Puts `k` first unless it is already held; returns the kernel that fell off the end, if
  // any (the caller's copy may be its last reference).
  std::shared_ptr<const CompiledKernel> remember(const std::shared_ptr<const CompiledKernel> &k);

 private:
  std::array<std::shared_ptr<const CompiledKernel>, kSize> kernels_;
};

// A tessel_sgemm call of this thread that ran a kernel: its shape arguments exactly as passed
// (before any check or normalization), what beta and the thread count selected, and the
// kernel it ran. A call that repeats all of them would pass the same shape checks and find
// the same kernel, so it needs neither (capi.cpp). One cache line: a repeat reads no other.
struct alignas(64) RecentCall {
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  // Null when the slot is empty. Always one of the thread's recent kernels, which is what
  // keeps it alive: ThreadState::remember() empties the slots of a kernel that leaves them.
  const CompiledKernel *kernel = nullptr;
  // The enum arguments of a call that passed the checks, so each fits in 16 bits; compared
  // with the caller's full int, which then matches only if it is that same value.
  uint16_t layout = 0, trans_a = 0, trans_b = 0;
  uint8_t threads = 0;  // from 1 to 255
  bool accumulate = false;

  // Compares everything at once, without a branch per field: a repeated call takes every
  // branch anyway, so one test is cheaper than ten well-predicted ones.
  bool repeats(int layout_, int trans_a_, int trans_b_, int64_t m_, int64_t n_, int64_t k_,
               int64_t lda_, int64_t ldb_, int64_t ldc_, bool accumulate_, int threads_) const {
    const uint32_t enums = (uint32_t(layout_) ^ layout) | (uint32_t(trans_a_) ^ trans_a) |
                           (uint32_t(trans_b_) ^ trans_b) | (uint32_t(threads_) ^ threads) |
                           (uint32_t(accumulate_) ^ accumulate);
    const uint64_t sizes =
        uint64_t((m ^ m_) | (n ^ n_) | (k ^ k_) | (lda ^ lda_) | (ldb ^ ldb_) | (ldc ^ ldc_));
    return (sizes | enums) == 0;
  }
  // A column-major call: A and B trade places, and so do m and n (problem.h).
  bool swapped() const { return layout == TESSEL_COL_MAJOR; }
};
static_assert(sizeof(RecentCall) == 64);

// This thread's recent calls, one per slot of a small table indexed by m, n and k, so that a
// loop over a few shapes finds each call in its own slot (two that share a slot take turns,
// each then a full call). Eight slots, as many as the recent kernels that keep them alive.
class RecentCalls {
 public:
  static constexpr int kSlots = RecentKernels::kSize;
  RecentCall &slot(int64_t m, int64_t n, int64_t k) { return slots_[index(m, n, k)]; }
  void forget(const CompiledKernel *kernel) {
    for (RecentCall &call : slots_)
      if (call.kernel == kernel) call.kernel = nullptr;
  }

 private:
  static size_t index(int64_t m, int64_t n, int64_t k) {
    // Fibonacci hashing of the sizes summed with distinct weights, checked with a short
    // script: neighbouring cubes (1..64) never share a slot, and random shapes share slots
    // about as often as under a random placement.
    const uint64_t packed = uint64_t(m) + uint64_t(n) * 0x10001 + uint64_t(k) * 0x100000001;
    return (packed * 0x9e3779b97f4a7c15ull) >> 61;
  }
  static_assert(kSlots == 8, "index() keeps the top 3 bits");
  std::array<RecentCall, kSlots> slots_;
};

class ThreadState {
 public:
  // The calling thread's state, made on its first call.
  static ThreadState &get();

  const CompiledKernel *find_recent(const KernelKey &key) const { return recent_.find(key); }
  // Keeps `k` among the recent kernels (forgetting the calls that ran the kernel dropped).
  void remember(const std::shared_ptr<const CompiledKernel> &k) {
    const std::shared_ptr<const CompiledKernel> dropped = recent_.remember(k);
    if (dropped) recent_calls.forget(dropped.get());
  }

  RecentCalls recent_calls;

  // Counts a call this thread served from its recent kernels or its recent calls. Only this
  // thread writes the counter, so it needs no locked instruction: one shared counter would
  // bounce its cache line between all the cores that call.
  void count_hit() {
    hits_.store(hits_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  int64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  // Those hits summed over every thread of the process, running or exited.
  static int64_t all_hits();

  // This thread's packing buffer, at least `bytes` long and 64-byte aligned; grown on demand
  // and kept (a kernel's workspace is at most a few MiB: the search sizes packed blocks to
  // the caches).
  void *workspace(int64_t bytes) { return workspace_.get(bytes); }
  // The copies of C that a split of k run from this thread writes (other threads write them
  // too, before this one reads them): apart from the workspace, which this thread's own
  // part uses meanwhile.
  float *copies(int64_t floats) { return static_cast<float *>(copies_.get(4 * floats)); }

 private:
  static ThreadState &create();

  RecentKernels recent_;
  std::atomic<int64_t> hits_{0};  // atomic only because all_hits() reads it from elsewhere

  // 64-byte aligned memory that grows on demand and is kept.
  class Buffer {
   public:
    void *get(int64_t bytes) { return bytes <= capacity_ ? memory_.get() : grow(bytes); }

   private:
    void *grow(int64_t bytes);
    struct FreeDeleter {
      void operator()(void *p) const { std::free(p); }
    };
    std::unique_ptr<void, FreeDeleter> memory_;
    int64_t capacity_ = 0;
  };
  Buffer workspace_, copies_;
};

// constinit tells other translation units there is no dynamic initialization, so they read
// the pointer directly instead of calling a TLS wrapper function; initial-exec makes that
// read one instruction (thread_state.cpp says what it costs).
[[gnu::tls_model("initial-exec")]] extern constinit thread_local ThreadState *t_thread_state;

inline ThreadState &ThreadState::get() {
  ThreadState *s = t_thread_state;
  return s ? *s : create();
}

}  // namespace tessel::runtime
