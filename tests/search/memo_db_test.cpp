// The memo database: block encoding and its damage detection, the SQLite store, and decisions
// replayed through LayeredMemo or plan records against plain searches.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "decision_cache.h"
#include "fingerprint.h"
#include "layered_memo.h"
#include "memo_block.h"
#include "memo_store.h"
#include "plan.h"
#include "solver.h"
#include "test_target.h"

namespace tessel {
namespace {

// A fresh directory per test, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/tessel-memo-test-XXXXXX";
    REQUIRE(mkdtemp(name));
    path = name;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// Random entries inside one block, with runs along k and repeated decisions.
std::vector<StoredEntry> random_block(std::mt19937_64 &rng, BlockId *id) {
  const Spec base = matmul_spec(70, 130, 200, false, true, false, 1, test::test_target().limits());
  SpecKey key = spec_key(base);
  *id = block_of(key);
  std::vector<StoredEntry> entries;
  std::uniform_int_distribution<int> off(0, kBlockSpan - 1), kind(0, int(ActionKind::Kernel));
  const Decision choices[3] = {
      {true, {ActionKind::Tile, 0, 0, 16}}, {true, {ActionKind::Kernel, 2, 0, 0}}, {false, {}}};
  for (int i = 0; i < 300; ++i) {
    const uint64_t m = (uint64_t{id->m} << kBlockShift) + off(rng);
    const uint64_t n = (uint64_t{id->n} << kBlockShift) + off(rng);
    const uint64_t k = (uint64_t{id->k} << kBlockShift) + off(rng);
    StoredEntry e;
    e.key = key;
    e.key[2] = m | n << 32;
    e.key[3] = (key[3] & ~uint64_t{0xffffffff}) | k;
    e.decision =
        i % 5 == 4 ? Decision{true, {ActionKind(kind(rng)), 1, 2, -7 + i}} : choices[i % 3];
    entries.push_back(e);
  }
  return entries;
}

std::map<SpecKey, Decision> as_map(const std::vector<StoredEntry> &v) {
  std::map<SpecKey, Decision> m;
  for (const StoredEntry &e : v) m[e.key] = e.decision;  // the last one wins
  return m;
}

TEST_CASE("a block decodes to exactly what was encoded, last entry per key winning") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    BlockId id;
    const std::vector<StoredEntry> entries = random_block(rng, &id);
    const std::string blob = encode_block(id, entries);
    std::vector<StoredEntry> back;
    std::string why;
    BlockCounts counts;
    REQUIRE_MESSAGE(decode_block(id, blob, &back, &why, &counts), why);
    CHECK(as_map(back) == as_map(entries));
    CHECK(counts.entries == back.size());
    CHECK(counts.runs <= counts.entries);
  }
}

TEST_CASE("adjacent k with one decision are stored as one run") {
  const Spec s = matmul_spec(8, 8, 1, false, false, false, 1, test::test_target().limits());
  std::vector<StoredEntry> entries;
  for (int k = 1; k <= 40; ++k) {
    Spec t = s;
    t.dims[2] = k;
    entries.push_back({spec_key(t), Decision{true, {ActionKind::Kernel, 0, 0, 0}}});
  }
  const BlockId id = block_of(entries[0].key);
  std::vector<StoredEntry> back;
  std::string why;
  BlockCounts counts;
  REQUIRE(decode_block(id, encode_block(id, entries), &back, &why, &counts));
  CHECK(counts.runs == 1);
  CHECK(counts.entries == 40);
  CHECK(as_map(back) == as_map(entries));
}

TEST_CASE("every flipped bit, every truncation and a misplaced block are detected") {
  std::mt19937_64 rng(11);
  BlockId id;
  const std::string blob = encode_block(id, random_block(rng, &id));
  std::vector<StoredEntry> out;
  std::string why;
  for (size_t i = 0; i < blob.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = blob;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      CHECK_FALSE(decode_block(id, bad, &out, &why));
    }
  for (size_t len = 0; len < blob.size(); ++len)
    CHECK_FALSE(decode_block(id, std::string_view(blob).substr(0, len), &out, &why));
  BlockId other = id;
  other.k += 1;
  CHECK_FALSE(decode_block(other, blob, &out, &why));
  CHECK(out.empty());  // failures never leave partial entries behind
}

