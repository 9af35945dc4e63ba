// MemoWriter: merges solved decisions into the store from a background thread, in batches.
//
// A merge rewrites every block it touches, so merging each compile's decisions on the
// compiling thread put that cost on every first call and rewrote busy blocks again and again
// (a run of 500 new shapes took twice as long with the database as without). The writer
// takes batches off the callers' path and coalesces what arrives within a few milliseconds
// into one transaction. Whatever is pending is written before the writer is destroyed; a
// process killed before that loses only decisions it can solve again.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "memo_block.h"
#include "memo_store.h"

namespace tessel {

class MemoWriter {
 public:
  using Absorb = std::function<void(std::span<const StoredEntry>)>;
  // `on_error` hears why a batch could not be written (from the writer thread). `absorb`, if
  // given, gets each batch on the writer thread before the store does.
  MemoWriter(MemoStore &store, std::function<void(const std::string &)> on_error,
             Absorb absorb = nullptr);
  ~MemoWriter();
  MemoWriter(const MemoWriter &) = delete;
  MemoWriter &operator=(const MemoWriter &) = delete;

  void add(std::span<const StoredEntry> entries, const PlanRecord *plan);
  // Returns once everything added before the call is absorbed and written (or failed).
  void flush();

 private:
  void run();

  MemoStore &store_;
  std::function<void(const std::string &)> on_error_;
  Absorb absorb_;
  std::mutex mutex_;
  std::condition_variable wake_, written_cv_;
  StoredEntries entries_;
  std::vector<PlanRecord> plans_;
  uint64_t added_ = 0, written_ = 0;  // adds so far, and adds written
  bool urgent_ = false;               // a flush waits: no coalescing delay
  bool stop_ = false;
  std::thread thread_;  // started by the first add()
};

}  // namespace tessel
