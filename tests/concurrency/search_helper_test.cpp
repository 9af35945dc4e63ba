// A search with a helper thread on its memo table finds exactly the plan of a search alone,
// and the table stays consistent while two threads write it (the ThreadSanitizer build runs
// these).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "memo.h"
#include "plan.h"
#include "search_helper.h"
#include "solver.h"
#include "target.h"

namespace tessel {
namespace {

const Target &target() {
  static const Target t = avx2_target(HostCaches{});
  return t;
}

TEST_CASE("a helped search finds the plan a search alone finds") {
  struct Shape {
    int64_t m, n, k;
    int threads;
  };
  // Odd sizes (boundary sub-specs), a GEMV, and parallel roots.
  for (const Shape sh : {Shape{129, 129, 129, 1}, Shape{100, 72, 96, 1}, Shape{1, 2048, 96, 1},
                         Shape{96, 200, 120, 2}, Shape{257, 64, 70, 2}}) {
    CAPTURE(sh.m);
    CAPTURE(sh.n);
    CAPTURE(sh.k);
    const Spec spec =
        matmul_spec(sh.m, sh.n, sh.k, false, false, false, sh.threads, target().limits());
    REQUIRE(worth_a_helper(canonical(spec)));
    InMemoryMemo alone_memo, helped_memo;
    Solver alone(target(), alone_memo), helped(target(), helped_memo);
    Plan a, h;
    REQUIRE(build_plan(alone, spec, &a));
    REQUIRE(build_plan(helped, spec, &h, true));
    CHECK(h.cost == a.cost);
    CHECK(format_plan(h) == format_plan(a));
    // Every exact entry either thread stored is the optimum a search alone finds (solved
    // through the memo of the search alone, which has most of them already).
    helped_memo.for_each([&](const Spec &s, const MemoEntry &e) {
      if (!e.exact) return;
      const MemoEntry want = alone.solve(s);
      CHECK(want.solvable == e.solvable);
      if (want.solvable) CHECK(want.cost == e.cost);
    });
  }
}

TEST_CASE("a helper's exact results are handed back for publishing") {
  InMemoryMemo memo;
  Solver solver(target(), memo);
  const Spec root =
      canonical(matmul_spec(129, 129, 129, false, false, false, 1, target().limits()));
  SearchHelper helper(target(), memo.table(), root);
  REQUIRE(solver.solve(root).solvable);  // tens of milliseconds: the helper is under way
  const auto solved = helper.finish();
  CHECK_FALSE(solved.empty());
  for (const auto &[spec, entry] : solved) {
    MemoEntry e;
    REQUIRE(memo.get(spec, &e));
    CHECK(e.exact);
    CHECK(e.cost == entry.cost);
  }
}

TEST_CASE("small searches run without a helper") {
  CHECK_FALSE(worth_a_helper(canonical(matmul_spec(16, 16, 16, false, false, false, 1, {}))));
  CHECK(worth_a_helper(canonical(matmul_spec(64, 64, 64, false, false, false, 1, {}))));
}

// Distinct specs: m and n from the index.
Spec spec_at(int i) {
  Spec s = matmul_spec(1 + i % 97, 1 + i / 97, 8, false, false, false, 1, target().limits());
  return canonical(s);
}

MemoEntry bound_entry(double bound) {
  MemoEntry e;
  e.lower_bound = bound;
  e.covers_target_bound = true;
  return e;
}

MemoEntry exact_entry(double cycles) {
  MemoEntry e;
  e.exact = e.solvable = true;
  e.action = Action{ActionKind::Tile, 0, 0, 7, 0};
  e.cost = Cost{cycles, 64, 3};
  return e;
}

TEST_CASE("a helper goes on after each growth of the table it searches") {
  // Room for 1024 entries: a 129^3 search stores ~34k. Here the helper searches alone: the
  // owner only grows the table whenever the helper asks for it, so the root is solved only if
  // the helper goes on after each growth.
  InMemoryMemo memo;
  MemoTable &table = memo.table();
  const Spec root =
      canonical(matmul_spec(129, 129, 129, false, false, false, 1, target().limits()));
  const uint64_t hash = memo_hash(root);
  SearchHelper helper(target(), table, root, 1024);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  MemoEntry e;
  while (!(table.find(root, hash, &e) && e.exact) && std::chrono::steady_clock::now() < deadline)
    if (table.helpers_asked_to_stop())
      table.put(root, hash, MemoEntry{});  // grows the table (an entry that says nothing)
    else
      std::this_thread::yield();
  CHECK(table.growths() >= 4);
  const auto solved = helper.finish();
  REQUIRE(table.find(root, hash, &e));
  REQUIRE(e.exact);
  // Its plan is the one a search alone finds, and so are the entries it solved.
  InMemoryMemo alone_memo;
  Solver alone(target(), alone_memo);
  CHECK(alone.solve(root).cost == e.cost);
  for (const auto &[spec, entry] : solved) {
    if (!table.find(spec, memo_hash(spec), &e)) continue;  // dropped near full
    CHECK(e.exact);
    CHECK(e.cost == entry.cost);
  }
}

TEST_CASE("a helper stopped for growth joins again after it, and not once helping ends") {
  MemoTable table;
  table.reserve(1500);  // 2048 slots
  table.add_helper();
  std::atomic<int> rejoins{0}, early{0};
  std::atomic<bool> waited{false};
  std::thread helper([&] {
    // Odd specs over and over, each pass until asked to stop.
    for (int i = 1;; i = i + 2 < 6000 ? i + 2 : 1) {
      if (!table.helpers_asked_to_stop()) {
        const Spec s = spec_at(i);
        table.put_from_helper(s, memo_hash(s), bound_entry(1));
        continue;
      }
      const uint32_t growths = table.growths();
      table.remove_helper();
      waited = true;
      if (!table.rejoin(growths)) return;
      if (table.growths() == growths) ++early;  // back before the table grew
      ++rejoins;
    }
  });
  // The helper fills the table to three quarters, asks for growth and waits; one that came
  // back without waiting would be back within these 10 ms. Then the owner's 7000 even specs
  // alone grow the table at 1536, 3072 and 6144 entries; with the helper's 3000 it holds at
  // most 10000, short of the next growth.
  while (!waited) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int i = 0; i < 14000; i += 2) {
    const Spec s = spec_at(i);
    table.put(s, memo_hash(s), exact_entry(1000 + i));
  }
  CHECK(table.growths() == 3);
  // The helper may not have run since: give it time to come back (it must) before ending.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (rejoins == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  table.end_helpers();
  helper.join();  // a helper waiting to join again is let go
  CHECK(rejoins >= 1);
  CHECK(early == 0);
  for (int i = 0; i < 14000; i += 2) {
    const Spec s = spec_at(i);
    MemoEntry e;
    REQUIRE(table.find(s, memo_hash(s), &e));
    CHECK(e.cost.cycles == 1000 + i);
  }
}

TEST_CASE("an owner and a helper writing one table: entries only improve, and growth waits") {
  MemoTable table;
  constexpr int kSpecs = 3000;
  table.reserve(1500);  // 2048 slots: the owner grows the table while the helper writes
  table.add_helper();
  std::atomic<bool> helper_done{false};
  std::atomic<int> bad_reads{0};
  std::thread helper([&] {
    // Rising bounds, then exact entries, for the even specs, until asked to stop.
    for (int round = 0; round < 50 && !table.helpers_asked_to_stop(); ++round)
      for (int i = 0; i < kSpecs && !table.helpers_asked_to_stop(); i += 2) {
        const Spec s = spec_at(i);
        table.put_from_helper(s, memo_hash(s),
                              round < 40 ? bound_entry(round) : exact_entry(1000 + i));
        MemoBound b;
        if (table.find_bound(s, memo_hash(s), &b) && !(b.value >= 0 && b.value < 1000 + kSpecs))
          ++bad_reads;
      }
    table.remove_helper();
    helper_done = true;
  });
  // The owner: exact entries for every spec, then (stale) bounds that must not replace them.
  for (int i = 0; i < kSpecs; ++i) {
    const Spec s = spec_at(i);
    table.put(s, memo_hash(s), exact_entry(1000 + i));
  }
  for (int i = 0; i < kSpecs; ++i) {
    const Spec s = spec_at(i);
    table.put(s, memo_hash(s), bound_entry(5));
  }
  helper.join();
  CHECK(helper_done);
  CHECK(bad_reads == 0);
  CHECK(table.size() == kSpecs);
  for (int i = 0; i < kSpecs; ++i) {
    const Spec s = spec_at(i);
    MemoEntry e;
    REQUIRE(table.find(s, memo_hash(s), &e));
    CHECK(e.exact);
    CHECK(e.cost.cycles == 1000 + i);
    CHECK(e.action.size == 7);
  }
}

}  // namespace
}  // namespace tessel