TEST_CASE("one merge of interleaved blocks keeps each key's last entry") {
  TempDir dir;
  std::string error;
  auto store = MemoStore::open(dir.path + "/memo.sqlite", MemoStore::Access::ReadWrite,
                               memo_fingerprint(test::test_target()), &error);
  REQUIRE_MESSAGE(store, error);
  std::mt19937_64 rng(11);
  BlockId id;
  const std::vector<StoredEntry> block = random_block(rng, &id);
  std::vector<StoredEntry> other = block;  // the same entries, one block further along m
  BlockId other_id = id;
  other_id.m += 1;
  for (StoredEntry &e : other) e.key[2] += uint64_t{kBlockSpan};
  REQUIRE(block_of(other[0].key) == other_id);
  // Alternating between the blocks, then every key of both again with a new decision.
  std::vector<StoredEntry> batch;
  for (size_t i = 0; i < block.size(); ++i) {
    batch.push_back(other[i]);
    batch.push_back(block[i]);
  }
  const Decision later{true, {ActionKind::SplitK, 0, 0, 32}};
  for (size_t i = block.size(); i-- > 0;) {
    batch.push_back({block[i].key, later});
    batch.push_back({other[i].key, later});
  }
  REQUIRE(store->merge(batch, &error));
  for (const BlockId &b : {id, other_id}) {
    std::vector<StoredEntry> back;
    std::string why;
    REQUIRE(store->read_block(b, &back, &why) == MemoStore::Read::Found);
    const std::map<SpecKey, Decision> got = as_map(back);
    CHECK(got.size() == as_map(block).size());
    for (const auto &[key, decision] : got) {
      CHECK(block_of(key) == b);
      CHECK(decision == later);
    }
  }
}

TEST_CASE("the store keeps merged blocks across reopening and refuses foreign files") {
  TempDir dir;
  const std::string path = dir.path + "/memo.sqlite";
  const std::string fp = memo_fingerprint(test::test_target());
  std::mt19937_64 rng(3);
  BlockId id;
  const std::vector<StoredEntry> first = random_block(rng, &id);
  std::string error;
  {
    auto store = MemoStore::open(path, MemoStore::Access::ReadWrite, fp, &error);
    REQUIRE_MESSAGE(store, error);
    REQUIRE(store->merge(first, &error));
  }
  // A second merge into the same block keeps the first entries; its own win on equal keys.
  std::vector<StoredEntry> second = first;
  second.resize(10);
  for (StoredEntry &e : second) e.decision = Decision{true, {ActionKind::SplitK, 0, 0, 64}};
  {
    auto store = MemoStore::open(path, MemoStore::Access::ReadWrite, fp, &error);
    REQUIRE(store->merge(second, &error));
  }
  auto store = MemoStore::open(path, MemoStore::Access::ReadOnly, fp, &error);
  REQUIRE_MESSAGE(store, error);
  std::vector<StoredEntry> back;
  std::string why;
  REQUIRE(store->read_block(id, &back, &why) == MemoStore::Read::Found);
  std::map<SpecKey, Decision> expected = as_map(first);
  for (const StoredEntry &e : second) expected[e.key] = e.decision;
  CHECK(as_map(back) == expected);
  CHECK_FALSE(store->merge(second, &error));  // read-only

  BlockId absent = id;
  absent.m += 1;
  back.clear();
  CHECK(store->read_block(absent, &back, &why) == MemoStore::Read::Missing);

  store.reset();
  // Opening a database set up before only reads it, and a foreign one is left as it was.
  auto bytes = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = bytes();
  REQUIRE(MemoStore::open(path, MemoStore::Access::ReadWrite, fp, &error));
  CHECK(bytes() == before);
  CHECK_FALSE(MemoStore::open(path, MemoStore::Access::ReadWrite, fp + " other-cpu", &error));
  CHECK(error.find("another CPU or tessel version") != std::string::npos);
  CHECK(bytes() == before);
  std::ofstream(dir.path + "/junk.sqlite") << "this is not a database, only text";
  CHECK_FALSE(MemoStore::open(dir.path + "/junk.sqlite", MemoStore::Access::ReadWrite, fp, &error));
  CHECK_FALSE(
      MemoStore::open(dir.path + "/none/x.sqlite", MemoStore::Access::ReadWrite, fp, &error));
}

