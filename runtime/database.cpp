#include "database.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "compiler.h"
#include "config.h"
#include "fingerprint.h"

namespace tessel::runtime {
namespace {

bool make_directories(const std::string &dir, std::string *error) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    const std::string prefix = dir.substr(0, i);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create " + prefix + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace

void warn_once(const char *topic, const std::string &message) {
  // Never destroyed: the database writer thread may warn while the process's statics are
  // being destroyed at exit (it is joined by one of them).
  static auto *mutex = new std::mutex;
  static auto *said = new std::set<std::string>;
  std::lock_guard<std::mutex> lock(*mutex);
  if (said->insert(topic).second) std::fprintf(stderr, "tessel: %s\n", message.c_str());
}

std::string database_path(std::string *problem) {
  const Config &c = config();
  if (c.cache_dir.empty()) {
    *problem = c.cache_dir_problem;
    return "";
  }
  return c.cache_dir + "/memo-" + fingerprint_digest(memo_fingerprint(host_target())) + ".sqlite";
}

std::unique_ptr<MemoStore> open_database(MemoStore::Access access, std::string *error) {
  const std::string path = database_path(error);
  if (path.empty()) return nullptr;
  if (access == MemoStore::Access::ReadWrite &&
      !make_directories(path.substr(0, path.rfind('/')), error))
    return nullptr;
  std::unique_ptr<MemoStore> store =
      MemoStore::open(path, access, memo_fingerprint(host_target()), error);
  if (store) store->set_size_limit(int64_t{config().db_max_mb} << 20);
  return store;
}

DecisionCache &shared_decisions() {
  static const std::unique_ptr<MemoStore> store = [] {
    const DbMode mode = config().db_mode;
    if (mode == DbMode::Off) return std::unique_ptr<MemoStore>();
    std::string error;
    auto s = open_database(
        mode == DbMode::ReadOnly ? MemoStore::Access::ReadOnly : MemoStore::Access::ReadWrite,
        &error);
    if (!s) warn_once("open", "memo database not used, searching in memory: " + error);
    return s;
  }();
  static DecisionCache cache(
      store.get(), [](const char *topic, const std::string &message) { warn_once(topic, message); },
      /*background_writes=*/true);
  return cache;
}

}  // namespace tessel::runtime
