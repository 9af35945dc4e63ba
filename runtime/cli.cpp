// The tessel command-line tool.
//   tessel plan M K N [--trans-a] [--trans-b] [--threads T] [--alternatives]
//                                                             search and print the plan
//   tessel run  M K N [--trans-a] [--trans-b] [--threads T]   search, emit, run, verify, time
//   tessel warm FILE | --shapes MxKxN,... [--threads T]       prepare kernels ahead of time
//   tessel db path|stats|verify|clear|export FILE|import FILE the memo database
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <algorithm>
#include <cmath>
#include <random>

#include "alternatives.h"
#include "cli.h"
#include "compiler.h"
#include "config.h"
#include "cpu.h"
#include "database.h"
#include "executor.h"
#include "layered_memo.h"
#include "plan.h"
#include "registry.h"
#include "solver.h"
#include "target.h"
#include "tessel/tessel.h"

namespace tessel::cli {

int usage(const char *msg) {
  if (msg) std::fprintf(stderr, "tessel: %s\n", msg);
  std::fprintf(stderr,
               "usage: tessel plan M K N [--trans-a] [--trans-b] [--threads T] [--alternatives]\n"
               "       tessel run  M K N [--trans-a] [--trans-b] [--threads T]\n"
               "       tessel warm FILE | --shapes MxKxN[,MxKxN...] [--threads T]\n"
               "       tessel db path | stats | verify | clear | export FILE | import FILE\n"
               "  C[MxN] = op(A)[MxK] * op(B)[KxN], f32, row-major\n"
               "  plan: search and print the plan (--alternatives: and each node's next best\n"
               "  action, solved in full); run: search, emit machine code, run it,\n"
               "  check it against a reference and time it; warm: prepare the kernels of a\n"
               "  list of shapes (\"M K N\" lines) so the memo database holds their plans;\n"
               "  db: show, check, empty or move the memo database\n");
  return 2;
}

bool parse_dim(const char *text, int64_t *out) {
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno || end == text || *end || v <= 0 || v > INT32_MAX) return false;
  *out = v;
  return true;
}

}  // namespace tessel::cli

namespace {

using tessel::cli::parse_dim;
using tessel::cli::usage;

struct Problem {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int threads = 1;
};

// What is wrong with the arguments, or nothing when they describe a product.
std::optional<std::string> parse_problem(int argc, char **argv, Problem *p) {
  if (argc < 3) return "expected M K N";
  if (!parse_dim(argv[0], &p->m) || !parse_dim(argv[1], &p->k) || !parse_dim(argv[2], &p->n))
    return "M, K and N must be integers from 1 to 2147483647";
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--trans-a")) {
      p->trans_a = true;
    } else if (!std::strcmp(argv[i], "--trans-b")) {
      p->trans_b = true;
    } else if (!std::strcmp(argv[i], "--threads")) {
      int64_t t = 0;
      if (i + 1 >= argc || !parse_dim(argv[++i], &t) || t > 255)
        return "--threads takes an integer from 1 to 255";
      p->threads = static_cast<int>(t);
    } else {
      return "unknown option " + std::string(argv[i]);
    }
  }
  return std::nullopt;
}

// Per plan node, the action that costs least after the one taken, and how much more: where
// the cost model decided by a hair, a measurement of both tells whether it decided right.
std::vector<std::string> next_best_notes(tessel::Solver &solver, const tessel::Plan &plan) {
  std::vector<std::string> notes(plan.nodes.size());
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const tessel::PlanNode &n = plan.nodes[i];
    const std::vector<tessel::Alternative> all = tessel::alternatives(solver, n.spec);
    const auto next = std::find_if(all.begin(), all.end(), [&](const tessel::Alternative &a) {
      return a.solvable && !(a.action == n.action);
    });
    if (next == all.end()) {
      notes[i] = "(no other action)";
      continue;
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "(next: %s at %.4g, %+.1f%%)", to_string(next->action).c_str(),
                  next->cost.cycles,
                  n.cost.cycles > 0 ? 100 * (next->cost.cycles / n.cost.cycles - 1) : 0.0);
    notes[i] = buf;
  }
  return notes;
}

