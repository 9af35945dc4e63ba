// The solver's memo in memory.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "key_table.h"
#include "memo.h"
#include "random_spec.h"

namespace tessel {
namespace {

using test::random_spec;

// An entry whose every field says which spec it was put for.
MemoEntry entry_for(size_t i) {
  MemoEntry e;
  e.exact = i % 3 != 0;
  e.solvable = i % 2 == 0;
  e.covers_target_bound = i % 5 < 2;
  e.action = {ActionKind(i % 9), uint8_t(i % 7), uint8_t(i % 5), int32_t(i)};
  e.cost = {double(i) * 1.5, int64_t(i) * 64, int32_t(i % 100)};
  e.lower_bound = double(i) * 0.25;
  return e;
}

bool same_entry(const MemoEntry &a, const MemoEntry &b) {
  return a.exact == b.exact && a.solvable == b.solvable &&
         a.covers_target_bound == b.covers_target_bound && a.action == b.action &&
         a.cost == b.cost && a.lower_bound == b.lower_bound;
}

// `count` random specs (seeded), each put into `memo` with entry_for(its index).
std::vector<Spec> put_random_specs(uint64_t seed, int count, InMemoryMemo &memo) {
  std::mt19937_64 rng(seed);
  std::vector<Spec> specs;
  for (int i = 0; i < count; ++i) specs.push_back(random_spec(rng));
  for (size_t i = 0; i < specs.size(); ++i) memo.put(specs[i], entry_for(i));
  return specs;
}

TEST_CASE("the memo returns each entry as put, for exactly the spec put, whatever field differs") {
  InMemoryMemo memo;
  const std::vector<Spec> specs = put_random_specs(5, 20000, memo);
  for (size_t i = 0; i < specs.size(); ++i) {
    MemoEntry e;
    REQUIRE(memo.get(specs[i], &e));
    // Random specs may repeat: the last put wins, and it is for an equal spec.
    const size_t put = size_t(e.action.size);
    CHECK(specs[put] == specs[i]);
    CHECK(same_entry(e, entry_for(put)));
    MemoBound b;
    REQUIRE(memo.get_bound(specs[i], memo_hash(specs[i]), &b));
    const MemoBound expected = bound_of(e);
    CHECK(b.exact == expected.exact);
    CHECK(b.solvable == expected.solvable);
    CHECK(b.covers_target_bound == expected.covers_target_bound);
    CHECK(b.value == expected.value);
  }
  // One field changed out of the random range: a spec never put.
  for (size_t i = 0; i < 2000; ++i) {
    Spec s = specs[i];
    switch (i % 5) {
      case 0:
        s.dims[i % 3] += 1000;
        break;
      case 1:
        s.operands[i % 3].stride_class = s.operands[i % 3].stride_class ? 0 : 1;
        break;
      case 2:
        s.limits.l2_kib += 4096;
        break;
      case 3:
        s.threads = uint8_t(s.threads + 16);
        break;
      case 4:
        s.operands[i % 3].layout.strip = 200;
        break;
    }
    MemoEntry e;
    CHECK_FALSE(memo.get(s, &e));
    MemoBound b;
    CHECK_FALSE(memo.get_bound(s, memo_hash(s), &b));
  }
  size_t visited = 0;
  memo.for_each([&](const Spec &s, const MemoEntry &e) {
    CHECK(specs[size_t(e.action.size)] == s);
    ++visited;
  });
  CHECK(visited == memo.size());
}

TEST_CASE("a cleared memo holds nothing, and takes entries again") {
  InMemoryMemo memo;
  const std::vector<Spec> specs = put_random_specs(9, 5000, memo);
  REQUIRE(memo.size() > 0);
  memo.clear();
  CHECK(memo.size() == 0);
  MemoEntry e;
  for (const Spec &s : specs) CHECK_FALSE(memo.get(s, &e));
  for (size_t i = 0; i < 100; ++i) memo.put(specs[i], entry_for(i));
  for (size_t i = 0; i < 100; ++i) {
    REQUIRE(memo.get(specs[i], &e));
    CHECK(specs[size_t(e.action.size)] == specs[i]);
  }
  CHECK(memo.size() <= 100);
}

TEST_CASE("the shared decisions' key table keeps every entry through growth and reserve") {
  KeyTable<int64_t> table;
  std::mt19937_64 rng(11);
  std::vector<SpecKey> keys(20000);
  for (SpecKey &k : keys)
    for (uint64_t &w : k) w = rng();
  keys[1] = keys[0];
  keys[1][4] ^= 1;  // a neighbour differing in one bit
  auto check = [&](size_t count) {
    REQUIRE(table.size() == count);
    for (size_t i = 0; i < keys.size(); ++i) {
      const int64_t *v = table.find(keys[i]);
      if (i < count) {
        REQUIRE(v != nullptr);
        CHECK(*v == int64_t(i));
      } else {
        CHECK(v == nullptr);
      }
    }
  };
  // Reserving ahead, growing by doubling, reserving less than held (no change), and
  // reserving past the size in the middle of the inserts.
  table.reserve(3000);
  for (size_t i = 0; i < 5000; ++i) table.put(keys[i], int64_t(i));
  check(5000);
  table.reserve(10);
  check(5000);
  table.reserve(keys.size());
  check(5000);
  for (size_t i = 5000; i < keys.size(); ++i) CHECK(table.put_new(keys[i], int64_t(i)));
  check(keys.size());
  CHECK_FALSE(table.put_new(keys[7], -1));
  CHECK(*table.find(keys[7]) == 7);
}

}  // namespace
}  // namespace tessel