TEST_CASE("a damaged block in the file reads as damaged, and the next merge replaces it") {
  TempDir dir;
  const std::string path = dir.path + "/memo.sqlite";
  const std::string fp = memo_fingerprint(test::test_target());
  std::mt19937_64 rng(5);
  BlockId id;
  const std::vector<StoredEntry> entries = random_block(rng, &id);
  std::string error;
  auto store = MemoStore::open(path, MemoStore::Access::ReadWrite, fp, &error);
  REQUIRE(store->merge(entries, &error));
  {  // Flip one byte of the stored blob behind the store's back.
    sqlite3 *db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "UPDATE blocks SET data = CAST(data AS BLOB) || x'00';", nullptr,
                         nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  std::vector<StoredEntry> back;
  std::string why;
  CHECK(store->read_block(id, &back, &why) == MemoStore::Read::Damaged);
  CHECK(back.empty());
  const std::vector<StoredEntry> fresh(entries.begin(), entries.begin() + 5);
  REQUIRE(store->merge(fresh, &error));
  CHECK(store->read_block(id, &back, &why) == MemoStore::Read::Found);
  CHECK(as_map(back) == as_map(fresh));
}

TEST_CASE("the size limit stops writes with a reason") {
  TempDir dir;
  std::string error;
  auto store = MemoStore::open(dir.path + "/memo.sqlite", MemoStore::Access::ReadWrite,
                               memo_fingerprint(test::test_target()), &error);
  REQUIRE(store);
  store->set_size_limit(1);
  std::mt19937_64 rng(1);
  BlockId id;
  CHECK_FALSE(store->merge(random_block(rng, &id), &error));
  CHECK(error.find("size limit") != std::string::npos);
}

TEST_CASE("export and import move decisions between stores of one fingerprint only") {
  TempDir dir;
  const std::string fp = memo_fingerprint(test::test_target());
  std::string error;
  std::mt19937_64 rng(9);
  BlockId id;
  const std::vector<StoredEntry> entries = random_block(rng, &id);
  auto source = MemoStore::open(dir.path + "/a.sqlite", MemoStore::Access::ReadWrite, fp, &error);
  REQUIRE(source->merge(entries, &error));
  REQUIRE_MESSAGE(source->export_to(dir.path + "/export.sqlite", &error), error);
  auto target = MemoStore::open(dir.path + "/b.sqlite", MemoStore::Access::ReadWrite, fp, &error);
  size_t blocks = 0, damaged = 0;
  REQUIRE_MESSAGE(target->import_from(dir.path + "/export.sqlite", &blocks, &damaged, &error),
                  error);
  CHECK(blocks == 1);
  CHECK(damaged == 0);
  std::vector<StoredEntry> back;
  std::string why;
  REQUIRE(target->read_block(id, &back, &why) == MemoStore::Read::Found);
  CHECK(as_map(back) == as_map(entries));

  auto foreign =
      MemoStore::open(dir.path + "/c.sqlite", MemoStore::Access::ReadWrite, fp + "x", &error);
  REQUIRE(foreign->merge(entries, &error));
  foreign.reset();
  CHECK_FALSE(target->import_from(dir.path + "/c.sqlite", &blocks, &damaged, &error));
  CHECK(error.find("another CPU") != std::string::npos);
}

// Plans through a layered memo over `cache`, publishing what was solved with the plan record.
Plan plan_through(DecisionCache &cache, const Spec &spec, int64_t *specs_solved,
                  int64_t *rejected = nullptr) {
  InMemoryMemo local;
  LayeredMemo memo(local, cache, test::test_target());
  Solver solver(test::test_target(), memo);
  Plan plan;
  REQUIRE(build_plan(solver, spec, &plan));
  const PlanRecord record = plan_record(plan);
  cache.publish(memo.take_solved(), &record);
  *specs_solved = solver.stats().specs_solved;
  if (rejected) *rejected = memo.rejected();
  return plan;
}

// Every field of two plans (format_plan prints costs to four digits only).
void check_same_plan(const Plan &p, const Plan &q) {
  REQUIRE(p.nodes.size() == q.nodes.size());
  REQUIRE(p.tensors.size() == q.tensors.size());
  CHECK(p.root == q.root);
  CHECK(p.workspace_bytes == q.workspace_bytes);
  CHECK(p.cost == q.cost);
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const PlanNode &a = p.nodes[i], &b = q.nodes[i];
    CAPTURE(i);
    CHECK(a.kind == b.kind);
    CHECK(a.spec == b.spec);
    CHECK(a.action == b.action);
    CHECK(a.cost == b.cost);
    CHECK(a.tensors == b.tensors);
    CHECK(a.dim == b.dim);
    CHECK(a.step == b.step);
    CHECK(a.trips == b.trips);
    CHECK(a.step2 == b.step2);
    CHECK(a.trips2 == b.trips2);
    CHECK(a.operand == b.operand);
    CHECK(a.new_tensor == b.new_tensor);
    CHECK(a.children == b.children);
    CHECK(a.kernel == b.kernel);
  }
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const PlanTensor &a = p.tensors[i], &b = q.tensors[i];
    CAPTURE(i);
    CHECK(a.role == b.role);
    CHECK(a.spec == b.spec);
    CHECK(a.rows == b.rows);
    CHECK(a.cols == b.cols);
    CHECK(a.ext == b.ext);
    CHECK(a.workspace_offset == b.workspace_offset);
    CHECK(a.bytes == b.bytes);
  }
}

