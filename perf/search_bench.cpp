// Cold search time per benchmark shape: a fresh memo for every shape, so each number is the
// whole-program search a first call pays without a database. With --helpers 1 (the default,
// as a call on a machine of 2+ cores searches) a SearchHelper thread joins long searches.
//   search_bench [shapes.txt] [--threads T] [--helpers 0|1]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "memo.h"
#include "plan.h"
#include "solver.h"
#include "target.h"

int main(int argc, char **argv) {
  std::string path = "../shared/bench/shapes.txt";
  int threads = 1;
  bool helped = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--helpers") && i + 1 < argc) {
      helped = std::atoi(argv[++i]) > 0;
    } else {
      path = argv[i];
    }
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "search_bench: cannot read %s\n", path.c_str());
    return 2;
  }
  const tessel::Target target = tessel::avx2_target(tessel::read_host_caches());
  std::printf(
      "| M | K | N | threads | search ms | specs solved | memo entries | actions tried | "
      "pruned | model GFLOP/s at 4 GHz |\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::string line;
  double total_ms = 0;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    long long m, k, n;
    if (!(fields >> m >> k >> n)) continue;
    tessel::InMemoryMemo memo;
    tessel::Solver solver(target, memo);
    const tessel::Spec spec =
        tessel::matmul_spec(m, n, k, false, false, false, threads, target.limits());
    const auto t0 = std::chrono::steady_clock::now();
    tessel::Plan plan;
    const bool solvable = tessel::build_plan(solver, spec, &plan, helped);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    total_ms += ms;
    const auto &st = solver.stats();
    std::printf("| %lld | %lld | %lld | %d | %.1f | %lld | %zu | %lld | %lld | %.1f |\n", m, k, n,
                threads, ms, (long long)st.specs_solved, memo.size(), (long long)st.actions_tried,
                (long long)st.actions_pruned,
                solvable ? 2.0 * m * n * k / plan.cost.cycles * 4 : 0.0);
    std::fflush(stdout);
  }
  std::printf("\ntotal %.1f ms\n", total_ms);
  return 0;
}
