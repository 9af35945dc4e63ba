// runtime/team.h: every iteration exactly once, from many callers at once, with or without
// helpers, and a failing iteration reported to its caller.
#include <doctest/doctest.h>

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "team.h"

namespace {

using tessel::runtime::Team;

// Counts how often each iteration ran, and how many ran off the calling thread.
struct Tally {
  explicit Tally(int64_t n) : runs(std::make_unique<std::atomic<int>[]>(n)), n(n) {}
  std::unique_ptr<std::atomic<int>[]> runs;
  int64_t n;
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> off_caller{0};
  double work_us = 0;

  static void body(void *context, int64_t i) {
    Tally &t = *static_cast<Tally *>(context);
    t.runs[i].fetch_add(1, std::memory_order_relaxed);
    if (std::this_thread::get_id() != t.caller) t.off_caller.fetch_add(1);
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(t.work_us);
    while (std::chrono::steady_clock::now() < end) {
    }
  }
  bool each_once() const {
    for (int64_t i = 0; i < n; ++i)
      if (runs[i].load() != 1) return false;
    return true;
  }
};

TEST_CASE("a team runs each iteration exactly once, and its helpers take some") {
  Team &team = Team::of(2);
  bool helped = false;
  // A oneTBB worker exists wherever oneTBB may use two cores, and must show up within seconds
  // even on a loaded machine; each call is checked meanwhile.
  const bool has_worker = tbb::info::default_concurrency() >= 2;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int call = 0; call < 200 || (has_worker && !helped); ++call) {
    Tally tally(1 + call % 9);
    tally.work_us = 20;
    team.run(tally.n, &Tally::body, &tally);
    REQUIRE(tally.each_once());
    helped = helped || tally.off_caller.load() > 0;
    if (std::chrono::steady_clock::now() > give_up) break;
  }
  if (has_worker) CHECK(helped);
}

TEST_CASE("many callers share a team, and calls from inside oneTBB tasks finish") {
  Team &team = Team::of(2);
  std::atomic<int> wrong{0};
  auto calls = [&](int seed) {
    for (int call = 0; call < 50; ++call) {
      Tally tally(1 + (seed + call) % 7);
      team.run(tally.n, &Tally::body, &tally);
      if (!tally.each_once()) ++wrong;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back(calls, t);
  for (auto &th : threads) th.join();
  // Calls from the application's own oneTBB loop, whose tasks hold the workers: they finish
  // whether a helper comes or not.
  tbb::parallel_for(0, 16, [&](int i) { calls(100 + i); });
  CHECK(wrong == 0);
}

TEST_CASE("a helper late for a loop never runs a later loop's iterations with it") {
  // Back-to-back loops without work: a helper that read one loop's body and context while the
  // caller finished it alone must not claim the next loop's iterations for them. Each loop
  // has its own tally, checked after all ran (a stale claim would run an old one twice).
  Team &team = Team::of(2);
  std::vector<std::unique_ptr<Tally>> tallies;
  for (int call = 0; call < 100000; ++call) {
    tallies.push_back(std::make_unique<Tally>(2 + call % 3));
    team.run(tallies.back()->n, &Tally::body, tallies.back().get());
  }
  int wrong = 0;
  for (const auto &t : tallies) wrong += !t->each_once();
  CHECK(wrong == 0);
  CHECK_THROWS_AS(team.run(70000, &Tally::body, tallies.front().get()), std::invalid_argument);
}

TEST_CASE("an iteration's exception reaches the caller after every other iteration ran") {
  Team &team = Team::of(2);
  struct Failing {
    std::atomic<int> ran{0};
    static void body(void *context, int64_t i) {
      static_cast<Failing *>(context)->ran.fetch_add(1);
      if (i == 3) throw std::runtime_error("iteration 3");
    }
  } failing;
  CHECK_THROWS_WITH(team.run(8, &Failing::body, &failing), "iteration 3");
  CHECK(failing.ran == 8);
  Tally after(5);  // the team still works
  team.run(after.n, &Tally::body, &after);
  CHECK(after.each_once());
}

}  // namespace
