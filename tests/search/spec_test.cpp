#include <doctest/doctest.h>

#include <random>

#include "random_spec.h"
#include "spec.h"
#include "target.h"

namespace tessel {
namespace {

using test::random_spec;

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
  other.operands[0].level = Level::L1;
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
  for (int i = 0; i < 3; ++i) {  // a walked operand (in L3, where it counts)
    other = base;
    other.operands[i].level = Level::L3;
    Spec walked = other;
    walked.operands[i].walked = true;
    CHECK(spec_key(walked) != spec_key(other));
    CHECK(spec_from_key(spec_key(walked)) == walked);
  }
  for (uint8_t cls = 1; cls <= 7; ++cls) {  // every stride class of every operand
    for (int i = 0; i < 3; ++i) {
      other = base;
      other.operands[i].stride_class = cls;
      CHECK(spec_key(other) != spec_key(base));
      CHECK(spec_from_key(spec_key(other)) == other);
    }
  }
}

TEST_CASE("user matrices are wide-strided from 512 bytes between stored rows") {
  const Target t = avx2_target(HostCaches{});
  CHECK_FALSE(matmul_spec(8, 256, 64, false, false, false, 1, t.limits()).a().wide_stride());
  CHECK_FALSE(matmul_spec(8, 256, 127, false, false, false, 1, t.limits()).a().wide_stride());
  CHECK(matmul_spec(8, 256, 128, false, false, false, 1, t.limits()).a().wide_stride());
  CHECK(matmul_spec(8, 256, 16, false, false, false, 1, t.limits(), 512).a().wide_stride());
  CHECK(matmul_spec(600, 4, 16, true, false, false, 1, t.limits()).a().wide_stride());  // A^T
  CHECK_FALSE(matmul_spec(8, 100, 64, false, false, false, 1, t.limits()).b().wide_stride());
  CHECK(matmul_spec(8, 128, 64, false, false, false, 1, t.limits()).b().wide_stride());
  Spec packed = matmul_spec(8, 256, 512, false, false, false, 1, t.limits());
  packed.operands[0].layout = panel_rows(6);
  CHECK_FALSE(canonical(packed).a().wide_stride());  // our buffers are never strided
}

TEST_CASE("a wide stride's class says how many L1 sets its rows start in") {
  CHECK(stride_class(508) == 0);          // not wide
  CHECK(stride_class(4096) == 1);         // ld 1024 floats: every row in the same set
  CHECK(stride_class(8192 + 4096) == 1);  // ld 3072
  CHECK(stride_class(2048) == 2);         // ld 512: two sets
  CHECK(stride_class(3072) == 3);         // ld 768: four
  CHECK(stride_class(512) == 4);          // eight
  CHECK(stride_class(4000) == 7);         // ld 1000: all 64 (starts 32 bytes apart)
  CHECK(stride_class(4096 + 64) == 7);    // one line further each row
  const Target t = avx2_target(HostCaches{});
  const Spec s = matmul_spec(64, 2048, 1024, false, false, false, 1, t.limits());
  CHECK(s.a().stride_class == 1);
  CHECK(s.b().stride_class == 1);
  CHECK(s.a().set_spread_log2() == 0);
  CHECK(matmul_spec(64, 2000, 64, false, false, false, 1, t.limits()).b().set_spread_log2() == 6);
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
