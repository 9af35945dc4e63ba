// MemoStore: the memo database file, shared by every process of the machine.
//
// SQLite in WAL mode holds the blocks (memo_block.h), one row each. Why SQLite: it is a
// Debian package, its transactions make several processes merging into one file safe and a
// kill -9 at any moment harmless (an interrupted transaction is rolled back on next open),
// readers never wait for writers, and `VACUUM INTO` gives a consistent export for free.
// LMDB would do as well but needs a fixed map size; rename-based files would need our own
// locking for concurrent merges.
//
// Everything read back is checked: the file's fingerprint (versions, ISA, cache sizes) must
// equal the opener's, and every block carries a checksum. Nothing here is ever fatal: errors
// come back as values with a reason.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "memo_block.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tessel {

class MemoStore {
 public:
  enum class Access { ReadOnly, ReadWrite };
  // Opens the database at `path` (creating it when ReadWrite) for `fingerprint`. Returns null
  // with the reason when the file cannot be opened, is not a tessel database, or was made for
  // another fingerprint.
  static std::unique_ptr<MemoStore> open(const std::string &path, Access access,
                                         const std::string &fingerprint, std::string *error);
  ~MemoStore();
  MemoStore(const MemoStore &) = delete;
  MemoStore &operator=(const MemoStore &) = delete;

  enum class Read { Missing, Found, Damaged };
  // Appends the block's entries to `out`, oldest part first (a later entry for a key wins).
  // Damaged: a bad checksum or structure, or an SQLite error (the reason in `why`); the caller
  // treats it as a miss.
  Read read_block(const BlockId &id, std::vector<StoredEntry> *out, std::string *why);

  // The plan record of a top-level spec (memo_block.h).
  Read read_plan(const SpecKey &root, PlanRecord *out, std::string *why);

  // Merges entries into their blocks and writes plan records, in one transaction: an entry
  // replaces a stored one with the same key, and a damaged block is replaced by the new
  // entries alone. Refuses (false, with the reason) when the files exceed the size limit,
  // or on a read-only store.
  bool merge(std::span<const StoredEntry> entries, const std::vector<PlanRecord> &plans,
             std::string *error);
  bool merge(std::span<const StoredEntry> entries, std::string *error) {
    return merge(entries, {}, error);
  }

  // Calls `f` for every block part, in key order, raw (decode_block checks it).
  bool for_each_block(const std::function<void(const BlockId &, std::string_view)> &f,
                      std::string *error);
  // Calls `f` for every block part's id, in key order, reading no data.
  bool for_each_block_id(const std::function<void(const BlockId &)> &f, std::string *error);
  // Likewise for every plan record (decode_plan_record checks it).
  bool for_each_plan(const std::function<void(const SpecKey &, std::string_view)> &f,
                     std::string *error);
  bool clear(std::string *error);
  // A consistent copy of the whole database at `path` (which must not exist).
  bool export_to(const std::string &path, std::string *error);
  // Merges every intact block of the database at `path`, which must carry this store's
  // fingerprint, and its intact plan records. `blocks` counts the blocks imported, `damaged`
  // the blocks and records skipped.
  bool import_from(const std::string &path, size_t *blocks, size_t *damaged, std::string *error);

  // Blocks read so far (plan records let a warm start read none).
  int64_t block_reads() const { return block_reads_; }
  // The file and its write-ahead log, in bytes.
  int64_t file_bytes() const;
  void set_size_limit(int64_t bytes) { size_limit_ = bytes; }
  const std::string &path() const { return path_; }
  const std::string &fingerprint() const { return fingerprint_; }
  bool read_only() const { return access_ == Access::ReadOnly; }

 private:
  MemoStore() = default;
  bool exec(const char *sql, std::string *error);
  // Creates the tables and stores the fingerprint (if none is stored yet), in WAL mode.
  bool set_up(std::string *why);
  // Runs a query, calling `row` on each row it returns.
  bool for_each_row(const char *sql, const std::function<void(sqlite3_stmt *)> &row,
                    std::string *error);
  // Parses `sql` into *st unless already done.
  bool prepare(const char *sql, sqlite3_stmt **st);
  bool prepare_reads();
  bool prepare_writes();  // under mutex_
  // Appends every part of a block, oldest first, counting them; under mutex_.
  Read read_parts(const BlockId &id, std::vector<StoredEntry> *out, std::string *why, int *parts);
  bool merge_locked(std::span<const StoredEntry> entries, const std::vector<PlanRecord> &plans,
                    std::string *error);

  std::mutex mutex_;  // one connection, used by one thread at a time
  sqlite3 *db_ = nullptr;
  sqlite3_stmt *select_ = nullptr;
  sqlite3_stmt *upsert_ = nullptr;
  sqlite3_stmt *delete_ = nullptr;
  sqlite3_stmt *count_ = nullptr;
  sqlite3_stmt *select_plan_ = nullptr;
  sqlite3_stmt *upsert_plan_ = nullptr;
  std::string path_;
  std::string fingerprint_;
  Access access_ = Access::ReadOnly;
  int64_t size_limit_ = INT64_MAX;
  int64_t block_reads_ = 0;                           // under mutex_
  std::unordered_set<BlockId, BlockIdHash> damaged_;  // blocks read damaged, under mutex_
};

}  // namespace tessel
