// The target the search and codegen tests plan for.
#pragma once
#include "target.h"

namespace tessel::test {

// The default caches (the Zen 5 machines'), not the host's: a plan a test asserts on, and a
// failing seed, are the same on every machine. On hosts whose caches differ, tests that read
// the host's found their plans changed under them (a 32 KiB L1 outlined a 77 KiB kernel that
// a 48 KiB L1 emits in 54 KiB).
inline const Target &test_target() {
  static const Target t = avx2_target(HostCaches{});
  return t;
}

}  // namespace tessel::test