TEST_CASE("plans replayed from a reopened database equal plans searched from scratch") {
  TempDir dir;
  const std::string path = dir.path + "/memo.sqlite";
  const std::string fp = memo_fingerprint(test::test_target());
  const Target &t = test::test_target();
  const std::vector<Spec> specs = {
      matmul_spec(64, 64, 64, false, false, false, 1, t.limits()),
      matmul_spec(17, 65, 33, true, false, false, 1, t.limits()),
      matmul_spec(96, 40, 129, false, true, true, 1, t.limits()),
      matmul_spec(1, 512, 300, false, false, false, 1, t.limits()),
      matmul_spec(48, 200, 64, false, false, false, 2, t.limits()),
      matmul_spec(130, 70, 300, false, false, false, 2, t.limits(), 4096, 8192),
  };
  std::vector<Plan> cold;
  {
    std::string error;
    auto store = MemoStore::open(path, MemoStore::Access::ReadWrite, fp, &error);
    REQUIRE(store);
    DecisionCache cache(store.get());
    for (const Spec &s : specs) {
      InMemoryMemo plain;
      Solver solver(t, plain);
      Plan reference;
      REQUIRE(build_plan(solver, s, &reference));
      int64_t solved = 0;
      const Plan p = plan_through(cache, s, &solved);
      check_same_plan(p, reference);
      cold.push_back(p);
    }
  }
  std::string error;
  {
    // The plan record alone rebuilds each plan: no block is read, nothing is searched.
    auto store = MemoStore::open(path, MemoStore::Access::ReadOnly, fp, &error);
    REQUIRE(store);
    DecisionCache cache(store.get());
    for (size_t i = 0; i < specs.size(); ++i) {
      PlanRecord record;
      REQUIRE(cache.read_plan(spec_key(canonical(specs[i])), &record));
      CHECK(record.actions.size() == cold[i].nodes.size());
      Plan p;
      REQUIRE(replay_plan(record, specs[i], t, &p));
      check_same_plan(p, cold[i]);
    }
    CHECK(store->block_reads() == 0);
  }
  {
    // Without records, the decisions in the blocks replay to the same plans.
    auto store = MemoStore::open(path, MemoStore::Access::ReadOnly, fp, &error);
    REQUIRE(store);
    DecisionCache cache(store.get());
    for (size_t i = 0; i < specs.size(); ++i) {
      int64_t solved = -1, rejected = -1;
      const Plan p = plan_through(cache, specs[i], &solved, &rejected);
      CHECK(solved == 0);
      CHECK(rejected == 0);
      check_same_plan(p, cold[i]);
    }
    CHECK(store->block_reads() > 0);
  }
}

