// The tessel command-line tool.
//   tessel plan M K N [--trans-a] [--trans-b] [--threads T]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "plan.h"
#include "solver.h"
#include "target.h"

namespace {

int usage(const char *msg) {
  if (msg) std::fprintf(stderr, "tessel: %s\n", msg);
  std::fprintf(stderr,
               "usage: tessel plan M K N [--trans-a] [--trans-b] [--threads T]\n"
               "  C[MxN] = op(A)[MxK] * op(B)[KxN], f32, row-major\n");
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

struct Problem {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int threads = 1;
};

const char *parse_problem(int argc, char **argv, Problem *p) {
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
      return "unknown option";
    }
  }
  return nullptr;
}

int cmd_plan(int argc, char **argv) {
  Problem p;
  if (const char *err = parse_problem(argc, argv, &p)) return usage(err);
  const tessel::Target target = tessel::avx2_target(tessel::read_host_caches());
  tessel::InMemoryMemo memo;
  tessel::Solver solver(target, memo);
  const tessel::Spec spec =
      tessel::matmul_spec(p.m, p.n, p.k, p.trans_a, p.trans_b, false, p.threads, target.limits());
  const auto start = std::chrono::steady_clock::now();
  const tessel::MemoEntry best = solver.solve(spec);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!best.solvable) {
    std::fprintf(stderr, "tessel: no plan fits the target for %s\n", to_string(spec).c_str());
    return 1;
  }
  if (getenv("TESSEL_HIST")) {
    std::map<std::string, int> h;
    memo.for_each([&](const tessel::Spec &sp, const tessel::MemoEntry &) {
      std::string key;
      key += tessel::op_name(sp.op);
      for (int i = 0; i < sp.operand_count(); ++i) {
        key += " ";
        key += to_string(sp.operands[i]);
      }
      h[key]++;
    });
    std::vector<std::pair<int, std::string>> v;
    for (auto &[k, c] : h) v.push_back({c, k});
    std::sort(v.rbegin(), v.rend());
    for (size_t i = 0; i < v.size() && i < 40; ++i)
      std::printf("%8d %s\n", v[i].first, v[i].second.c_str());
    std::printf("%zu classes\n", v.size());
  }
  tessel::Plan plan;
  tessel::build_plan(solver, spec, &plan);
  std::printf("%s", tessel::format_plan(plan).c_str());
  const double flops = 2.0 * double(p.m) * double(p.n) * double(p.k);
  std::printf("\ncost: %.6g cycles (%.3g flop/cycle), workspace %lld bytes, depth %d\n",
              plan.cost.cycles, flops / plan.cost.cycles,
              static_cast<long long>(plan.workspace_bytes), plan.cost.depth);
  std::printf("search: %.2f ms, %lld specs solved, %lld memo hits, %lld actions tried\n", ms,
              static_cast<long long>(solver.stats().specs_solved),
              static_cast<long long>(solver.stats().memo_hits),
              static_cast<long long>(solver.stats().actions_tried));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) return usage(nullptr);
  const std::string cmd = argv[1];
  if (cmd == "plan") return cmd_plan(argc - 2, argv + 2);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(nullptr);
    return 0;
  }
  return usage(("unknown command '" + cmd + "'").c_str());
}
