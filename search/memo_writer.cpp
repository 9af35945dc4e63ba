#include "memo_writer.h"

#include <chrono>

namespace tessel {

// How long the writer waits for more decisions before it writes a batch.
constexpr auto kCoalesce = std::chrono::milliseconds(20);

MemoWriter::MemoWriter(MemoStore &store, std::function<void(const std::string &)> on_error,
                       Absorb absorb)
    : store_(store), on_error_(std::move(on_error)), absorb_(std::move(absorb)) {}

MemoWriter::~MemoWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoWriter::add(std::span<const StoredEntry> entries, const PlanRecord *plan) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.insert(entries_.end(), entries.begin(), entries.end());
    if (plan) plans_.push_back(*plan);
    ++added_;
    // Started at the first batch: a process that only replays stored plans writes nothing,
    // and a process's first thread took ~100 us to start on the VMs measured.
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  wake_.notify_all();
}

void MemoWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = added_;
  urgent_ = true;
  wake_.notify_all();
  written_cv_.wait(lock, [&] { return written_ >= target; });
}

void MemoWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || added_ > written_; });
    if (added_ == written_) break;  // stopping with nothing pending
    if (!stop_ && !urgent_) wake_.wait_for(lock, kCoalesce, [&] { return stop_ || urgent_; });
    StoredEntries entries = std::move(entries_);
    std::vector<PlanRecord> plans = std::move(plans_);
    entries_.clear();
    plans_.clear();
    const uint64_t batch = added_;
    urgent_ = false;
    lock.unlock();
    if (absorb_) absorb_(entries);
    std::string error;
    if (!store_.merge(entries, plans, &error) && on_error_) on_error_(error);
    lock.lock();
    written_ = batch;
    written_cv_.notify_all();
  }
}

}  // namespace tessel
