// First-call latency with and without the memo database, per benchmark shape, each first call
// in a fresh process (what a new service pays):
//   cold alone:   an empty database of its own (search + emit)
//   cold filling: one database the shapes fill in list order, so later shapes find sub-specs
//                 that earlier ones solved
//   warm:         the filled database (lookup + replay + emit), in a fresh process, in a
//                 process that already opened the database for a 3x3x3 kernel, and in one
//                 that also made a 96x200x304 kernel first (its code paths are mapped and
//                 trained, as in a service that has been running for a while)
// then the size of the filled database and its compression (tessel db stats).
//   db_bench [shapes.txt] [--repeat R]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tessel/tessel.h"

namespace {

struct Shape {
  long long m, k, n;
};

// Child: the first call is tessel_warm of one shape (it searches and emits, and runs nothing).
// Prints "<first call us> <search us> <emit us> <page faults>" for one shape.
int child(const Shape &s, int primes) {
  tessel_set_num_threads(1);
  auto shape = [](long long m, long long k, long long n) {
    return tessel_sgemm_shape{
        TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 0, 0, 0, 0};
  };
  // Opens the database and starts the runtime on the first `primes` of these shapes.
  const tessel_sgemm_shape others[] = {shape(3, 3, 3), shape(96, 200, 304)};
  for (int i = 0; i < primes && i < int(std::size(others)); ++i)
    if (tessel_warm(&others[i], 1, nullptr, nullptr) != TESSEL_OK) return 1;
  tessel_stats before{}, after{};
  tessel_get_stats(&before);
  const tessel_sgemm_shape first = shape(s.m, s.k, s.n);
  // Under `valgrind --tool=callgrind --collect-atstart=no`, counts the timed call alone.
  rusage usage0{}, usage1{};
  getrusage(RUSAGE_SELF, &usage0);
  CALLGRIND_TOGGLE_COLLECT;
  const auto t0 = std::chrono::steady_clock::now();
  const tessel_status status = tessel_warm(&first, 1, nullptr, nullptr);
  CALLGRIND_TOGGLE_COLLECT;
  if (status != TESSEL_OK) {
    std::fprintf(stderr, "db_bench: %s\n", tessel_last_error());
    return 1;
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  getrusage(RUSAGE_SELF, &usage1);
  tessel_get_stats(&after);
  // The page faults of the first call: the part of its time that instruction counts miss.
  std::printf("%.1f %.1f %.1f %ld\n", us, (after.search_seconds - before.search_seconds) * 1e6,
              (after.emit_seconds - before.emit_seconds) * 1e6,
              usage1.ru_minflt - usage0.ru_minflt + usage1.ru_majflt - usage0.ru_majflt);
  return 0;
}

struct Sample {
  double total_us = 0, search_us = 0, emit_us = 0;
};

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "db_bench";
}

// Runs a child for `s` with the database in `dir`; the median of `repeat` runs.
Sample measure(const Shape &s, const std::string &dir, int primes, int repeat) {
  std::vector<Sample> runs;
  for (int r = 0; r < repeat; ++r) {
    const std::string cmd = "TESSEL_CACHE_DIR='" + dir + "' '" + self_path() + "' --child " +
                            std::to_string(s.m) + " " + std::to_string(s.k) + " " +
                            std::to_string(s.n) + " --primes " + std::to_string(primes);
    FILE *p = popen(cmd.c_str(), "r");
    Sample x;
    if (!p || std::fscanf(p, "%lf %lf %lf", &x.total_us, &x.search_us, &x.emit_us) != 3) {
      std::fprintf(stderr, "db_bench: child failed: %s\n", cmd.c_str());
      std::exit(1);
    }
    pclose(p);
    runs.push_back(x);
  }
  std::sort(runs.begin(), runs.end(),
            [](const Sample &a, const Sample &b) { return a.total_us < b.total_us; });
  return runs[runs.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  if (argc >= 5 && !std::strcmp(argv[1], "--child"))
    return child({std::atoll(argv[2]), std::atoll(argv[3]), std::atoll(argv[4])},
                 argc > 6 && !std::strcmp(argv[5], "--primes") ? std::atoi(argv[6]) : 0);
  std::string path = "../shared/bench/shapes.txt";
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      path = argv[i];
    }
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "db_bench: cannot read %s\n", path.c_str());
    return 2;
  }
  std::vector<Shape> shapes;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line.substr(0, line.find('#')));
    Shape s;
    if (f >> s.m >> s.k >> s.n) shapes.push_back(s);
  }
  char tmpl[] = "/tmp/tessel-db-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  const std::string root = tmpl;
  const std::string filled = root + "/filled";

  std::printf(
      "| M | K | N | cold alone ms | cold filling ms | warm, new process us | (search + emit "
      "us) | warm, running process us | (search + emit us) | warm, busy process us | (search + "
      "emit us) |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<Sample> cold(shapes.size()), filling(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    cold[i] = measure(shapes[i], root + "/alone" + std::to_string(i), 0, 1);
    filling[i] = measure(shapes[i], filled, 0, 1);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape &s = shapes[i];
    const Sample fresh = measure(s, filled, 0, repeat);
    const Sample running = measure(s, filled, 1, repeat);
    const Sample busy = measure(s, filled, 2, repeat);
    std::printf(
        "| %lld | %lld | %lld | %.1f | %.1f | %.0f | (%.0f + %.0f) | %.0f | (%.0f + %.0f) | %.0f | "
        "(%.0f + %.0f) |\n",
        s.m, s.k, s.n, cold[i].total_us / 1e3, filling[i].total_us / 1e3, fresh.total_us,
        fresh.search_us, fresh.emit_us, running.total_us, running.search_us, running.emit_us,
        busy.total_us, busy.search_us, busy.emit_us);
    std::fflush(stdout);
  }
  const std::string tool = self_path().substr(0, self_path().rfind('/')) + "/tessel";
  std::printf("\nthe filled database (`tessel db stats`):\n\n```\n");
  std::fflush(stdout);
  std::system(("TESSEL_CACHE_DIR='" + filled + "' '" + tool + "' db stats").c_str());
  std::printf("```\n");
  std::system(("rm -rf '" + root + "'").c_str());
  return 0;
}