TEST_CASE("plan records round trip and detect damage") {
  const Target &t = test::test_target();
  InMemoryMemo memo;
  Solver solver(t, memo);
  Plan plan;
  REQUIRE(build_plan(solver, matmul_spec(40, 72, 33, false, false, false, 1, t.limits()), &plan));
  const PlanRecord record = plan_record(plan);
  REQUIRE(record.actions.size() == plan.nodes.size());
  const std::string blob = encode_plan_record(record);
  PlanRecord back;
  std::string why;
  REQUIRE(decode_plan_record(record.root, blob, &back, &why));
  CHECK(back.actions == record.actions);
  for (size_t i = 0; i < blob.size(); ++i) {
    std::string bad = blob;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    CHECK_FALSE(decode_plan_record(record.root, bad, &back, &why));
  }
  for (size_t len = 0; len < blob.size(); len += 3)
    CHECK_FALSE(
        decode_plan_record(record.root, std::string_view(blob).substr(0, len), &back, &why));
  SpecKey other = record.root;
  other[2] += 1;
  CHECK_FALSE(decode_plan_record(other, blob, &back, &why));
  CHECK(back.actions.empty());
}

TEST_CASE("a plan record that does not replay is refused, and the search still finds the plan") {
  const Target &t = test::test_target();
  const Spec spec = matmul_spec(100, 70, 90, false, true, false, 1, t.limits());
  InMemoryMemo plain;
  Solver solver(t, plain);
  Plan reference;
  REQUIRE(build_plan(solver, spec, &reference));
  const PlanRecord good = plan_record(reference);
  REQUIRE(good.actions.size() > 4);
  Plan p;
  REQUIRE(replay_plan(good, spec, t, &p));
  check_same_plan(p, reference);

  std::vector<std::pair<const char *, PlanRecord>> bad;
  auto variant = [&](const char *what, auto change) {
    PlanRecord r = good;
    change(r);
    bad.push_back({what, r});
  };
  variant("an action that does not apply", [](PlanRecord &r) {
    r.actions[1] = Action{ActionKind::Tile, 0, 0, 5};
  });
  variant("a kernel for the root", [](PlanRecord &r) { r.actions[0] = {ActionKind::Kernel}; });
  variant("one action short", [](PlanRecord &r) { r.actions.pop_back(); });
  variant("one action too many", [](PlanRecord &r) { r.actions.push_back(r.actions.back()); });
  variant("no actions", [](PlanRecord &r) { r.actions.clear(); });
  variant("two nodes swapped", [](PlanRecord &r) { std::swap(r.actions[1], r.actions[2]); });
  variant("another root", [](PlanRecord &r) { r.root[2] += 1; });
  for (const auto &[what, record] : bad) {
    CAPTURE(what);
    if (record.actions == good.actions && record.root == good.root) continue;
    // Written to a store and read back (checksums pass: only the replay can refuse it).
    TempDir dir;
    std::string error;
    auto store = MemoStore::open(dir.path + "/memo.sqlite", MemoStore::Access::ReadWrite,
                                 memo_fingerprint(t), &error);
    REQUIRE(store);
    REQUIRE(store->merge({}, {record}, &error));
    DecisionCache cache(store.get());
    PlanRecord read;
    const bool found = cache.read_plan(spec_key(canonical(spec)), &read);
    CHECK(found == (record.root == good.root));
    if (!found) read = record;
    Plan replayed;
    keep_room(replayed.nodes, 64);  // storage a thread keeps from plan to plan
    const bool ok = replay_plan(read, spec, t, &replayed);
    // Swapped actions may still make a plan (both apply where they land), but never a
    // different one passed off as this record's: all of it must be consumed, so here none.
    // The plan is left empty, its storage kept.
    CHECK_FALSE(ok);
    CHECK(replayed.nodes.empty());
    CHECK(replayed.tensors.empty());
    CHECK(replayed.root == -1);
    CHECK(replayed.nodes.capacity() >= 64);
    int64_t solved = 0;
    const Plan searched = plan_through(cache, spec, &solved);
    CHECK(solved > 0);
    check_same_plan(searched, reference);
    // The search wrote a good record in its place.
    REQUIRE(cache.read_plan(spec_key(canonical(spec)), &read));
    CHECK(read.actions == good.actions);
  }
}

