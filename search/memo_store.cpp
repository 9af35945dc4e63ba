#include "memo_store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace tessel {
namespace {

constexpr const char *kSchema =
    "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS blocks(class_lo INTEGER NOT NULL, class_hi INTEGER NOT NULL,"
    " m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, part INTEGER NOT NULL,"
    " data BLOB NOT NULL, PRIMARY KEY(class_lo, class_hi, m, n, k, part)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS plans(w0 INTEGER NOT NULL, w1 INTEGER NOT NULL,"
    " w2 INTEGER NOT NULL, w3 INTEGER NOT NULL, w4 INTEGER NOT NULL, data BLOB NOT NULL,"
    " PRIMARY KEY(w0, w1, w2, w3, w4)) WITHOUT ROWID;";

// A merge appends a block's new entries as one more part, so it costs what it adds; at this
// many parts the block is rewritten as one (reads decode every part).
constexpr int kMaxParts = 8;

// Waits this long for another process's write transaction before giving up.
constexpr int kBusyTimeoutMs = 30000;

void bind_id(sqlite3_stmt *st, const BlockId &id) {
  sqlite3_bind_int64(st, 1, static_cast<sqlite3_int64>(id.class_lo));
  sqlite3_bind_int64(st, 2, static_cast<sqlite3_int64>(id.class_hi));
  sqlite3_bind_int64(st, 3, id.m);
  sqlite3_bind_int64(st, 4, id.n);
  sqlite3_bind_int64(st, 5, id.k);
}

void bind_root(sqlite3_stmt *st, const SpecKey &root) {
  for (int i = 0; i < 5; ++i) sqlite3_bind_int64(st, i + 1, static_cast<sqlite3_int64>(root[i]));
}

SpecKey column_root(sqlite3_stmt *st) {
  SpecKey root;
  for (int i = 0; i < 5; ++i) root[i] = static_cast<uint64_t>(sqlite3_column_int64(st, i));
  return root;
}

BlockId column_id(sqlite3_stmt *st) {
  BlockId id;
  id.class_lo = static_cast<uint64_t>(sqlite3_column_int64(st, 0));
  id.class_hi = static_cast<uint64_t>(sqlite3_column_int64(st, 1));
  id.m = static_cast<uint32_t>(sqlite3_column_int64(st, 2));
  id.n = static_cast<uint32_t>(sqlite3_column_int64(st, 3));
  id.k = static_cast<uint32_t>(sqlite3_column_int64(st, 4));
  return id;
}

std::string_view column_blob(sqlite3_stmt *st, int col) {
  const void *p = sqlite3_column_blob(st, col);
  return {static_cast<const char *>(p), static_cast<size_t>(sqlite3_column_bytes(st, col))};
}

int64_t size_of(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// Finalizes a statement when it goes out of scope.
struct Statement {
  sqlite3_stmt *st = nullptr;
  ~Statement() { sqlite3_finalize(st); }
};

// The fingerprint stored in the file: true with *found set when the meta table has one; false
// with *why set otherwise (no such table, no row, or an error).
bool stored_fingerprint(sqlite3 *db, std::string *found, std::string *why) {
  Statement q;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE name = 'fingerprint';", -1, &q.st,
                         nullptr) != SQLITE_OK) {
    *why = sqlite3_errmsg(db);
    return false;
  }
  const int rc = sqlite3_step(q.st);
  if (rc != SQLITE_ROW) {
    *why = rc == SQLITE_DONE ? "no fingerprint" : sqlite3_errmsg(db);
    return false;
  }
  const auto *text = reinterpret_cast<const char *>(sqlite3_column_text(q.st, 0));
  *found = text ? text : "";
  return true;
}

}  // namespace

