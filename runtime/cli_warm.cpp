// tessel warm FILE | --shapes MxKxN,... [--threads T]: prepares kernels ahead of time, with a
// progress bar on a terminal and one line per shape otherwise.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "database.h"
#include "tessel/tessel.h"

namespace tessel::cli {
namespace {

// "M K N" or "MxKxN"; anything after '#' is a comment.
bool parse_shape(std::string text, tessel_sgemm_shape *out) {
  text = text.substr(0, text.find('#'));
  for (char &ch : text)
    if (ch == 'x' || ch == 'X' || ch == '\t') ch = ' ';
  std::istringstream in(text);
  std::string m, k, n, rest;
  if (!(in >> m >> k >> n) || (in >> rest)) return false;
  *out =
      tessel_sgemm_shape{TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, 0, 0, 0, 0, 0, 0, 0};
  return parse_dim(m.c_str(), &out->m) && parse_dim(k.c_str(), &out->k) &&
         parse_dim(n.c_str(), &out->n);
}

bool blank(const std::string &line) {
  const std::string s = line.substr(0, line.find('#'));
  return s.find_first_not_of(" \t\r") == std::string::npos;
}

struct Progress {
  const std::vector<tessel_sgemm_shape> *shapes;
  bool terminal;
};

void report(size_t done, size_t total, size_t index, tessel_status status, void *user) {
  const Progress &p = *static_cast<Progress *>(user);
  const tessel_sgemm_shape &s = (*p.shapes)[index];
  char shape[64];
  std::snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)s.m, (long long)s.k,
                (long long)s.n);
  if (!p.terminal) {
    std::printf("warm %zu/%zu %s %s\n", done, total, shape,
                status == TESSEL_OK ? "ok" : tessel_status_string(status));
    std::fflush(stdout);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu %-20s", filled,
               "==============================", kWidth - filled, "", done, total, shape);
  if (done == total) std::fprintf(stderr, "\n");
}

}  // namespace

int cmd_warm(int argc, char **argv) {
  std::vector<tessel_sgemm_shape> shapes;
  int64_t threads = 0;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads")) {
      if (i + 1 >= argc || !parse_dim(argv[++i], &threads) || threads > 255)
        return usage("--threads takes an integer from 1 to 255");
    } else if (!std::strcmp(argv[i], "--shapes")) {
      if (i + 1 >= argc) return usage("--shapes takes a list like 64x64x64,1x4096x4096");
      std::stringstream list(argv[++i]);
      std::string item;
      while (std::getline(list, item, ',')) {
        tessel_sgemm_shape s;
        if (!parse_shape(item, &s))
          return usage(("bad shape '" + item + "' (expected MxKxN)").c_str());
        shapes.push_back(s);
      }
    } else if (argv[i][0] != '-') {
      std::ifstream in(argv[i]);
      if (!in) {
        std::fprintf(stderr, "tessel: cannot read %s\n", argv[i]);
        return 1;
      }
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        if (blank(line)) continue;
        tessel_sgemm_shape s;
        if (!parse_shape(line, &s)) {
          std::fprintf(stderr, "tessel: %s:%d: expected \"M K N\"\n", argv[i], number);
          return 1;
        }
        shapes.push_back(s);
      }
    } else {
      return usage(("unknown option " + std::string(argv[i])).c_str());
    }
  }
  if (shapes.empty()) return usage("warm needs a shape file or --shapes");
  if (threads) tessel_set_num_threads(static_cast<int>(threads));
  Progress progress{&shapes, isatty(STDERR_FILENO) == 1};
  const auto start = std::chrono::steady_clock::now();
  const tessel_status st = tessel_warm(shapes.data(), shapes.size(), report, &progress);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (st != TESSEL_OK) {
    std::fprintf(stderr, "tessel: warm: %s: %s\n", tessel_status_string(st), tessel_last_error());
    return 1;
  }
  const MemoStore *store = runtime::shared_decisions().store();
  std::printf("warmed %zu shapes for %d thread%s in %.2f s; %s\n", shapes.size(),
              tessel_get_num_threads(), tessel_get_num_threads() == 1 ? "" : "s", seconds,
              !store               ? "no database: decisions kept in memory only"
              : store->read_only() ? ("database " + store->path() + " only read").c_str()
                                   : ("decisions saved in " + store->path()).c_str());
  return 0;
}

}  // namespace tessel::cli