TEST_CASE("a replayed plan is its record's own, where the record's subtrees recur too") {
  // A spec that recurs gets the subtree built for it first, copied, but only if the record's
  // actions there are that subtree's. Change one action inside a recurring subtree to each
  // other one its spec offers: a record that still replays must give a plan of exactly its
  // own actions (a copy taken regardless would give the first subtree's).
  const Target &t = test::test_target();
  int replayed = 0;
  for (const Spec &spec : {matmul_spec(40, 128, 257, false, false, false, 1, t.limits()),
                           matmul_spec(33, 300, 211, false, false, false, 1, t.limits())}) {
    InMemoryMemo memo;
    Solver solver(t, memo);
    Plan plan;
    REQUIRE(build_plan(solver, spec, &plan));
    const PlanRecord good = plan_record(plan);
    // Each node's subtree size, and whether it lies in a subtree whose root recurs.
    std::vector<size_t> size(plan.nodes.size(), 1);
    for (size_t id = plan.nodes.size(); id-- > 0;)
      for (int c : plan.nodes[id].children)
        if (c >= 0) size[id] += size[static_cast<size_t>(c)];
    std::vector<bool> in_recurring(plan.nodes.size(), false);
    for (size_t r = 0; r < plan.nodes.size(); ++r)
      for (size_t j = 0; j < r; ++j)
        if (plan.nodes[j].action == plan.nodes[r].action &&
            plan.nodes[j].spec == plan.nodes[r].spec) {
          for (size_t i = r + 1; i < r + size[r]; ++i) in_recurring[i] = true;
          break;
        }
    std::vector<Action> actions;
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      if (!in_recurring[i]) continue;
      actions.clear();
      enumerate_actions(plan.nodes[i].spec, t, actions);
      for (const Action &a : actions) {
        if (a == plan.nodes[i].action) continue;
        PlanRecord changed = good;
        changed.actions[i] = a;
        Plan p;
        if (!replay_plan(changed, spec, t, &p)) continue;
        ++replayed;
        CHECK(plan_record(p).actions == changed.actions);
      }
    }
  }
  CHECK(replayed > 0);  // the changes above do replay (35 of them when written)
}

TEST_CASE("a stored decision that does not apply is searched again, never used") {
  const Target &t = test::test_target();
  const Spec spec = matmul_spec(32, 32, 32, false, false, false, 1, t.limits());
  InMemoryMemo plain;
  Solver solver(t, plain);
  Plan reference;
  REQUIRE(build_plan(solver, spec, &reference));

  DecisionCache cache(nullptr);
  // The root "decided" on a kernel that cannot run it, and a sub-spec on a tile size that
  // does not exist; both must be rejected.
  const Spec sub = canonical(matmul_spec(32, 16, 32, false, false, false, 1, t.limits()));
  const StoredEntry wrong[] = {{spec_key(spec), Decision{true, {ActionKind::Kernel, 0, 0, 0}}},
                               {spec_key(sub), Decision{true, {ActionKind::Tile, 0, 0, 5}}}};
  cache.publish(wrong);
  int64_t solved = 0, rejected = 0;
  const Plan p = plan_through(cache, spec, &solved, &rejected);
  CHECK(rejected >= 1);
  CHECK(solved > 0);
  CHECK(format_plan(p) == format_plan(reference));
  CHECK(p.cost == reference.cost);
}

