// The process's memo database (search/memo_store.h) and the decisions its compiling threads
// share (search/decision_cache.h). Opened on first use. When it cannot be used (TESSEL_DB=off,
// no cache directory, a read-only directory, a damaged or foreign file) tessel says why once
// on stderr and keeps its decisions in memory: the database only ever saves time.
#pragma once
#include <memory>
#include <string>

#include "decision_cache.h"
#include "memo_store.h"

namespace tessel::runtime {

// The database file of this host and tessel version: <cache dir>/memo-<fingerprint digest>.
// Returns "" with the reason when there is no cache directory.
std::string database_path(std::string *problem);

// Opens this host's database, creating its directory for ReadWrite.
std::unique_ptr<MemoStore> open_database(MemoStore::Access access, std::string *error);

// The decisions shared by every compiling thread of the process.
DecisionCache &shared_decisions();

// Prints "tessel: <message>" on stderr the first time `topic` comes up in this process.
void warn_once(const char *topic, const std::string &message);

}  // namespace tessel::runtime
