#include "team.h"

#include <immintrin.h>

#include <chrono>
#include <exception>
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

void pause() {
  for (int i = 0; i < 8; ++i) _mm_pause();
}

}  // namespace

struct Team::Loop {
  Loop(Body body, void *context, int64_t iterations)
      : body(body),
        context(context),
        iterations(iterations),
        unclaimed(static_cast<uint64_t>(iterations) << 32) {}

  const Body body;
  void *const context;
  const int64_t iterations;
  // The iterations not claimed yet, [first, end): the caller claims from the front, helpers
  // from the back, so that with two threads each takes the same ones call after call, and
  // finds its tiles' operands in its own caches, as far as they fit there.
  std::atomic<uint64_t> unclaimed;  // first in the low 32 bits, end in the high 32
  std::atomic<int64_t> done{0};     // iterations run (or failed)
  std::atomic<bool> failed{false};
  std::exception_ptr failure;  // the first failure's, written by the thread that set `failed`

  // The next unclaimed iteration from the front or the back, or -1 when none is left.
  int64_t claim(bool from_front) {
    uint64_t range = unclaimed.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t first = range & 0xffffffffu, end = range >> 32;
      if (first >= end) return -1;
      const uint64_t rest = from_front ? range + 1 : range - (uint64_t{1} << 32);
      if (unclaimed.compare_exchange_weak(range, rest, std::memory_order_relaxed))
        return static_cast<int64_t>(from_front ? first : end - 1);
    }
  }

  // Runs unclaimed iterations until none is left. Catches what an iteration throws (a
  // workspace it could not allocate): it must not leave a oneTBB task, and the caller must
  // still see the iteration done.
  void claim_all(bool from_front) {
    for (int64_t i; (i = claim(from_front)) >= 0;) {
      try {
        body(context, i);
      } catch (...) {
        if (!failed.exchange(true, std::memory_order_relaxed)) failure = std::current_exception();
      }
      done.fetch_add(1, std::memory_order_release);
    }
  }
  void wait_all() const {
    const auto start = Clock::now();
    while (done.load(std::memory_order_acquire) < iterations) {
      if (Clock::now() - start < kCallerPatience)
        pause();
      else
        std::this_thread::yield();
    }
  }
};

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
  if (iterations < 0 || iterations > 0xffffffff)  // a grid has at most 4 tiles per thread
    throw std::invalid_argument("tessel: a parallel loop of " + std::to_string(iterations) +
                                " iterations");
  auto loop = std::make_shared<Loop>(body, context, iterations);
  if (threads_ > 1 && iterations > 1) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      loop_ = loop;
    }
    published_.fetch_add(1);  // before counting helpers: see help()
    enlist_helpers();
  }
  loop->claim_all(true);
  loop->wait_all();
  if (loop->failed.load(std::memory_order_acquire)) std::rethrow_exception(loop->failure);
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
  uint64_t seen = 0;  // none yet: the loop published when this helper was enlisted is new
  auto idle_since = Clock::now();
  for (;;) {
    const uint64_t published = published_.load();
    if (published != seen) {
      seen = published;
      std::shared_ptr<Loop> loop;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        loop = loop_;
      }
      loop->claim_all(false);  // nothing left of an older loop that finished meanwhile
      idle_since = Clock::now();
    } else if (Clock::now() - idle_since < kHelperPatience) {
      pause();
    } else {
      // Leaving. A caller that published after the look above may have counted this helper
      // and enlisted none: publishing before counting, and uncounting before looking again
      // (all sequentially consistent), one of the two sees the other.
      helpers_.fetch_sub(1);
      if (published_.load() == seen) return;
      int count = helpers_.load();
      do {
        if (count >= threads_ - 1) return;  // another helper took this one's place
      } while (!helpers_.compare_exchange_weak(count, count + 1));
    }
  }
}

}  // namespace tessel::runtime