TEST_CASE("a small store is listed: absent blocks are not read, a reread finds new ones") {
  TempDir dir;
  const std::string path = dir.path + "/memo.sqlite";
  const std::string fp = memo_fingerprint(test::test_target());
  std::mt19937_64 rng(5);
  BlockId present_id, later_id;
  const std::vector<StoredEntry> present = random_block(rng, &present_id);
  std::vector<StoredEntry> later = random_block(rng, &later_id);
  for (StoredEntry &e : later) e.key[2] += uint64_t{kBlockSpan} << 32;  // the next block in n
  later_id = block_of(later[0].key);
  REQUIRE_FALSE(later_id == present_id);
  std::string error;
  auto store = MemoStore::open(path, MemoStore::Access::ReadWrite, fp, &error);
  REQUIRE_MESSAGE(store, error);
  REQUIRE(store->merge(present, &error));

  DecisionCache cache(store.get());
  Decision d;
  CHECK(cache.find(present[0].key, &d));  // listed, then read
  CHECK(d == as_map(present)[present[0].key]);
  const int64_t reads = store->block_reads();
  CHECK(reads == 1);
  CHECK_FALSE(cache.find(later[0].key, &d));  // not in the list: no read
  CHECK(store->block_reads() == reads);

  // Another process writes the block this one's list lacks: a reread sees it at once (a
  // plain find, at the next listing).
  auto other = MemoStore::open(path, MemoStore::Access::ReadWrite, fp, &error);
  REQUIRE(other->merge(later, &error));
  CHECK(cache.find(later[0].key, &d, /*reread=*/true));
  CHECK(d == as_map(later)[later[0].key]);
  // A block written after the listing, never asked for since, is found once the list has
  // expired (kListLife, 1 s).
  std::vector<StoredEntry> third = later;
  for (StoredEntry &e : third) e.key[2] += uint64_t{kBlockSpan} << 32;
  CHECK_FALSE(cache.find(third[0].key, &d));
  REQUIRE(other->merge(third, &error));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(cache.find(third[0].key, &d));
  CHECK(d == as_map(third)[third[0].key]);
}

TEST_CASE("a large store is read block by block until that costs as much as listing it") {
  TempDir dir;
  std::string error;
  auto store = MemoStore::open(dir.path + "/memo.sqlite", MemoStore::Access::ReadWrite,
                               memo_fingerprint(test::test_target()), &error);
  REQUIRE_MESSAGE(store, error);
  const SpecKey base =
      spec_key(matmul_spec(70, 130, 200, false, true, false, 1, test::test_target().limits()));
  // A key in block (i + 1, j + 1) along m and n.
  auto key_in = [&](uint64_t i, uint64_t j) {
    SpecKey key = base;
    key[2] = ((i + 1) << kBlockShift) | ((j + 1) << kBlockShift) << 32;
    return key;
  };
  std::vector<StoredEntry> entries;
  for (uint64_t i = 0; i < 12000; ++i)
    entries.push_back({key_in(i, 0), Decision{true, {ActionKind::Tile, 0, 0, 16}}});
  REQUIRE(store->merge(entries, &error));
  REQUIRE(store->file_bytes() > DecisionCache::kListAtOnceBytes);

  DecisionCache cache(store.get());
  const int64_t queries = store->file_bytes() / DecisionCache::kListBytesPerQuery;
  Decision d;
  for (int64_t q = 0; q < queries; ++q) CHECK_FALSE(cache.find(key_in(q, 1), &d));
  CHECK(store->block_reads() == queries);
  // Listed now: blocks it lacks are no longer read, those it holds still are.
  for (int64_t q = 0; q < 100; ++q) CHECK_FALSE(cache.find(key_in(q, 2), &d));
  CHECK(store->block_reads() == queries);
  CHECK(cache.find(entries[7].key, &d));
  CHECK(d == entries[7].decision);
  CHECK(store->block_reads() == queries + 1);
}

