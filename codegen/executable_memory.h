// Executable memory with W^X: code is copied into read+write pages, which are then switched to
// read+execute before anyone can call them. No page is ever writable and executable at once.
//
// Pages come from a process-wide pool of anonymous mappings rather than one mmap per kernel:
// on the machines measured, mmap + first touch + munmap cost more than emitting a small
// kernel. A pool page is in one of two states:
//   free    read+write, never executable; may be handed out
//   in use  read+execute, never writable; holds one kernel's code (pages are never shared
//           between kernels, so a live kernel's pages never change protection)
// Releasing a kernel makes its pages read+write again before they rejoin the free pages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tessel {

struct ExecutableCode {
  uint8_t *code = nullptr;  // page-aligned, read+execute
  size_t size = 0;          // bytes of code
  size_t mapped = 0;        // bytes of whole pages reserved for it
};

struct ExecutablePoolStats {
  size_t mapped_bytes = 0, free_bytes = 0, used_bytes = 0;
  int64_t mappings = 0;
};

// Thread-safe. Free pages are kept as coalesced runs, indexed by address (to merge neighbours)
// and by (length, address), to take the shortest run that fits, lowest address first. Handing
// out the low end of a run keeps consecutive kernels adjacent, so that their read+execute
// ranges merge into one VMA instead of splitting the mapping at every kernel.
class ExecutablePool {
 public:
  ExecutablePool() = default;
  // Unmaps everything: nothing the pool made may still run.
  ~ExecutablePool();
  ExecutablePool(const ExecutablePool &) = delete;
  ExecutablePool &operator=(const ExecutablePool &) = delete;

  // Copies `size` bytes of position-independent code into read+execute pages.
  bool make(const uint8_t *src, size_t size, ExecutableCode *out, std::string *error);
  // Gives back what make() reserved; null is a no-op. The code must no longer run.
  void release(uint8_t *code, size_t mapped);
  ExecutablePoolStats stats();

 private:
  using FreeRuns = std::map<uint8_t *, size_t>;
  uint8_t *take(size_t bytes, std::string *error);
  void give_back(uint8_t *start, size_t bytes);
  std::set<std::pair<size_t, uint8_t *>>::iterator insert_free(uint8_t *start, size_t bytes);
  void erase_free(FreeRuns::iterator it);

  std::mutex mutex_;
  FreeRuns by_address_;
  std::set<std::pair<size_t, uint8_t *>> by_size_;
  std::vector<std::pair<void *, size_t>> mappings_;
  ExecutablePoolStats stats_;
};

// The process's pool (never destroyed: kernels held by static objects are released during
// exit, in any order).
ExecutablePool &executable_pool();

// make / release on the process's pool.
bool make_executable(const uint8_t *src, size_t size, ExecutableCode *out, std::string *error);
void release_executable(uint8_t *code, size_t mapped);

}  // namespace tessel