std::unique_ptr<MemoStore> MemoStore::open(const std::string &path, Access access,
                                           const std::string &fingerprint, std::string *error) {
  std::unique_ptr<MemoStore> s(new MemoStore);
  s->path_ = path;
  s->fingerprint_ = fingerprint;
  s->access_ = access;
  const int flags = access == Access::ReadOnly ? SQLITE_OPEN_READONLY
                                               : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &s->db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    *error = "cannot open " + path + ": " + (s->db_ ? sqlite3_errmsg(s->db_) : "out of memory");
    return nullptr;
  }
  sqlite3_busy_timeout(s->db_, kBusyTimeoutMs);
  s->exec("PRAGMA mmap_size=268435456;", nullptr);  // reads without a copy per page
  std::string found, why;
  // A file that already carries a fingerprint was set up by an earlier process: opening it
  // only reads (a warm start's first call pays for every statement parsed here).
  bool ready = stored_fingerprint(s->db_, &found, &why) && s->prepare_reads();
  if (access == Access::ReadWrite) {
    // NORMAL sync (a property of the connection): a crash of the process (kill -9) loses
    // nothing committed, only power loss may drop the last transactions (never corrupts).
    s->exec("PRAGMA synchronous=NORMAL;", nullptr);
    // Another program's file (a foreign fingerprint) is never written to.
    if (!ready && (found.empty() || found == fingerprint)) {
      if (!s->set_up(&why)) {
        *error = path + ": " + why;
        return nullptr;
      }
      if (!stored_fingerprint(s->db_, &found, &why)) {
        *error = path + " is not a tessel memo database (" + why + ")";
        return nullptr;
      }
    }
  }
  if (found.empty()) {
    *error = path + " is not a tessel memo database (" + why + ")";
    return nullptr;
  }
  if (found != fingerprint) {
    *error = path + " was made for another CPU or tessel version (" + found + "; this is " +
             fingerprint + ")";
    return nullptr;
  }
  if (!ready && !s->prepare_reads()) {
    *error = path + ": " + sqlite3_errmsg(s->db_);
    return nullptr;
  }
  return s;
}

bool MemoStore::set_up(std::string *why) {
  // WAL (a property of the file, kept once set): readers never block writers. Switching a new
  // file to WAL takes an exclusive lock that the busy timeout does not cover, so processes
  // creating the database together retry.
  for (int attempt = 0; attempt < 200; ++attempt) {
    int code = SQLITE_OK;
    auto run = [&](const std::string &sql) {
      if (exec(sql.c_str(), why)) return true;
      code = sqlite3_errcode(db_) & 0xff;
      return false;
    };
    if (run("PRAGMA journal_mode=WAL;") && run("BEGIN IMMEDIATE;")) {
      if (run(kSchema) &&
          run("INSERT OR IGNORE INTO meta VALUES('fingerprint', '" + fingerprint_ + "');") &&
          run("COMMIT;"))
        return true;
      exec("ROLLBACK;", nullptr);
    }
    if (code != SQLITE_BUSY && code != SQLITE_LOCKED) return false;
    usleep(25000);
  }
  return false;
}

bool MemoStore::prepare(const char *sql, sqlite3_stmt **st) {
  if (*st) return true;
  return sqlite3_prepare_v2(db_, sql, -1, st, nullptr) == SQLITE_OK;
}

bool MemoStore::prepare_reads() {
  return prepare(
             "SELECT data FROM blocks WHERE class_lo = ?1 AND class_hi = ?2 AND m = ?3 AND "
             "n = ?4 AND k = ?5 ORDER BY part;",
             &select_) &&
         prepare(
             "SELECT data FROM plans WHERE w0 = ?1 AND w1 = ?2 AND w2 = ?3 AND w3 = ?4 AND "
             "w4 = ?5;",
             &select_plan_);
}

bool MemoStore::prepare_writes() {
  return prepare("INSERT OR REPLACE INTO blocks VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7);", &upsert_) &&
         prepare(
             "DELETE FROM blocks WHERE class_lo = ?1 AND class_hi = ?2 AND m = ?3 AND "
             "n = ?4 AND k = ?5;",
             &delete_) &&
         prepare(
             "SELECT count(*) FROM blocks WHERE class_lo = ?1 AND class_hi = ?2 AND "
             "m = ?3 AND n = ?4 AND k = ?5;",
             &count_) &&
         prepare("INSERT OR REPLACE INTO plans VALUES(?1, ?2, ?3, ?4, ?5, ?6);", &upsert_plan_);
}

MemoStore::~MemoStore() {
  sqlite3_finalize(select_);
  sqlite3_finalize(upsert_);
  sqlite3_finalize(delete_);
  sqlite3_finalize(count_);
  sqlite3_finalize(select_plan_);
  sqlite3_finalize(upsert_plan_);
  sqlite3_close(db_);
}

bool MemoStore::exec(const char *sql, std::string *error) {
  char *message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) == SQLITE_OK) return true;
  if (error) *error = message ? message : sqlite3_errmsg(db_);
  sqlite3_free(message);
  return false;
}

