// A thread's state (runtime/thread_state.h): its recent calls only ever point at kernels its
// recent kernels keep alive.
#include <doctest/doctest.h>

#include <memory>
#include <thread>
#include <vector>

#include "thread_state.h"

namespace {

using tessel::runtime::CompiledKernel;
using tessel::runtime::RecentCall;
using tessel::runtime::RecentKernels;
using tessel::runtime::ThreadState;

std::shared_ptr<const CompiledKernel> fake_kernel(int m) {
  auto k = std::make_shared<CompiledKernel>();  // never run: no code
  k->key.m = m;
  return k;
}

TEST_CASE("a kernel that leaves the recent kernels empties the calls that ran it, then dies") {
  // A thread of its own, so its state starts empty.
  std::thread([] {
    ThreadState &state = ThreadState::get();
    std::shared_ptr<const CompiledKernel> first = fake_kernel(1);
    const std::weak_ptr<const CompiledKernel> watch = first;
    state.remember(first);
    RecentCall &call = state.recent_calls.slot(5, 6, 7);
    call.m = 5, call.n = 6, call.k = 7;
    call.kernel = first.get();
    first.reset();
    std::vector<std::shared_ptr<const CompiledKernel>> others;
    for (int i = 2; i <= RecentKernels::kSize; ++i) {
      others.push_back(fake_kernel(i));
      state.remember(others.back());
      CHECK(call.kernel != nullptr);  // still among the recent ones, alive
      CHECK(!watch.expired());
    }
    state.remember(others.front());  // already held: nothing leaves
    CHECK(call.kernel != nullptr);
    others.push_back(fake_kernel(100));
    state.remember(others.back());  // the first kernel leaves
    CHECK(call.kernel == nullptr);
    CHECK(watch.expired());
    tessel::runtime::KernelKey key;
    key.m = 1;
    CHECK(state.find_recent(key) == nullptr);
    key.m = 100;
    CHECK(state.find_recent(key) == others.back().get());
  }).join();
}

TEST_CASE("a thread's state goes with the thread, and its hits stay counted") {
  const int64_t before = ThreadState::all_hits();
  std::thread([] {
    ThreadState &state = ThreadState::get();
    for (int i = 0; i < 5; ++i) state.count_hit();
    CHECK(state.hits() == 5);
  }).join();
  CHECK(ThreadState::all_hits() == before + 5);
}

}  // namespace
