#include "zeroed_array.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tessel {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// Below this, the heap: a mapping costs a system call and at least a page.
constexpr size_t kMapThreshold = size_t{256} << 10;

size_t round_up(size_t bytes, size_t to) {
  return (bytes + to - 1) / to * to;
}

}  // namespace

void *allocate_zeroed(size_t bytes) {
  if (bytes < kMapThreshold) {
    void *p = std::aligned_alloc(64, round_up(bytes ? bytes : 1, 64));
    if (!p) throw std::bad_alloc();
    return std::memset(p, 0, bytes);
  }
  // Map a huge page more than needed, and keep the part that starts on a huge page boundary:
  // only whole aligned 2 MiB ranges can be huge pages.
  const size_t length = round_up(bytes, kHugePage);
  void *map =
      mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(map);
  const uintptr_t aligned = round_up(start, kHugePage);
  if (aligned > start) munmap(map, aligned - start);
  const uintptr_t end = start + length + kHugePage;
  if (end > aligned + length)
    munmap(reinterpret_cast<void *>(aligned + length), end - aligned - length);
  void *p = reinterpret_cast<void *>(aligned);
  madvise(p, length, MADV_HUGEPAGE);  // advice: failing changes nothing
  return p;
}

void free_zeroed(void *p, size_t bytes) {
  if (bytes < kMapThreshold)
    std::free(p);
  else
    munmap(p, round_up(bytes, kHugePage));
}

}  // namespace tessel