int cmd_plan(int argc, char **argv) {
  Problem p;
  p.threads = 1;
  // --alternatives is plan's own; the other arguments state the problem.
  char **end = std::remove_if(argv, argv + argc,
                              [](const char *a) { return !std::strcmp(a, "--alternatives"); });
  const bool with_alternatives = end != argv + argc;
  argc = static_cast<int>(end - argv);
  if (const auto err = parse_problem(argc, argv, &p)) return usage(err->c_str());
  // Through the shared decisions, as a call would search (and saving what it solves).
  const tessel::Target &target = tessel::runtime::host_target();
  tessel::InMemoryMemo local;
  tessel::DecisionCache &shared = tessel::runtime::shared_decisions();
  tessel::LayeredMemo memo(local, shared, target);
  tessel::Solver solver(target, memo);
  const tessel::Spec spec =
      tessel::matmul_spec(p.m, p.n, p.k, p.trans_a, p.trans_b, false, p.threads, target.limits());
  const auto start = std::chrono::steady_clock::now();
  tessel::Plan plan;
  const bool solvable =
      tessel::build_plan(solver, spec, &plan, tessel::runtime::config().search_helper);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!solvable) {
    std::fprintf(stderr, "tessel: no plan fits the target for %s\n", to_string(spec).c_str());
    return 1;
  }
  shared.publish(memo.take_solved());
  const tessel::SearchStats stats = solver.stats();  // the search's, not the alternatives'
  const std::vector<std::string> notes =
      with_alternatives ? next_best_notes(solver, plan) : std::vector<std::string>{};
  std::printf("%s", tessel::format_plan(plan, notes).c_str());
  const double flops = 2.0 * double(p.m) * double(p.n) * double(p.k);
  std::printf("\ncost: %.6g cycles (%.3g flop/cycle), workspace %lld bytes, depth %d\n",
              plan.cost.cycles, flops / plan.cost.cycles,
              static_cast<long long>(plan.workspace_bytes), plan.cost.depth);
  std::printf(
      "search: %.2f ms, %lld specs solved, %lld memo hits, %lld actions tried, %lld stored "
      "decisions replayed\n",
      ms, static_cast<long long>(stats.specs_solved), static_cast<long long>(stats.memo_hits),
      static_cast<long long>(stats.actions_tried), static_cast<long long>(memo.replayed()));
  return 0;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Largest |C - reference| relative to the tolerance; exact for small problems, and for large
// ones the O(n^2) check of C*x against A*(B*x) for a random x.
double verify(const Problem &p, const std::vector<float> &a, const std::vector<float> &b,
              const std::vector<float> &c) {
  auto A = [&](int64_t i, int64_t q) {
    return double(p.trans_a ? a[q * p.m + i] : a[i * p.k + q]);
  };
  auto B = [&](int64_t q, int64_t j) {
    return double(p.trans_b ? b[j * p.k + q] : b[q * p.n + j]);
  };
  double worst = 0;
  const double tol = 1e-5 * double(p.k + 8);
  if (double(p.m) * double(p.n) * double(p.k) <= 1e8) {
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < p.k; ++q) acc += A(i, q) * B(q, j);
        worst = std::max(worst, std::abs(acc - c[i * p.n + j]) / tol);
      }
    return worst;
  }
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> x(p.n), bx(p.k, 0), abx(p.m, 0), cx(p.m, 0);
  for (double &v : x) v = dist(rng);
  for (int64_t q = 0; q < p.k; ++q)
    for (int64_t j = 0; j < p.n; ++j) bx[q] += B(q, j) * x[j];
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t q = 0; q < p.k; ++q) abx[i] += A(i, q) * bx[q];
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) cx[i] += c[i * p.n + j] * x[j];
  for (int64_t i = 0; i < p.m; ++i)
    worst = std::max(worst, std::abs(cx[i] - abx[i]) / (tol * std::sqrt(double(p.n))));
  return worst;
}

