// The hash table under the memo and the shared decisions.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "key_table.h"
#include "memo.h"

namespace tessel {
namespace {

Spec random_spec(std::mt19937_64 &rng) {
  Spec s;
  s.op = Op(rng() % 4);
  s.accumulate = rng() & 1;
  s.threads = uint8_t(1 + rng() % 4);
  for (int32_t &d : s.dims) d = 1 + int32_t(rng() % 300);
  for (TensorSpec &t : s.operands)
    t = {Level(rng() % kLevelCount), Layout{LayoutKind(rng() % 6), uint8_t(rng() % 3 * 8)},
         bool(rng() & 1)};
  s.limits = {uint32_t(rng() % 17), uint32_t(rng() % 64), uint32_t(rng() % 2048), 24576};
  return s;
}

TEST_CASE("a spec-keyed table finds exactly the specs put, whatever field differs") {
  std::mt19937_64 rng(5);
  std::vector<Spec> specs;
  for (int i = 0; i < 20000; ++i) specs.push_back(random_spec(rng));
  KeyTable<int, Spec> table;
  InMemoryMemo memo;
  for (size_t i = 0; i < specs.size(); ++i) {
    table.put(specs[i], int(i));
    MemoEntry e;
    e.lower_bound = double(i);
    memo.put(specs[i], e);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const int *v = table.find(specs[i], table_hash(specs[i]));
    REQUIRE(v);
    // Random specs may repeat: the last put wins, and it is an equal spec.
    CHECK(specs[size_t(*v)] == specs[i]);
    MemoEntry e;
    REQUIRE(memo.get(specs[i], &e));
    CHECK(specs[size_t(e.lower_bound)] == specs[i]);
  }
  // One field changed out of the random range: a spec never put.
  for (size_t i = 0; i < 2000; ++i) {
    Spec s = specs[i];
    switch (i % 5) {
      case 0:
        s.dims[i % 3] += 1000;
        break;
      case 1:
        s.operands[i % 3].wide_stride = !s.operands[i % 3].wide_stride;
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
    CHECK(table.find(s) == nullptr);
    MemoEntry e;
    CHECK_FALSE(memo.get(s, &e));
  }
  size_t visited = 0;
  memo.for_each([&](const Spec &s, const MemoEntry &e) {
    CHECK(specs[size_t(e.lower_bound)] == s);
    ++visited;
  });
  CHECK(visited == memo.size());
}

}  // namespace
}  // namespace tessel
