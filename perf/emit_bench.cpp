// Emission alone: per shape, the plan is searched once (one thread, in memory), then emitted
// as a warm first call emits it after replaying the memo database. Prints plan nodes, code
// bytes, the first emission (right after the search, as in a running process that already
// made a 3x3x3 kernel: caches cold, fresh executable pages; every kernel is kept, as the
// registry keeps them) and microseconds per emit_kernel over and over: the best of five
// rounds of ~10 ms (at least 10 emissions), in the thread's CPU time (the kernel's share of
// system calls included) and in wall time. On a machine shared with other benchmarks, the CPU
// time is the steadier of the two.
//   emit_bench [shapes.txt | --shapes MxKxN,...] [--dump DIR] [--count N]
// --dump DIR writes each kernel's code as DIR/MxKxN.bin (to compare emitters byte for byte);
// --count N emits exactly N times per shape and prints nothing per round (for callgrind).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "jit_kernel.h"
#include "memo.h"
#include "plan.h"
#include "solver.h"
#include "target.h"

namespace {

struct Shape {
  long long m, k, n;
};

std::vector<Shape> parse_list(const std::string &list) {
  std::vector<Shape> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    Shape s;
    if (std::sscanf(item.c_str(), "%lldx%lldx%lld", &s.m, &s.k, &s.n) == 3) out.push_back(s);
  }
  return out;
}

std::vector<Shape> parse_file(const std::string &path) {
  std::vector<Shape> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line.substr(0, line.find('#')));
    Shape s;
    if (f >> s.m >> s.k >> s.n) out.push_back(s);
  }
  return out;
}

bool emit_once(const tessel::EmitRequest &req, std::unique_ptr<tessel::JitKernel> *jit) {
  std::string error;
  if (!tessel::emit_kernel(req, jit, &error)) {
    std::fprintf(stderr, "emit_bench: %s\n", error.c_str());
    return false;
  }
  return true;
}

double thread_cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<Shape> shapes;
  std::string dump;
  long count = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc) {
      shapes = parse_list(argv[++i]);
    } else if (!std::strcmp(argv[i], "--dump") && i + 1 < argc) {
      dump = argv[++i];
    } else if (!std::strcmp(argv[i], "--count") && i + 1 < argc) {
      count = std::atol(argv[++i]);
    } else {
      shapes = parse_file(argv[i]);
    }
  }
  if (shapes.empty()) shapes = parse_file("../shared/bench/shapes.txt");
  if (shapes.empty()) {
    std::fprintf(stderr, "emit_bench: no shapes\n");
    return 2;
  }
  using namespace tessel;
  const Target target = avx2_target(read_host_caches());
  InMemoryMemo memo;
  Solver solver(target, memo);
  std::vector<std::unique_ptr<JitKernel>> kept;
  Plan prime;
  if (count == 0 &&
      (!build_plan(solver, matmul_spec(3, 3, 3, false, false, false, 1, target.limits()), &prime) ||
       !emit_once(EmitRequest{&prime, 3, 3, 3, "prime"}, &kept.emplace_back())))
    return 1;
  if (count == 0)
    std::printf(
        "| M | K | N | plan nodes | code bytes | first emit us | emit us (cpu) | emit us (wall) "
        "|\n|---|---|---|---|---|---|---|---|\n");
  for (const Shape &s : shapes) {
    Plan plan;
    if (!build_plan(solver, matmul_spec(s.m, s.n, s.k, false, false, false, 1, target.limits()),
                    &plan)) {
      std::fprintf(stderr, "emit_bench: no plan for %lldx%lldx%lld\n", s.m, s.k, s.n);
      return 1;
    }
    const EmitRequest req{&plan, s.k, s.n, s.n, "emit_bench"};
    std::unique_ptr<JitKernel> jit;
    if (count > 0) {
      for (long i = 0; i < count; ++i)
        if (!emit_once(req, &jit)) return 1;
      continue;
    }
    const auto first_start = std::chrono::steady_clock::now();
    if (!emit_once(req, &jit)) return 1;
    const double first_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - first_start)
            .count();
    if (!dump.empty()) {
      const std::string path = dump + "/" + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                               std::to_string(s.n) + ".bin";
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char *>(jit->code()),
                 static_cast<std::streamsize>(jit->code_size()));
    }
    const size_t bytes = jit->code_size();
    kept.push_back(std::move(jit));
    double best_cpu = 1e30, best_wall = 1e30;
    for (int round = 0; round < 5; ++round) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = thread_cpu_us();
      long n = 0;
      double us = 0;
      do {
        if (!emit_once(req, &jit)) return 1;
        ++n;
        us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                 .count();
      } while (n < 10 || us < 10000);
      best_cpu = std::min(best_cpu, (thread_cpu_us() - c0) / static_cast<double>(n));
      best_wall = std::min(best_wall, us / static_cast<double>(n));
    }
    std::printf("| %lld | %lld | %lld | %zu | %zu | %.1f | %.1f | %.1f |\n", s.m, s.k, s.n,
                plan.nodes.size(), bytes, first_us, best_cpu, best_wall);
    std::fflush(stdout);
  }
  return 0;
}
