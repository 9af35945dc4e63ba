// The on-disk form of the memo: decisions grouped into blocks, with spatial compression.
//
// What is stored for a spec is its decision (solvable or not, and the chosen action), never
// its cost: replaying a decision recomputes the exact cost and checks that the action still
// applies (see layered_memo.h), so a cost on disk would only be one more thing to trust.
// Decisions are also what neighbours share: over the benchmark list, 46k of 137k solved specs
// have an adjacent spec with the same action, but only 2.5k one with the same per-volume cost.
//
// A block holds every stored spec of one class (op, dtype, operand levels and layouts,
// threads, stride classes: the first two SpecKey words) whose shape falls in one aligned cube
// of kBlockSpan^3 coordinates. Inside, specs are sorted by (memory limits, m, n, k); a run of
// consecutive k with one decision is stored once, as (m, n, first k, length, decision index)
// with offsets from the cube's corner, and each distinct decision once per block. The store
// may hold a block as a few parts, each encoded this way (memo_store.h).
#pragma once
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "action.h"
#include "spec.h"
#include "zeroed_array.h"

namespace tessel {

struct Decision {
  bool solvable = false;
  Action action;  // meaningful when solvable
  friend bool operator==(const Decision &, const Decision &) = default;
};

struct StoredEntry {
  SpecKey key{};
  Decision decision;
};
// Decisions on their way to the shared table and the store: a cold search solves 50-100k.
using StoredEntries = std::vector<StoredEntry, ZeroedAllocator<StoredEntry>>;

constexpr int kBlockShift = 6;
constexpr int64_t kBlockSpan = int64_t{1} << kBlockShift;

struct BlockId {
  uint64_t class_lo = 0, class_hi = 0;  // SpecKey words 0 and 1
  uint32_t m = 0, n = 0, k = 0;         // the cube: dims >> kBlockShift
  friend auto operator<=>(const BlockId &, const BlockId &) = default;
};
BlockId block_of(const SpecKey &key);

struct BlockIdHash {
  size_t operator()(const BlockId &b) const;
};

// Encodes the entries (all of block `id`; sorted and deduplicated here, the last entry for a
// key wins) with a trailing checksum over the id and the payload.
std::string encode_block(const BlockId &id, std::vector<StoredEntry> entries);

struct BlockCounts {
  size_t entries = 0, runs = 0, decisions = 0;
};

// Decodes a block written by encode_block for the same id. Returns false, with the reason,
// when the checksum or the structure is wrong (a damaged, truncated or misplaced blob).
bool decode_block(const BlockId &id, std::string_view blob, std::vector<StoredEntry> *out,
                  std::string *why, BlockCounts *counts = nullptr);

// A plan record: the actions of one top-level spec's plan, kept beside the blocks so that a
// warm first call reads one row instead of a block per plan node, and rebuilds the plan in
// one pass (replay_plan in plan.h) instead of a search over replayed decisions.
//
// The actions are those of the plan's nodes in the order build_plan creates them (pre-order,
// children in slot order). A node's spec follows from its parent's expansion, so no keys are
// stored: each distinct action once, then an index per node, and a checksum over root and
// payload. 1000^3's 398 nodes take 532 bytes (14 KB with a key per node, which spilled into
// SQLite overflow pages, each a page read or fault on a warm first call). Every action is
// checked again when replayed, as any stored decision is.
struct PlanRecord {
  SpecKey root{};
  std::vector<Action> actions;
};
std::string encode_plan_record(const PlanRecord &record);
bool decode_plan_record(const SpecKey &root, std::string_view blob, PlanRecord *out,
                        std::string *why);

// Bytes a plain key -> value dump spends per spec (the 40-byte key, an 8-byte action and a
// flag): the baseline the compression is measured against.
constexpr size_t kPlainEntryBytes = sizeof(SpecKey) + 8 + 1;

}  // namespace tessel
