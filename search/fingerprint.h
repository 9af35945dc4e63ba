// What a stored decision depends on, as one string: the memo database is keyed by it, and a
// database whose fingerprint differs from the host's is never used.
#pragma once
#include <string>

#include "target.h"

namespace tessel {

// The layout of memo blocks and tables (memo_block.h, memo_store.h) and of spec keys.
constexpr int kMemoSchemaVersion = 10;
// Changes to how costs are computed that the coefficients below do not show (a new formula,
// a kernel's cost), in target.cpp or the actions.
constexpr int kCostModelVersion = 21;

// Schema, action enumeration and cost model versions, the target's ISA and register file,
// the cache sizes the cost model used, and a hash of every cost coefficient.
std::string memo_fingerprint(const Target &t);

// A short hex digest of the fingerprint, for file names.
std::string fingerprint_digest(const std::string &fingerprint);

}  // namespace tessel
