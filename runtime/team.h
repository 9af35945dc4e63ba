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
// elsewhere (a call from inside the application's own oneTBB tasks, or from many threads at
// once), on its own thread then.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include <oneapi/tbb/task_arena.h>

namespace tessel::runtime {

class Team {
 public:
  using Body = void (*)(void *context, int64_t iteration);

  // The team of `threads` threads; lives until the process ends (a helper may still be
  // polling on a worker when static destructors run).
  static Team &of(int threads);

  // Runs body(context, i) for every i in [0, iterations), each exactly once, on this thread
  // and whichever helpers join; returns when all have run.
  void run(int64_t iterations, Body body, void *context);

 private:
  struct Loop;
  struct HelperTask;

  explicit Team(int threads);
  void enlist_helpers();
  void help();

  const int threads_;
  tbb::task_arena arena_;
  std::mutex mutex_;                    // guards loop_
  std::shared_ptr<Loop> loop_;          // the latest loop published
  std::atomic<uint64_t> published_{0};  // how many loops were published
  std::atomic<int> helpers_{0};         // helper tasks queued or polling
};

}  // namespace tessel::runtime
