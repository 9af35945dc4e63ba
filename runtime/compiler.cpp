#include "compiler.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>

#include <unistd.h>

#include "config.h"
#include "database.h"
#include "errors.h"
#include "layered_memo.h"
#include "memo.h"
#include "solver.h"
#include "thread_heap.h"

namespace tessel::runtime {

// The cost model for this host: its caches, and TESSEL_HELPER_LAG if set (target.h).
static Target make_host_target() {
  Target target = avx2_target(read_host_caches());
  if (config().helper_lag > 0) {
    target.coef.helper_lag = config().helper_lag;
    if (config().verbose)
      std::fprintf(stderr, "tessel: helper lag %d cycles (TESSEL_HELPER_LAG)\n",
                   config().helper_lag);
  }
  return target;
}

const Target &host_target() {
  static const Target target = make_host_target();
  return target;
}

// Each compiling thread keeps its own memo (exact costs and the bounds its searches proved),
// so searches never wait on each other. Decisions are shared between threads and processes
// through the database layer behind it. Past kMaxThreadMemoEntries the memo starts over
// before the next search (a search adds 50-120k entries, so the table stays within 2^20
// slots, 96 MiB): a process meeting ever new shapes grew it by 1-2 MiB a shape for good (a
// thousand shapes up to 300^3: 2.6 GB). What the earlier searches published stays shared
// (below), where a decision found is expanded again instead of read with its cost: 300 new
// shapes, database on, searched in 8.8 s against 7.9-9.4 unbounded (1.2 GB).
static InMemoryMemo &kept_memo() {
  static thread_local ThreadHeap<InMemoryMemo> memo;
  return memo.get();
}

static InMemoryMemo &thread_memo() {
  InMemoryMemo &memo = kept_memo();
  if (memo.size() > kMaxThreadMemoEntries) memo.clear();
  return memo;
}

size_t thread_memo_entries() {
  return kept_memo().size();
}

// Rebuilds the plan of `spec` from its stored plan record when there is one that replays (a
// warm first call: one row read, one pass over the plan). Otherwise searches through the
// shared decisions, then publishes what it solved with a new plan record. A stored decision
// that no longer replays is only a miss; if the plan still cannot be built, the search runs
// again on its own, without anything stored.
static bool search(const Spec &spec, Plan *plan, int64_t *specs_solved) {
  const Target &target = host_target();
  DecisionCache &shared = shared_decisions();
  *specs_solved = 0;
  {
    static thread_local ThreadHeap<PlanRecord> kept_record;
    PlanRecord &stored = kept_record.get([] {  // kept (kKeptPlanNodes)
      PlanRecord r;
      keep_room(r.actions, kKeptPlanNodes);
      return r;
    });
    if (shared.read_plan(spec_key(canonical(spec)), &stored)) {
      if (replay_plan(stored, spec, target, plan)) return true;
      warn_once("stale plan", "ignored a stored plan that no longer applies for " +
                                  to_string(spec) + "; searching");
    }
  }
  LayeredMemo memo(thread_memo(), shared, target);
  Solver solver(target, memo);
  const bool ok = build_plan(solver, spec, plan, config().search_helper);
  *specs_solved = solver.stats().specs_solved;
  const PlanRecord record = ok ? plan_record(*plan) : PlanRecord{};
  shared.publish(memo.take_solved(), record.actions.empty() ? nullptr : &record);
  if (memo.rejected() > 0)
    warn_once("stale", "ignored stored decisions that no longer apply (" +
                           std::to_string(memo.rejected()) + " for " + to_string(spec) + ")");
  if (ok || memo.replayed() == 0) return ok;
  InMemoryMemo fresh;
  Solver alone(target, fresh);
  warn_once("no plan", "stored decisions led to no plan for " + to_string(spec) +
                           "; searched again without them");
  return build_plan(alone, spec, plan);
}

static void dump(const CompiledKernel &k, const Plan &plan, const std::string &name) {
  const std::string base = config().dump_dir + "/" + name;
  std::ofstream bin(base + ".bin", std::ios::binary);
  bin.write(reinterpret_cast<const char *>(k.jit->code()),
            static_cast<std::streamsize>(k.jit->code_size()));
  std::ofstream txt(base + ".txt");
  txt << format_plan(plan);
  if (!bin || !txt)
    std::fprintf(stderr, "tessel: could not write dumps to %s\n", config().dump_dir.c_str());
}

static void add_to_perf_map(const CompiledKernel &k, const std::string &name) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  if (FILE *f = std::fopen(path.c_str(), "a")) {
    std::fprintf(f, "%llx %zx %s\n",
                 static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(k.jit->code())),
                 k.jit->code_size(), name.c_str());
    std::fclose(f);
  }
}

