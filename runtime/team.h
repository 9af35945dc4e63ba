// The threads that run a parallel kernel's iterations: the calling thread and up to T - 1
// helpers, tasks on oneTBB's workers in an arena of T slots (one team per thread count).
//
// oneTBB's parallel_for took 0.7-1 us beyond the work to start a worker and join it, and up
// to 3 us when the caller slept in its join: a third of a 64^3 product on two threads.
// Here a helper that ran an iteration stays on its worker, polling for the next loop, for
// `kHelperPatience` before it returns the worker to oneTBB, so back-to-back calls find it
// ready; the caller waits for the last iteration by spinning, as it is about to need it.
//
// Nothing waits for a helper to arrive: the caller claims iterations too, one at a time from
// the front (helpers from the back), until none is left, and then waits only for iterations
// a running helper claimed. So a call finishes even when every oneTBB worker is busy
// elsewhere (a call from inside the application's own oneTBB tasks), on its own thread then.
// The helpers serve one caller's loop at a time: callers that find the team busy run theirs
// alone, as the cores are taken anyway.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>

#include <oneapi/tbb/task_arena.h>

namespace tessel::runtime {

class Team {
 public:
  using Body = void (*)(void *context, int64_t iteration);

  // The team of `threads` threads; lives until the process ends (a helper may still be
  // polling on a worker when static destructors run).
  static Team &of(int threads);

  // Runs body(context, i) for every i in [0, iterations), each exactly once, on this thread
  // and whichever helpers join; returns when all have run. Iterations past 65535 are an
  // std::invalid_argument. A caller that finds the team busy with another caller's loop runs
  // its own alone.
  void run(int64_t iterations, Body body, void *context);

 private:
  struct HelperTask;

  explicit Team(int threads);
  void enlist_helpers();
  void help();
  // The next unclaimed iteration of the loop of generation `generation`, from the front or the
  // back, or -1 when none is left or that loop is over.
  int64_t claim(uint32_t generation, bool from_front);
  // Claims and runs iterations of that loop until none is left.
  void claim_all(uint32_t generation, Body body, void *context, bool from_front);
  void run_iteration(Body body, void *context, int64_t i);

  const int threads_;
  tbb::task_arena arena_;
  // The loop helpers may join, on one cache line that only its publication and the claims
  // write: a helper polling `state` gets body and context with it, one transfer between cores
  // (a mutex and a shared pointer to a loop object took four, 1.1-1.3 us per call).
  struct alignas(64) Published {
    // The generation (which loop: the high 32 bits) and its unclaimed iterations
    // [first, end): end in bits 16-31, first in bits 0-15. The caller claims from the front,
    // helpers from the back, so that with two threads each takes the same ones call after
    // call, and finds its tiles' operands in its own caches, as far as they fit there.
    std::atomic<uint64_t> state{0};
    std::atomic<Body> body{nullptr};
    std::atomic<void *> context{nullptr};
  } published_;
  alignas(64) std::atomic<int64_t> done_{0};  // iterations of the published loop run
  std::atomic<bool> failed_{false};
  std::exception_ptr failure_;  // the first failure's, written by the thread that set failed_
  alignas(64) std::atomic<bool> in_use_{false};  // a caller's loop is published
  std::atomic<int> helpers_{0};                  // helper tasks queued or polling
};

}  // namespace tessel::runtime
