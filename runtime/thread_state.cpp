#include "thread_state.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace tessel::runtime {

// Read with the initial-exec TLS model: one %fs-relative load, where the default model for a
// shared library calls __tls_get_addr and makes the caller save its arguments around the
// call (a repeated 4x4x4 call 13.3 -> 11.5 ns, 8x8x8 20.7 -> 19). The price: the library
// is marked STATIC_TLS, so when it is loaded with dlopen (Python's ctypes, FlexiBLAS) its
// whole thread-local block must fit in the few hundred bytes of static TLS that glibc keeps
// spare (glibc.rtld.optional_static_tls, 512 by default), or dlopen fails with "cannot
// allocate memory in static TLS block". Hence every large per-thread object of the library is
// a ThreadHeap (search/thread_heap.h), and tests/dlopen_test.c checks that the block of each
// library stays within 256 bytes. TLS descriptors (-mtls-dialect=gnu2) would avoid the
// marking, but a glibc without the fix for bug 31372 (2.40; Debian 12 has 2.36) may clobber
// vector registers on their dlopen'ed path.
[[gnu::tls_model("initial-exec")]] constinit thread_local ThreadState *t_thread_state = nullptr;

namespace {

// Every thread's state, for all_hits(). Leaked on purpose: threads may exit after static
// destructors ran.
struct AllStates {
  std::mutex mutex;
  std::vector<const ThreadState *> live;
  int64_t exited_hits = 0;
};
AllStates &all_states() {
  static AllStates *all = new AllStates;
  return *all;
}

// Frees the thread's state when the thread exits. A call made later still (from another
// thread_local's destructor) gets a fresh state, which is leaked: the destructor of an
// object that already ran is not registered again.
struct StateOwner {
  bool active = false;
  ~StateOwner() {
    ThreadState *state = std::exchange(t_thread_state, nullptr);
    if (!state) return;
    {
      AllStates &all = all_states();
      std::lock_guard<std::mutex> lock(all.mutex);
      std::erase(all.live, state);
      all.exited_hits += state->hits();
    }
    delete state;
  }
};
thread_local StateOwner t_owner;

}  // namespace

ThreadState &ThreadState::create() {
  auto state = std::make_unique<ThreadState>();
  {
    AllStates &all = all_states();
    std::lock_guard<std::mutex> lock(all.mutex);
    all.live.push_back(state.get());
  }
  t_owner.active = true;  // the first use registers the owner's destructor for this thread
  t_thread_state = state.release();
  return *t_thread_state;
}

int64_t ThreadState::all_hits() {
  AllStates &all = all_states();
  std::lock_guard<std::mutex> lock(all.mutex);
  int64_t sum = all.exited_hits;
  for (const ThreadState *state : all.live) sum += state->hits();
  return sum;
}

void *ThreadState::Buffer::grow(int64_t bytes) {
  const int64_t rounded = (bytes + 4095) / 4096 * 4096;
  void *p = std::aligned_alloc(64, static_cast<size_t>(rounded));
  if (!p) throw std::bad_alloc();
  memory_.reset(p);
  capacity_ = rounded;
  return p;
}

std::shared_ptr<const CompiledKernel> RecentKernels::remember(
    const std::shared_ptr<const CompiledKernel> &k) {
  for (const auto &held : kernels_)
    if (held == k) return nullptr;
  std::shared_ptr<const CompiledKernel> dropped = std::move(kernels_.back());
  std::move_backward(kernels_.begin(), kernels_.end() - 1, kernels_.end());
  kernels_[0] = k;
  return dropped;
}

}  // namespace tessel::runtime
