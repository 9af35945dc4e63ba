#include "config.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace tessel::runtime {

static long env_integer(const char *name, long fallback, long lo, long hi) {
  const char *text = std::getenv(name);
  if (!text || !*text) return fallback;
  char *end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end || v < lo || v > hi) {
    std::fprintf(stderr, "tessel: ignoring %s=%s (expected an integer from %ld to %ld)\n", name,
                 text, lo, hi);
    return fallback;
  }
  return v;
}

static DbMode db_mode() {
  const char *text = std::getenv("TESSEL_DB");
  if (!text || !*text || !std::strcmp(text, "rw")) return DbMode::ReadWrite;
  if (!std::strcmp(text, "ro")) return DbMode::ReadOnly;
  if (!std::strcmp(text, "off")) return DbMode::Off;
  std::fprintf(stderr, "tessel: ignoring TESSEL_DB=%s (expected off, ro or rw)\n", text);
  return DbMode::ReadWrite;
}

static void cache_dir(Config &c) {
  auto set = [](const char *name) {
    const char *v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char *dir = set("TESSEL_CACHE_DIR")) {
    c.cache_dir = dir;
  } else if (const char *xdg = set("XDG_CACHE_HOME")) {
    c.cache_dir = std::string(xdg) + "/tessel";
  } else if (const char *home = set("HOME")) {
    c.cache_dir = std::string(home) + "/.cache/tessel";
  } else {
    c.cache_dir_problem = "none of TESSEL_CACHE_DIR, XDG_CACHE_HOME and HOME is set";
  }
}

static Config load() {
  Config c;
  const unsigned hw = std::thread::hardware_concurrency();
  c.threads = static_cast<int>(env_integer("TESSEL_NUM_THREADS", hw ? hw : 1, 1, 255));
  c.verbose = env_integer("TESSEL_VERBOSE", 0, 0, 9) > 0;
  if (const char *dir = std::getenv("TESSEL_DUMP_DIR")) c.dump_dir = dir;
  c.perf_map = env_integer("TESSEL_PERF_MAP", 0, 0, 1) > 0;
  c.registry_capacity =
      static_cast<size_t>(env_integer("TESSEL_REGISTRY_CAPACITY", 4096, 1, 1 << 24));
  c.db_mode = db_mode();
  cache_dir(c);
  c.db_max_mb = env_integer("TESSEL_DB_MAX_MB", 256, 1, 1 << 20);
  c.search_helper = env_integer("TESSEL_SEARCH_THREADS", hw >= 2 ? 2 : 1, 1, 2) == 2;
  c.helper_lag = static_cast<int>(env_integer("TESSEL_HELPER_LAG", 0, 1, 1000000));
  return c;
}

const Config &config() {
  static const Config c = load();
  return c;
}

namespace detail {

std::atomic<int> g_call_threads{0};

int resolve_threads() {
  int seen = 0;
  const int fallback = config().threads;
  // A tessel_set_num_threads() meanwhile wins over the default.
  if (g_call_threads.compare_exchange_strong(seen, fallback, std::memory_order_relaxed))
    return fallback;
  return seen;
}

}  // namespace detail

void set_threads(int threads) {
  detail::g_call_threads.store(threads > 0 ? threads : config().threads, std::memory_order_relaxed);
}

}  // namespace tessel::runtime