TEST_CASE("past their bound the shared decisions start over, and read the store again") {
  TempDir dir;
  const std::string path = dir.path + "/memo.sqlite";
  const std::string fp = memo_fingerprint(test::test_target());
  std::mt19937_64 rng(13);
  BlockId id;
  const std::vector<StoredEntry> stored = random_block(rng, &id);
  std::string error;
  {
    auto writer = MemoStore::open(path, MemoStore::Access::ReadWrite, fp, &error);
    REQUIRE_MESSAGE(writer, error);
    REQUIRE(writer->merge(stored, &error));
  }
  // Read-only: what this process publishes stays in the table.
  auto store = MemoStore::open(path, MemoStore::Access::ReadOnly, fp, &error);
  REQUIRE_MESSAGE(store, error);
  DecisionCache cache(store.get());
  Decision d;
  REQUIRE(cache.find(stored[0].key, &d));
  CHECK(store->block_reads() == 1);

  // Five batches of a little less than a quarter of the bound each (four fit beside the
  // stored block's entries), far from the stored block.
  const SpecKey base =
      spec_key(matmul_spec(3, 5, 7, false, false, false, 1, test::test_target().limits()));
  auto key_of = [&](uint64_t i) {
    SpecKey key = base;
    key[4] ^= (i + 1) << 20;
    return key;
  };
  const size_t batch = DecisionCache::kMaxDecisions / 4 - stored.size();
  const Decision solved{true, {ActionKind::Tile, 0, 0, 16}};
  for (uint64_t b = 0; b < 5; ++b) {
    std::vector<StoredEntry> entries(batch);
    for (size_t i = 0; i < batch; ++i) entries[i] = {key_of(b * batch + i), solved};
    cache.publish(entries);
    CHECK(cache.find(key_of(b * batch), &d));
  }
  // The fifth batch found the table full: it started over with that batch alone.
  CHECK(cache.find(key_of(5 * batch - 1), &d));
  CHECK(d == solved);
  CHECK_FALSE(cache.find(key_of(0), &d));
  CHECK_FALSE(cache.find(key_of(4 * batch - 1), &d));
  // The stored block is read again when asked for.
  CHECK(cache.find(stored[0].key, &d));
  CHECK(d == as_map(stored)[stored[0].key]);
  CHECK(store->block_reads() == 2);
}

TEST_CASE("action_applies agrees with the full enumeration") {
  const Target &t = test::test_target();
  InMemoryMemo memo;
  Solver solver(t, memo);
  solver.solve(matmul_spec(64, 48, 40, false, true, false, 1, t.limits()));
  solver.solve(matmul_spec(17, 33, 65, true, false, true, 2, t.limits()));
  std::vector<Action> all, scratch;
  int checked = 0;
  memo.for_each([&](const Spec &s, const MemoEntry &) {
    all.clear();
    enumerate_actions(s, t, all);
    for (const Action &a : all) {
      CHECK(action_applies(s, a, t, scratch));
      for (Action b :
           {Action{a.kind, a.a, a.b, a.size + 1}, Action{a.kind, uint8_t(a.a ^ 1), a.b, a.size},
            Action{a.kind, a.a, uint8_t(a.b + 1), a.size}}) {
        const bool listed = std::find(all.begin(), all.end(), b) != all.end();
        CHECK(action_applies(s, b, t, scratch) == listed);
      }
      ++checked;
    }
    // Tiles and stages are checked without the enumeration (tile_offered, stage_offered):
    // every size a dimension could be tiled by, its neighbours, and every operand and level.
    auto agrees = [&](const Action &b) {
      const bool listed = std::find(all.begin(), all.end(), b) != all.end();
      CHECK_MESSAGE(action_applies(s, b, t, scratch) == listed, to_string(b));
    };
    for (uint8_t dim = 0; dim < 3; ++dim)
      for (int32_t size : t.tile_sizes(s.dims[std::min<int>(dim, 1)]))
        for (int32_t v : {size - 1, size, size + 1, 2 * size})
          agrees({ActionKind::Tile, dim, 0, v});
    for (uint8_t operand = 0; operand < 4; ++operand)
      for (uint8_t level = 0; level < kLevelCount + 1; ++level) {
        agrees({ActionKind::Stage, operand, level, 0});
        agrees({ActionKind::Stage, operand, level, 1});
      }
  });
  CHECK(checked > 1000);
}

}  // namespace
}  // namespace tessel
