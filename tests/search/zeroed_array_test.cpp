#include "zeroed_array.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <utility>

namespace tessel {
namespace {

struct alignas(64) Line {
  uint64_t words[8];
};

// Sizes on both sides of the heap/mapping threshold and of whole huge pages.
TEST_CASE("zeroed arrays start zero, aligned, and every element is usable") {
  for (size_t n : {size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{32768},
                   size_t{32769}, size_t{131072}}) {
    CAPTURE(n);
    ZeroedArray<Line> a(n);
    REQUIRE(a.size() == n);
    CHECK(reinterpret_cast<uintptr_t>(&a[0]) % 64 == 0);
    uint64_t any = 0;
    for (size_t i = 0; i < n; ++i)
      for (uint64_t w : a[i].words) any |= w;
    CHECK(any == 0);
    for (size_t i = 0; i < n; ++i) a[i].words[7] = i + 1;  // the last byte too: no short map
    CHECK(a[n - 1].words[7] == n);
  }
}

TEST_CASE("a zeroed array moves its elements and leaves the source empty") {
  ZeroedArray<uint64_t> a(100000);
  a[99999] = 7;
  ZeroedArray<uint64_t> b = std::move(a);
  CHECK(a.empty());
  CHECK(b.size() == 100000);
  CHECK(b[99999] == 7);
  ZeroedArray<uint64_t> c(3);
  c = std::move(b);
  CHECK(c[99999] == 7);
  CHECK(b.size() == 3);
}

}  // namespace
}  // namespace tessel
