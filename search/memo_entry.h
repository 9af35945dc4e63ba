// What the memo stores per spec, and how it hashes and compares specs.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "action.h"
#include "cost.h"
#include "spec.h"

namespace tessel {

// MemoTable hashes and compares a Spec's bytes: that needs a Spec without padding, and with
// one representation per value.
static_assert(std::has_unique_object_representations_v<Spec>,
              "the memo keys on a Spec's bytes: keep Spec free of padding");

// Either the exact optimum of a spec (`exact`; `solvable` false means no plan exists), or
// only a proven lower bound on it, left by a search that was cut off by its budget.
struct MemoEntry {
  bool exact = false;
  bool solvable = false;
  // Not exact: lower_bound is at least the target's bound on the spec (Target::lower_bound),
  // as the solver's bounds are; false when nothing is known.
  bool covers_target_bound = false;
  Action action;           // the best action (exact and solvable)
  Cost cost;               // exact: the optimum
  double lower_bound = 0;  // not exact: every plan costs more than this
};

// What bounding a spec reads of its memo entry.
struct MemoBound {
  bool exact = false;
  bool solvable = false;
  bool covers_target_bound = false;
  double value = 0;  // exact: the optimum's cycles; otherwise the entry's lower bound
};
inline MemoBound bound_of(const MemoEntry &e) {
  return {e.exact, e.solvable, e.covers_target_bound, e.exact ? e.cost.cycles : e.lower_bound};
}

// Word i of a spec's bytes (the last one zero-padded), loaded with a constant size: one load.
constexpr size_t kSpecWords = (sizeof(Spec) + 7) / 8;
template <size_t I>
inline uint64_t spec_word(const Spec &s) {
  constexpr size_t kBytes = 8 * I + 8 <= sizeof(Spec) ? 8 : sizeof(Spec) - 8 * I;
  uint64_t w = 0;
  std::memcpy(&w, reinterpret_cast<const unsigned char *>(&s) + 8 * I, kBytes);
  return w;
}
template <size_t... I>
inline std::array<uint64_t, kSpecWords> spec_words(const Spec &s, std::index_sequence<I...>) {
  return {spec_word<I>(s)...};
}
inline std::array<uint64_t, kSpecWords> spec_words(const Spec &s) {
  return spec_words(s, std::make_index_sequence<kSpecWords>());
}

// The memo's hash of a spec: a multilinear hash of its words (independent multiplies, so
// they issue together), then splitmix64's finalizer to bring the high bits down.
inline uint64_t memo_hash(const Spec &s) {
  static constexpr uint64_t kMul[] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                                      0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull,
                                      0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull};
  static_assert(kSpecWords <= sizeof(kMul) / sizeof(kMul[0]));
  const std::array<uint64_t, kSpecWords> w = spec_words(s);
  uint64_t h = 0;
  for (size_t i = 0; i < kSpecWords; ++i) h += w[i] * kMul[i];
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

inline bool same_spec(const Spec &a, const Spec &b) {
  const std::array<uint64_t, kSpecWords> x = spec_words(a), y = spec_words(b);
  uint64_t diff = 0;
  for (size_t i = 0; i < kSpecWords; ++i) diff |= x[i] ^ y[i];
  return diff == 0;
}

}  // namespace tessel
