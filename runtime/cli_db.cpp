// tessel db path|stats|verify|clear|export FILE|import FILE: the memo database by hand.
#include <sys/stat.h>

#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "action.h"
#include "cli.h"
#include "compiler.h"
#include "database.h"
#include "fingerprint.h"
#include "plan.h"

namespace tessel::cli {
namespace {

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::unique_ptr<MemoStore> open_or_say(MemoStore::Access access) {
  std::string error;
  std::unique_ptr<MemoStore> store = runtime::open_database(access, &error);
  if (!store) std::fprintf(stderr, "tessel: %s\n", error.c_str());
  return store;
}

struct Survey {
  std::set<std::pair<uint64_t, uint64_t>> tables;
  size_t blocks = 0, damaged = 0, entries = 0, runs = 0, decisions = 0, blob_bytes = 0;
  size_t invalid = 0;  // decisions the enumeration does not offer for their spec
  size_t plans = 0, damaged_plans = 0, plan_bytes = 0;
  size_t stale_plans = 0;  // intact plan records that do not replay (replay_plan)
};

// Decodes every block and plan record; with `replay`, also checks each decision against the
// enumeration and rebuilds each plan from its record.
bool survey(MemoStore &store, bool replay, Survey *out) {
  const Target &target = runtime::host_target();
  std::vector<Action> actions;
  std::string error;
  const bool ok =
      store.for_each_block(
          [&](const BlockId &id, std::string_view blob) {
            std::vector<StoredEntry> entries;
            std::string why;
            BlockCounts counts;
            ++out->blocks;
            out->blob_bytes += blob.size();
            if (!decode_block(id, blob, &entries, &why, &counts)) {
              ++out->damaged;
              std::fprintf(stderr, "damaged block (class %llx/%llx, cube %u,%u,%u): %s\n",
                           (unsigned long long)id.class_lo, (unsigned long long)id.class_hi, id.m,
                           id.n, id.k, why.c_str());
              return;
            }
            out->tables.insert({id.class_lo, id.class_hi});
            out->entries += counts.entries;
            out->runs += counts.runs;
            out->decisions += counts.decisions;
            if (!replay) return;
            for (const StoredEntry &e : entries) {
              if (!e.decision.solvable) continue;
              const Spec s = spec_from_key(e.key);
              if (canonical(s) != s || !action_applies(s, e.decision.action, target, actions))
                ++out->invalid;
            }
          },
          &error) &&
      store.for_each_plan(
          [&](const SpecKey &root, std::string_view blob) {
            PlanRecord record;
            std::string why;
            ++out->plans;
            out->plan_bytes += blob.size();
            if (!decode_plan_record(root, blob, &record, &why)) {
              ++out->damaged_plans;
              std::fprintf(stderr, "damaged plan record (%s): %s\n",
                           to_string(spec_from_key(root)).c_str(), why.c_str());
              return;
            }
            Plan plan;
            if (replay && !replay_plan(record, spec_from_key(root), target, &plan)) {
              ++out->stale_plans;
              std::fprintf(stderr, "plan record that does not replay (%s)\n",
                           to_string(spec_from_key(root)).c_str());
            }
          },
          &error);
  if (!ok) std::fprintf(stderr, "tessel: reading %s: %s\n", store.path().c_str(), error.c_str());
  return ok;
}

int stats() {
  auto store = open_or_say(MemoStore::Access::ReadOnly);
  if (!store) return 1;
  Survey s;
  if (!survey(*store, false, &s)) return 1;
  const double plain = double(s.entries) * kPlainEntryBytes;
  std::printf("database     %s\nfingerprint  %s\n", store->path().c_str(),
              store->fingerprint().c_str());
  std::printf("tables       %zu (op, dtype, operand levels and layouts, threads)\n",
              s.tables.size());
  std::printf("block parts  %zu (%zu damaged; a block is rewritten as one part at eight)\n",
              s.blocks, s.damaged);
  std::printf("specs        %zu in %zu runs, %zu distinct decisions per block summed\n", s.entries,
              s.runs, s.decisions);
  std::printf(
      "plan records %zu (%zu damaged), %zu bytes: one per top-level spec, for one-read "
      "warm starts\n",
      s.plans, s.damaged_plans, s.plan_bytes);
  std::printf("block bytes  %zu (%.2f per spec)\n", s.blob_bytes,
              s.entries ? double(s.blob_bytes) / s.entries : 0.0);
  std::printf("file bytes   %lld (%.2f per spec, with SQLite's pages and log)\n",
              (long long)store->file_bytes(),
              s.entries ? double(store->file_bytes()) / s.entries : 0.0);
  std::printf(
      "plain dump   %.0f bytes (%zu per spec): compression %.1fx in blocks, %.1fx on disk\n", plain,
      kPlainEntryBytes, s.blob_bytes ? plain / s.blob_bytes : 0.0,
      store->file_bytes() ? plain / store->file_bytes() : 0.0);
  return 0;
}

int verify() {
  auto store = open_or_say(MemoStore::Access::ReadOnly);
  if (!store) return 1;
  Survey s;
  if (!survey(*store, true, &s)) return 1;
  std::printf(
      "%s: %zu blocks, %zu specs, %zu plan records; %zu damaged blocks, %zu damaged plan "
      "records, %zu decisions and %zu plan records that do not apply\n",
      store->path().c_str(), s.blocks, s.entries, s.plans, s.damaged, s.damaged_plans, s.invalid,
      s.stale_plans);
  return s.damaged || s.damaged_plans || s.invalid || s.stale_plans ? 1 : 0;
}

}  // namespace

int cmd_db(int argc, char **argv) {
  if (argc < 1) return usage("db needs a command: path, stats, verify, clear, export, import");
  const std::string cmd = argv[0];
  const bool takes_file = cmd == "export" || cmd == "import";
  if (argc != (takes_file ? 2 : 1))
    return usage(takes_file ? "db export and db import take one FILE"
                            : "this db command takes no argument");
  if (cmd == "path") {
    std::string problem;
    const std::string path = runtime::database_path(&problem);
    if (path.empty()) {
      std::fprintf(stderr, "tessel: no database location: %s\n", problem.c_str());
      return 1;
    }
    std::printf("%s%s\n", path.c_str(), exists(path) ? "" : " (not created yet)");
    return 0;
  }
  if (cmd == "stats") return stats();
  if (cmd == "verify") return verify();
  std::string error;
  if (cmd == "clear") {
    auto store = open_or_say(MemoStore::Access::ReadWrite);
    if (!store) return 1;
    if (!store->clear(&error)) {
      std::fprintf(stderr, "tessel: %s\n", error.c_str());
      return 1;
    }
    std::printf("cleared %s\n", store->path().c_str());
    return 0;
  }
  const std::string file = argv[1];
  if (cmd == "export") {
    if (exists(file)) {
      std::fprintf(stderr, "tessel: %s exists; export writes a new file\n", file.c_str());
      return 1;
    }
    auto store = open_or_say(MemoStore::Access::ReadOnly);
    if (!store) return 1;
    if (!store->export_to(file, &error)) {
      std::fprintf(stderr, "tessel: %s\n", error.c_str());
      return 1;
    }
    std::printf("exported %s to %s\n", store->path().c_str(), file.c_str());
    return 0;
  }
  if (cmd == "import") {
    if (!exists(file)) {
      std::fprintf(stderr, "tessel: %s does not exist\n", file.c_str());
      return 1;
    }
    auto store = open_or_say(MemoStore::Access::ReadWrite);
    if (!store) return 1;
    size_t blocks = 0, damaged = 0;
    if (!store->import_from(file, &blocks, &damaged, &error)) {
      std::fprintf(stderr, "tessel: refusing to import: %s\n", error.c_str());
      return 1;
    }
    std::printf("imported %zu blocks from %s into %s", blocks, file.c_str(), store->path().c_str());
    if (damaged) std::printf(" (skipped %zu damaged blocks)", damaged);
    std::printf("\n");
    return 0;
  }
  return usage(("unknown db command '" + cmd + "'").c_str());
}

}  // namespace tessel::cli
