#include "executable_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

namespace tessel {
namespace {

size_t page_bytes() {
  static const size_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t{4096};
  }();
  return page;
}

// Mappings are made at least this big, so that a few hundred typical kernels (1-3 pages) share
// one. Only address space is reserved: a page is faulted in when a kernel is first copied into
// it (pre-faulting costs ~3 us a page on the VMs measured, too much to pay ahead for a single
// first kernel).
constexpr size_t kMappingBytes = size_t{1} << 20;

}  // namespace

ExecutablePool::~ExecutablePool() {
  for (const auto &[start, bytes] : mappings_) munmap(start, bytes);
}

uint8_t *ExecutablePool::take(size_t bytes, std::string *error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto fit = by_size_.lower_bound({bytes, nullptr});
  if (fit == by_size_.end()) {
    const size_t length = std::max(bytes, kMappingBytes);
    void *p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      *error = std::string("mmap: ") + std::strerror(errno);
      return nullptr;
    }
    mappings_.emplace_back(p, length);
    stats_.mapped_bytes += length;
    ++stats_.mappings;
    fit = insert_free(static_cast<uint8_t *>(p), length);
  }
  const auto [length, start] = *fit;
  erase_free(by_address_.find(start));
  if (length > bytes) insert_free(start + bytes, length - bytes);
  return start;
}

void ExecutablePool::give_back(uint8_t *start, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto next = by_address_.lower_bound(start);
  if (next != by_address_.end() && next->first == start + bytes) {
    bytes += next->second;
    erase_free(next);
  }
  const auto after = by_address_.lower_bound(start);
  if (after != by_address_.begin()) {
    const auto prev = std::prev(after);
    if (prev->first + prev->second == start) {
      start = prev->first;
      bytes += prev->second;
      erase_free(prev);
    }
  }
  insert_free(start, bytes);
}

std::set<std::pair<size_t, uint8_t *>>::iterator ExecutablePool::insert_free(uint8_t *start,
                                                                             size_t bytes) {
  by_address_.emplace(start, bytes);
  stats_.free_bytes += bytes;
  return by_size_.emplace(bytes, start).first;
}

void ExecutablePool::erase_free(FreeRuns::iterator it) {
  stats_.free_bytes -= it->second;
  by_size_.erase({it->second, it->first});
  by_address_.erase(it);
}

bool ExecutablePool::make(const uint8_t *src, size_t size, ExecutableCode *out,
                          std::string *error) {
  const size_t page = page_bytes();
  const size_t mapped = (size + page - 1) / page * page;
  if (mapped == 0) {
    *error = "make_executable: empty code";
    return false;
  }
  uint8_t *const p = take(mapped, error);
  if (p == nullptr) return false;
  std::memcpy(p, src, size);
  if (mprotect(p, mapped, PROT_READ | PROT_EXEC) != 0) {
    *error = std::string("mprotect(R+X): ") + std::strerror(errno);
    give_back(p, mapped);  // still read+write
    return false;
  }
  out->code = p;
  out->size = size;
  out->mapped = mapped;
  return true;
}

void ExecutablePool::release(uint8_t *code, size_t mapped) {
  if (code == nullptr) return;
  // If the switch fails the pages stay read+execute and are never handed out again.
  if (mprotect(code, mapped, PROT_READ | PROT_WRITE) != 0) return;
  give_back(code, mapped);
}

ExecutablePoolStats ExecutablePool::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  ExecutablePoolStats s = stats_;
  s.used_bytes = s.mapped_bytes - s.free_bytes;
  return s;
}

ExecutablePool &executable_pool() {
  static ExecutablePool *const pool = new ExecutablePool;
  return *pool;
}

bool make_executable(const uint8_t *src, size_t size, ExecutableCode *out, std::string *error) {
  return executable_pool().make(src, size, out, error);
}

void release_executable(uint8_t *code, size_t mapped) {
  executable_pool().release(code, mapped);
}

}  // namespace tessel
