// Which packs the search offers (search/pack.cpp).
#include <doctest/doctest.h>

#include <vector>

#include "action.h"
#include "target.h"

namespace tessel {
namespace {

// Whether enumerate_packs offers packing B into 16-column panels at `level`.
bool offers_pack_of_b(const Spec &s, const Target &t, Level level) {
  std::vector<Action> actions;
  enumerate_packs(s, t, actions);
  for (const Action &a : actions)
    if (a.kind == ActionKind::Pack && a.a == 1 && Level(a.b) == level && a.size == 16 &&
        a.size2 == 0)
      return true;
  return false;
}

TEST_CASE("a pack from farther out needs room for its buffer and its source block together") {
  const Target t = avx2_target(HostCaches{});  // 896 KiB of L2 usable
  REQUIRE(t.limits().bytes(Level::L2) == 896 * 1024);
  // 32 x n x 128 with A in L1: B's buffer takes 128 * n * 4 bytes at L2.
  auto spec = [&](int32_t n, Level b_level) {
    Spec s;
    s.op = Op::MatmulAccum;
    s.dims = {32, n, 128};
    s.operands = {TensorSpec{Level::L1, row_major()}, TensorSpec{b_level, row_major()},
                  TensorSpec{Level::L3, row_major()}};
    s.limits = t.limits();
    return canonical(s);
  };
  // 512 columns: a 256 KiB buffer and the 256 KiB it is copied from fit together.
  CHECK(offers_pack_of_b(spec(512, Level::L3), t, Level::L2));
  CHECK(offers_pack_of_b(spec(512, Level::GL), t, Level::L2));
  // 1024 columns: the 512 KiB buffer fits alone, not with the 512 KiB streaming past it.
  CHECK_FALSE(offers_pack_of_b(spec(1024, Level::L3), t, Level::L2));
  CHECK_FALSE(offers_pack_of_b(spec(1024, Level::GL), t, Level::L2));
  // A source already in L2 is counted there once, as the body's operands are.
  CHECK(offers_pack_of_b(spec(1024, Level::L2), t, Level::L2));
  CHECK_FALSE(offers_pack_of_b(spec(2048, Level::L2), t, Level::L2));
}

}  // namespace
}  // namespace tessel