int cmd_run(int argc, char **argv) {
  Problem p;
  p.threads = tessel::runtime::current_threads();
  if (const auto err = parse_problem(argc, argv, &p)) return usage(err->c_str());
  if (!tessel::runtime::host_has_avx2_fma()) {
    std::fprintf(stderr, "tessel: %s\n", tessel_status_string(TESSEL_UNSUPPORTED_CPU));
    return 1;
  }
  tessel::runtime::KernelKey key;
  key.m = int32_t(p.m);
  key.n = int32_t(p.n);
  key.k = int32_t(p.k);
  key.trans_a = p.trans_a;
  key.trans_b = p.trans_b;
  key.threads = uint8_t(p.threads);
  key.lda = p.trans_a ? p.m : p.k;
  key.ldb = p.trans_b ? p.k : p.n;
  key.ldc = p.n;
  std::vector<float> a(size_t(p.m * p.k)), b(size_t(p.k * p.n)), c(size_t(p.m * p.n), NAN);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float &v : a) v = dist(rng);
  for (float &v : b) v = dist(rng);

  std::printf("tessel run: C[%lldx%lld] = %s[%lldx%lld] * %s[%lldx%lld], f32, %d thread%s\n",
              (long long)p.m, (long long)p.n, p.trans_a ? "A^T" : "A", (long long)p.m,
              (long long)p.k, p.trans_b ? "B^T" : "B", (long long)p.k, (long long)p.n, p.threads,
              p.threads == 1 ? "" : "s");
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const tessel::runtime::CompiledKernel> kernel;
  if (tessel::runtime::Registry::instance().get(key, &kernel) != TESSEL_OK) {
    std::fprintf(stderr, "tessel: %s\n", tessel_last_error());
    return 1;
  }
  const double compile_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  tessel::runtime::execute(*kernel, a.data(), b.data(), c.data(), 1.0f);
  const double first_run_s = seconds_since(t1);

  tessel::Plan plan;
  if (tessel::runtime::plan_of(key, &plan) != TESSEL_OK) {
    std::fprintf(stderr, "tessel: %s\n", tessel_last_error());
    return 1;
  }
  std::printf("\nplan (cost %.4g cycles, workspace %lld bytes):\n%s", plan.cost.cycles,
              (long long)plan.workspace_bytes, tessel::format_plan(plan).c_str());
  std::printf(
      "\nfirst call: search %.3f ms, emit %.3f ms (%zu bytes of AVX2 code), first run "
      "%.3f ms, total %.3f ms\n",
      kernel->search_seconds * 1e3, kernel->emit_seconds * 1e3, kernel->jit->code_size(),
      first_run_s * 1e3, (compile_s + first_run_s) * 1e3);
  const double error = verify(p, a, b, c);
  std::printf("check against reference: %s (worst error %.3g of tolerance)\n",
              error <= 1 ? "PASS" : "FAIL", error);

  std::vector<double> rates;
  const double flops = 2.0 * double(p.m) * double(p.n) * double(p.k);
  const auto start = std::chrono::steady_clock::now();
  while (rates.size() < 5 || (seconds_since(start) < 1.0 && rates.size() < 10000)) {
    const auto t = std::chrono::steady_clock::now();
    tessel::runtime::execute(*kernel, a.data(), b.data(), c.data(), 1.0f);
    rates.push_back(flops / seconds_since(t) * 1e-9);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("speed: %.1f GFLOP/s median of %zu runs (min %.1f, max %.1f)\n",
              rates[rates.size() / 2], rates.size(), rates.front(), rates.back());
  return error <= 1 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) return usage(nullptr);
  const std::string cmd = argv[1];
  if (cmd == "plan") return cmd_plan(argc - 2, argv + 2);
  if (cmd == "run") return cmd_run(argc - 2, argv + 2);
  if (cmd == "warm") return tessel::cli::cmd_warm(argc - 2, argv + 2);
  if (cmd == "db") return tessel::cli::cmd_db(argc - 2, argv + 2);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(nullptr);
    return 0;
  }
  return usage(("unknown command '" + cmd + "'").c_str());
}
