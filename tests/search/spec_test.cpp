#include <doctest/doctest.h>

#include <random>

#include "spec.h"
#include "target.h"

namespace tessel {
namespace {

Spec random_spec(std::mt19937_64 &rng) {
  Spec s;
  s.op = Op(rng() % 4);
  s.accumulate = rng() & 1;
  s.threads = uint8_t(rng() % 3);
  for (int32_t &d : s.dims) d = 1 + int32_t(rng() % 100);
  for (TensorSpec &t : s.operands) {
    t.level = Level(rng() % kLevelCount);
    t.layout = Layout{LayoutKind(rng() % 6), uint8_t(rng() % 3 * 8)};
    t.stride_log2 = rng() & 1 ? uint8_t(7 + rng() % 6) : 0;
  }
  return s;
}

TEST_CASE("canonicalization is idempotent and keeps the key of canonical specs") {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    const Spec once = canonical(random_spec(rng));
    const Spec twice = canonical(once);
    CHECK(twice == once);
    CHECK(spec_key(twice) == spec_key(once));
  }
}

TEST_CASE("spec keys decode to the spec they encode") {
  std::mt19937_64 rng(2);
  for (int i = 0; i < 2000; ++i) {
    Spec s = canonical(random_spec(rng));
    s.limits = MemoryLimits{uint32_t(rng() % 64), uint32_t(rng() % 0xffff),
                            uint32_t(rng() % 0xffffff), uint32_t(rng() % 0xffffff)};
    CHECK(spec_from_key(spec_key(s)) == s);
  }
}

TEST_CASE("canonicalization clears what an op does not use") {
  Spec s;
  s.op = Op::Zero;
  s.accumulate = true;
  s.dims = {4, 5, 6};
  s.operands[1].level = Level::L1;
  const Spec c = canonical(s);
  CHECK(c.dims[2] == 1);
  CHECK_FALSE(c.accumulate);
  CHECK(c.operands[1] == TensorSpec{});
}

TEST_CASE("spec keys distinguish every field the solver reads") {
  const Target t = avx2_target(HostCaches{});
  const Spec base = matmul_spec(10, 20, 30, false, false, false, 1, t.limits());
  Spec other = base;
  other.dims[2] = 31;
  CHECK(spec_key(other) != spec_key(base));
  other = base;
  other.operands[0].level = Level::L2;
  CHECK(spec_key(other) != spec_key(base));
  other = base;
  other.operands[1].layout = panel_cols(16);
  CHECK(spec_key(other) != spec_key(base));
  other = base;
  other.threads = 2;
  CHECK(spec_key(other) != spec_key(base));
  other = base;
  other.limits.l1_kib += 1;
  CHECK(spec_key(other) != spec_key(base));
  other = base;
  other.operands[0].stride_log2 = base.operands[0].stride_log2 == 12 ? 7 : 12;
  CHECK(spec_key(other) != spec_key(base));
  CHECK(spec_from_key(spec_key(other)) == other);
}

TEST_CASE("user matrices' strides are classed by their power-of-two factor, up to 4 KiB") {
  CHECK(stride_log2(4000) == 0);  // 32 * 125: rows spread over every set
  CHECK(stride_log2(64) == 0);
  CHECK(stride_log2(128) == 7);
  CHECK(stride_log2(3072) == 10);   // 768 floats
  CHECK(stride_log2(4096) == 12);   // 1024 floats
  CHECK(stride_log2(65536) == 12);  // capped: L1's sets span 4 KiB
  const Target t = avx2_target(HostCaches{});
  // Tight strides by default (k floats for row-major A, m for A^T), or the caller's.
  CHECK(matmul_spec(8, 256, 1024, false, false, false, 1, t.limits()).a().stride_log2 == 12);
  CHECK(matmul_spec(8, 256, 1000, false, false, false, 1, t.limits()).a().stride_log2 == 0);
  CHECK(matmul_spec(8, 256, 16, false, false, false, 1, t.limits(), 3072).a().stride_log2 == 10);
  CHECK(matmul_spec(512, 4, 16, true, false, false, 1, t.limits()).a().stride_log2 == 11);
  CHECK(matmul_spec(8, 768, 16, false, false, false, 1, t.limits()).b().stride_log2 == 10);
  CHECK(matmul_spec(8, 4, 16, false, false, false, 1, t.limits(), 0, 0, 2048).c().stride_log2 ==
        11);
  Spec packed = matmul_spec(8, 256, 1024, false, false, false, 1, t.limits());
  packed.operands[0].layout = panel_rows(6);
  CHECK(canonical(packed).a().stride_log2 == 0);  // our buffers are never strided
}

TEST_CASE("panel layouts address elements as documented") {
  // 7 x 5 tensor in 3-row panels: panel p holds rows 3p..3p+2, k fastest across the panel.
  const Layout l = panel_rows(3);
  CHECK(element_offset(l, 5, 0, 0) == 0);
  CHECK(element_offset(l, 5, 2, 0) == 2);
  CHECK(element_offset(l, 5, 0, 1) == 3);
  CHECK(element_offset(l, 5, 3, 0) == 15);
  CHECK(element_offset(l, 5, 6, 4) == 30 + 12);
  CHECK(buffer_elements(l, 7, 5) == 45);
  const Layout c = panel_cols(4);
  CHECK(element_offset(c, 6, 1, 5) == 24 + 4 + 1);
  CHECK(buffer_elements(c, 6, 9) == 72);
  CHECK(panel_step_ok(l, 0, 7, 3));
  CHECK_FALSE(panel_step_ok(l, 0, 7, 2));
  CHECK(panel_step_ok(l, 0, 3, 2));  // inside one panel
  CHECK(panel_step_ok(l, 1, 5, 2));  // the other axis is free
}

}  // namespace
}  // namespace tessel