static tessel_status plan_for(const KernelKey &key, Plan *out, int64_t *specs_solved) {
  const Spec spec = matmul_spec(key.m, key.n, key.k, key.trans_a, key.trans_b, key.accumulate,
                                key.threads, host_target().limits(), key.lda * 4, key.ldb * 4);
  if (!search(spec, out, specs_solved))
    return fail(TESSEL_NO_PLAN, "no plan fits the target for " + to_string(spec));
  return TESSEL_OK;
}

tessel_status plan_of(const KernelKey &key, Plan *out) {
  int64_t specs_solved = 0;
  return plan_for(key, out, &specs_solved);
}

tessel_status compile(const KernelKey &key, std::shared_ptr<const CompiledKernel> *out) {
  using Clock = std::chrono::steady_clock;
  auto kernel = std::make_shared<CompiledKernel>();
  kernel->key = key;
  // One plan per thread, refilled by every compile: its storage stays (kKeptPlanNodes; as
  // CodeBuffer for code). 1000^3's 398 nodes after two small kernels faulted 13 pages in
  // halfway through its replay, a quarter of the call.
  static thread_local ThreadHeap<Plan> kept_plan;
  Plan &plan = kept_plan.get([] {
    Plan p;
    keep_room(p.nodes, kKeptPlanNodes);
    keep_room(p.tensors, kKeptPlanNodes + 3);  // replay_plan reserves one per node
    return p;
  });
  const auto t0 = Clock::now();
  int64_t specs_solved = 0;
  if (const tessel_status st = plan_for(key, &plan, &specs_solved); st != TESSEL_OK) return st;
  const auto t1 = Clock::now();
  const std::string name = kernel_name(key);
  std::string error;
  EmitRequest request{&plan, key.lda, key.ldb, key.ldc, name, host_target().caches.l2_bytes};
  if (!emit_kernel(request, &kernel->jit, &error))
    return fail(TESSEL_CODEGEN_ERROR, "emitting " + name + ": " + error);
  const auto t2 = Clock::now();
  kernel->search_seconds = std::chrono::duration<double>(t1 - t0).count();
  kernel->emit_seconds = std::chrono::duration<double>(t2 - t1).count();
  const Config &cfg = config();
  if (!cfg.dump_dir.empty()) dump(*kernel, plan, name);
  if (cfg.perf_map) add_to_perf_map(*kernel, name);
  if (cfg.verbose)
    std::fprintf(stderr,
                 "tessel: new kernel %s: search %.3f ms (%lld specs), emit %.3f ms, %zu bytes of "
                 "code (%d register tiles called from %d places), %lld bytes of workspace\n",
                 name.c_str(), kernel->search_seconds * 1e3, static_cast<long long>(specs_solved),
                 kernel->emit_seconds * 1e3, kernel->jit->code_size(),
                 kernel->jit->outlined_tiles(), kernel->jit->tile_calls(),
                 static_cast<long long>(kernel->jit->workspace_bytes()));
  *out = std::move(kernel);
  return TESSEL_OK;
}

}  // namespace tessel::runtime