MemoStore::Read MemoStore::read_block(const BlockId &id, std::vector<StoredEntry> *out,
                                      std::string *why) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++block_reads_;
  int parts = 0;
  return read_parts(id, out, why, &parts);
}

MemoStore::Read MemoStore::read_parts(const BlockId &id, std::vector<StoredEntry> *out,
                                      std::string *why, int *parts) {
  const size_t first = out->size();
  sqlite3_reset(select_);
  bind_id(select_, id);
  int rc;
  bool damaged = false;
  while ((rc = sqlite3_step(select_)) == SQLITE_ROW) {
    ++*parts;
    if (!damaged && !decode_block(id, column_blob(select_, 0), out, why)) damaged = true;
  }
  if (rc != SQLITE_DONE) {
    *why = sqlite3_errmsg(db_);
    damaged = true;
  }
  sqlite3_reset(select_);
  if (damaged) {
    out->resize(first);
    damaged_.insert(id);  // the next merge into this block rewrites it
  }
  return damaged ? Read::Damaged : *parts ? Read::Found : Read::Missing;
}

MemoStore::Read MemoStore::read_plan(const SpecKey &root, PlanRecord *out, std::string *why) {
  std::lock_guard<std::mutex> lock(mutex_);
  sqlite3_reset(select_plan_);
  bind_root(select_plan_, root);
  const int rc = sqlite3_step(select_plan_);
  Read result = Read::Missing;
  if (rc == SQLITE_ROW) {
    result = decode_plan_record(root, column_blob(select_plan_, 0), out, why) ? Read::Found
                                                                              : Read::Damaged;
  } else if (rc != SQLITE_DONE) {
    *why = sqlite3_errmsg(db_);
    result = Read::Damaged;
  }
  sqlite3_reset(select_plan_);
  return result;
}

