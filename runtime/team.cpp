#include "team.h"

#include <immintrin.h>

#include <chrono>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace tessel::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How long a helper polls for the next loop before it gives its worker back to oneTBB: long
// enough for an inference loop's next product (a few microseconds of other work between
// calls), short against a server's idle time. OpenMP runtimes spin far longer by default
// (LLVM's libomp 200 ms).
constexpr auto kHelperPatience = std::chrono::microseconds(50);

// How long the caller spins for the last iterations before it yields its core: a helper
// preempted on a busy machine must not be waited for at full power.
constexpr auto kCallerPatience = std::chrono::microseconds(20);

// Iterations a loop may have: first and end of its unclaimed range take 16 bits each.
constexpr int64_t kMaxIterations = 0xffff;

// One PAUSE between polls of a line the other thread writes. A PAUSE takes 25 ns on the Zen 4
// VM: polling after eight of them (200 ns) made a helper see a new loop, and the caller see
// the loop done, ~0.1 us later each on average (perf/fork_join, two threads: 0.38-0.40 us
// beyond the work with eight, 0.20-0.24 with one).
void pause() {
  _mm_pause();
}

}  // namespace

// What oneTBB runs on a worker to make it a helper. The caller writes `team` before oneTBB
// hands the task over, which ThreadSanitizer cannot see (tests/tsan.supp names this).
struct Team::HelperTask {
  Team *team;
  void operator()() const { team->help(); }
};

Team &Team::of(int threads) {
  // Every parallel call looks its team up: a lock only to make one.
  static std::atomic<Team *> teams[256];
  std::atomic<Team *> &slot = teams[threads & 255];
  if (Team *team = slot.load(std::memory_order_acquire)) return *team;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  Team *team = slot.load(std::memory_order_relaxed);
  if (!team) {
    team = new Team(threads);  // never deleted (see the header)
    slot.store(team, std::memory_order_release);
  }
  return *team;
}

Team::Team(int threads) : threads_(threads), arena_(threads) {}

void Team::run(int64_t iterations, Body body, void *context) {
  if (iterations < 0 || iterations > kMaxIterations)  // a grid has at most 4 tiles per thread
    throw std::invalid_argument("tessel: a parallel loop of " + std::to_string(iterations) +
                                " iterations");
  if (threads_ == 1 || iterations <= 1 || in_use_.exchange(true, std::memory_order_acquire)) {
    std::exception_ptr failure;
    for (int64_t i = 0; i < iterations; ++i) try {
        body(context, i);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    if (failure) std::rethrow_exception(failure);
    return;
  }
  // The previous loop's threads are done with these: the caller that owned it saw them all.
  done_.store(0, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  failure_ = nullptr;
  published_.body.store(body, std::memory_order_relaxed);
  published_.context.store(context, std::memory_order_relaxed);
  // Only the owning caller changes the generation; it publishes iteration 0 as its own.
  const uint32_t generation =
      static_cast<uint32_t>(published_.state.load(std::memory_order_relaxed) >> 32) + 1;
  published_.state.store(uint64_t{generation} << 32 | static_cast<uint64_t>(iterations) << 16 | 1);
  enlist_helpers();  // after publishing: see help()
  run_iteration(body, context, 0);
  claim_all(generation, body, context, true);
  const auto start = Clock::now();
  while (done_.load(std::memory_order_acquire) < iterations) {
    if (Clock::now() - start < kCallerPatience)
      pause();
    else
      std::this_thread::yield();
  }
  const std::exception_ptr failure = failure_;  // set only by the first failure
  in_use_.store(false, std::memory_order_release);
  if (failure) std::rethrow_exception(failure);
}

int64_t Team::claim(uint32_t generation, bool from_front) {
  uint64_t state = published_.state.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t first = state & 0xffff, end = state >> 16 & 0xffff;
    if (state >> 32 != generation || first >= end) return -1;
    const uint64_t rest = from_front ? state + 1 : state - (uint64_t{1} << 16);
    // Acquire-release: a helper's reads of body and context come before its claim, and so
    // before the owner, seeing the loop done, publishes the next one over them.
    if (published_.state.compare_exchange_weak(state, rest, std::memory_order_acq_rel,
                                               std::memory_order_relaxed))
      return static_cast<int64_t>(from_front ? first : end - 1);
  }
}

void Team::claim_all(uint32_t generation, Body body, void *context, bool from_front) {
  for (int64_t i; (i = claim(generation, from_front)) >= 0;) run_iteration(body, context, i);
}

// Catches what an iteration throws (a workspace it could not allocate): it must not leave a
// oneTBB task, and the caller must still see the iteration done.
void Team::run_iteration(Body body, void *context, int64_t i) {
  try {
    body(context, i);
  } catch (...) {
    if (!failed_.exchange(true, std::memory_order_relaxed)) failure_ = std::current_exception();
  }
  done_.fetch_add(1, std::memory_order_release);
}

void Team::enlist_helpers() {
  for (int count = helpers_.load(); count < threads_ - 1;) {
    if (helpers_.compare_exchange_weak(count, count + 1)) {
      try {
        arena_.enqueue(HelperTask{this});
      } catch (...) {  // out of memory: the loop, published already, runs without this helper
        helpers_.fetch_sub(1);
        return;
      }
      ++count;
    }
  }
}

void Team::help() {
  uint32_t seen = 0;  // none yet: the loop published when this helper was enlisted is new
  auto idle_since = Clock::now();
  for (;;) {
    const uint64_t state = published_.state.load(std::memory_order_acquire);
    const auto generation = static_cast<uint32_t>(state >> 32);
    if (generation != seen) {
      seen = generation;
      // Read with the generation they were published with, or (the loop over) a later
      // one's, which claim() then refuses.
      claim_all(generation, published_.body.load(std::memory_order_relaxed),
                published_.context.load(std::memory_order_relaxed), false);
      idle_since = Clock::now();
    } else if (Clock::now() - idle_since < kHelperPatience) {
      pause();
    } else {
      // Leaving. A caller that published after the look above may have counted this helper
      // and enlisted none: publishing before counting, and uncounting before looking again
      // (all sequentially consistent), one of the two sees the other.
      helpers_.fetch_sub(1);
      if (published_.state.load() >> 32 == seen) return;
      int count = helpers_.load();
      do {
        if (count >= threads_ - 1) return;  // another helper took this one's place
      } while (!helpers_.compare_exchange_weak(count, count + 1));
    }
  }
}

}  // namespace tessel::runtime
