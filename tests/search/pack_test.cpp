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

TEST_CASE("a pack from main memory is charged its reads less what hides behind the FMAs") {
  const Target t = avx2_target(HostCaches{});
  const double hidden = t.coef.staged_read_hidden;
  REQUIRE(hidden > 0);
  REQUIRE(hidden < 1);
  // C (m x 256) += A (m x 128, in L1) * B (128 x 256, at b_level), C in L3.
  auto spec = [&](int32_t m, Level b_level) {
    Spec s;
    s.op = Op::MatmulAccum;
    s.dims = {m, 256, 128};
    s.operands = {TensorSpec{Level::L1, row_major()}, TensorSpec{b_level, row_major()},
                  TensorSpec{Level::L3, row_major()}};
    s.limits = t.limits();
    return canonical(s);
  };
  const Action pack_b{ActionKind::Pack, 1, uint8_t(Level::L2), 16, 0};
  const double reads = t.read_cost(spec(1, Level::GL).b(), 128, 256, /*side_by_side=*/false);
  // Many FMAs (48 rows): the share. One row: its FMA cycles, fewer than the share.
  CHECK(expand(spec(48, Level::GL), pack_b, t).local_cycles == doctest::Approx(-reads * hidden));
  const double one_row_fmas = t.fma_bound(spec(1, Level::GL));
  REQUIRE(one_row_fmas < reads * hidden);
  CHECK(expand(spec(1, Level::GL), pack_b, t).local_cycles == doctest::Approx(-one_row_fmas));
  // From L3 the copy may run once, outside any loop: nothing is taken off.
  CHECK(expand(spec(48, Level::L3), pack_b, t).local_cycles == 0);
  // The copy itself is charged in full: the credit is the pack's, not the Move's.
  const Expansion e = expand(spec(48, Level::GL), pack_b, t);
  REQUIRE(e.children[0].present);
  CHECK(t.kernel_cost(KernelId::PackPanels, e.children[0].spec) >= reads);
}

}  // namespace
}  // namespace tessel