bool MemoStore::merge(std::span<const StoredEntry> entries, const std::vector<PlanRecord> &plans,
                      std::string *error) {
  if (access_ == Access::ReadOnly) {
    *error = "the database is open read-only";
    return false;
  }
  if (file_bytes() > size_limit_) {
    *error = path_ + " has reached its size limit (" + std::to_string(size_limit_ >> 20) +
             " MiB); see `tessel db clear`";
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // Statements that write are parsed at the first write: a process that only replays stored
  // plans never needs them.
  if (!prepare_writes()) {
    *error = path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  if (!exec("BEGIN IMMEDIATE;", error)) return false;
  if (merge_locked(entries, plans, error) && exec("COMMIT;", error)) return true;
  exec("ROLLBACK;", nullptr);
  return false;
}

bool MemoStore::merge_locked(std::span<const StoredEntry> entries,
                             const std::vector<PlanRecord> &plans, std::string *error) {
  for (const PlanRecord &p : plans) {
    const std::string blob = encode_plan_record(p);
    sqlite3_reset(upsert_plan_);
    bind_root(upsert_plan_, p.root);
    sqlite3_bind_blob(upsert_plan_, 6, blob.data(), static_cast<int>(blob.size()),
                      SQLITE_TRANSIENT);
    const int rc = sqlite3_step(upsert_plan_);
    sqlite3_reset(upsert_plan_);
    if (rc != SQLITE_DONE) {
      *error = sqlite3_errmsg(db_);
      return false;
    }
  }
  // The entries grouped by block, in their order within each block (a later entry for a key
  // wins). Grouped through a map of a vector per block, a cold 1000^3's 90k entries took
  // 31-38 ms of its 74 ms merge; sorted, 8-11.
  using Placed = std::pair<BlockId, size_t>;
  std::vector<Placed, ZeroedAllocator<Placed>> order(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) order[i] = {block_of(entries[i].key), i};
  std::sort(order.begin(), order.end());
  std::vector<StoredEntry> fresh, merged;
  auto step = [&](sqlite3_stmt *st) {
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) return true;
    *error = sqlite3_errmsg(db_);
    return false;
  };
  for (size_t begin = 0, end; begin < order.size(); begin = end) {
    const BlockId id = order[begin].first;
    fresh.clear();
    for (end = begin; end < order.size() && order[end].first == id; ++end)
      fresh.push_back(entries[order[end].second]);
    bind_id(count_, id);
    int parts = sqlite3_step(count_) == SQLITE_ROW ? sqlite3_column_int(count_, 0) : 0;
    sqlite3_reset(count_);
    const std::vector<StoredEntry> *write = &fresh;
    // Rewrite as one part when there are many, or when a read found the block damaged (only
    // what decodes is kept; the fresh entries win).
    if (parts + 1 >= kMaxParts || damaged_.erase(id)) {
      merged.clear();
      std::string why;
      int read = 0;
      if (read_parts(id, &merged, &why, &read) == Read::Damaged) merged.clear();
      bind_id(delete_, id);
      if (!step(delete_)) return false;
      merged.insert(merged.end(), fresh.begin(), fresh.end());  // the fresh entries win
      write = &merged;
      parts = 0;
    }
    const std::string blob = encode_block(id, *write);
    bind_id(upsert_, id);
    sqlite3_bind_int64(upsert_, 6, parts);
    sqlite3_bind_blob(upsert_, 7, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    if (!step(upsert_)) return false;
  }
  return true;
}

bool MemoStore::for_each_row(const char *sql, const std::function<void(sqlite3_stmt *)> &row,
                             std::string *error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement q;
  if (sqlite3_prepare_v2(db_, sql, -1, &q.st, nullptr) != SQLITE_OK) {
    *error = sqlite3_errmsg(db_);
    return false;
  }
  int rc;
  while ((rc = sqlite3_step(q.st)) == SQLITE_ROW) row(q.st);
  if (rc != SQLITE_DONE) {
    *error = sqlite3_errmsg(db_);
    return false;
  }
  return true;
}

bool MemoStore::for_each_block(const std::function<void(const BlockId &, std::string_view)> &f,
                               std::string *error) {
  return for_each_row(
      "SELECT class_lo, class_hi, m, n, k, data FROM blocks;",
      [&](sqlite3_stmt *st) { f(column_id(st), column_blob(st, 5)); }, error);
}

bool MemoStore::for_each_block_id(const std::function<void(const BlockId &)> &f,
                                  std::string *error) {
  return for_each_row(
      "SELECT class_lo, class_hi, m, n, k FROM blocks;",
      [&](sqlite3_stmt *st) { f(column_id(st)); }, error);
}

bool MemoStore::for_each_plan(const std::function<void(const SpecKey &, std::string_view)> &f,
                              std::string *error) {
  return for_each_row(
      "SELECT w0, w1, w2, w3, w4, data FROM plans;",
      [&](sqlite3_stmt *st) { f(column_root(st), column_blob(st, 5)); }, error);
}

bool MemoStore::clear(std::string *error) {
  if (access_ == Access::ReadOnly) {
    *error = "the database is open read-only";
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return exec("DELETE FROM blocks; DELETE FROM plans;", error) && exec("VACUUM;", error);
}

bool MemoStore::export_to(const std::string &path, std::string *error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement q;
  if (sqlite3_prepare_v2(db_, "VACUUM INTO ?1;", -1, &q.st, nullptr) != SQLITE_OK) {
    *error = sqlite3_errmsg(db_);
    return false;
  }
  sqlite3_bind_text(q.st, 1, path.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(q.st) != SQLITE_DONE) {
    *error = "exporting to " + path + ": " + sqlite3_errmsg(db_);
    return false;
  }
  return true;
}

bool MemoStore::import_from(const std::string &path, size_t *blocks, size_t *damaged,
                            std::string *error) {
  std::unique_ptr<MemoStore> other = open(path, Access::ReadOnly, fingerprint_, error);
  if (!other) return false;
  *blocks = *damaged = 0;
  std::vector<StoredEntry> entries;
  std::string why;
  std::vector<PlanRecord> plans;
  const bool read = other->for_each_block(
                        [&](const BlockId &id, std::string_view blob) {
                          if (decode_block(id, blob, &entries, &why)) {
                            ++*blocks;
                          } else {
                            ++*damaged;
                          }
                        },
                        error) &&
                    other->for_each_plan(
                        [&](const SpecKey &root, std::string_view blob) {
                          PlanRecord p;
                          if (decode_plan_record(root, blob, &p, &why)) {
                            plans.push_back(std::move(p));
                          } else {
                            ++*damaged;
                          }
                        },
                        error);
  return read && merge(entries, plans, error);
}

int64_t MemoStore::file_bytes() const {
  return size_of(path_) + size_of(path_ + "-wal");
}

}  // namespace tessel
