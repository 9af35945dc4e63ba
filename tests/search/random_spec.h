// A spec with every field random (op, flags, thread count from 0, shape, operand levels,
// layouts, strips, stride, contiguity and walk flags, memory limits), canonical or not: for tests
// of what must hold for any spec (keys, canonical forms, the memo).
#pragma once
#include <cstdint>
#include <random>

#include "spec.h"

namespace tessel::test {

inline Spec random_spec(std::mt19937_64 &rng) {
  Spec s;
  s.op = Op(rng() % 4);
  s.accumulate = rng() & 1;
  s.threads = uint8_t(rng() % 5);
  for (int32_t &d : s.dims) d = 1 + int32_t(rng() % 300);
  for (TensorSpec &t : s.operands) {
    t = {Level(rng() % kLevelCount), Layout{LayoutKind(rng() % 6), uint8_t(rng() % 3 * 8)},
         bool(rng() & 1)};
    t.contiguous = rng() & 1;
    t.walked = rng() & 1;
  }
  s.limits = {uint32_t(rng() % 17), uint32_t(rng() % 64), uint32_t(rng() % 2048), 24576};
  return s;
}

}  // namespace tessel::test
