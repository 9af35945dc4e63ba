// A thread's state (runtime/thread_state.h).
#include <doctest/doctest.h>

#include <thread>

#include "thread_state.h"

namespace {

using tessel::runtime::ThreadState;

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
