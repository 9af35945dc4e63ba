#include "code_buffer.h"

#include <cstdlib>
#include <cstring>

namespace tessel {
namespace {

constexpr size_t kPage = 4096;
// Kept across kernels up to this size: the largest benchmark plan (1000^3, 398 nodes) emits
// 44 KiB; a thread that once emitted a bigger kernel gives the excess back after it.
constexpr size_t kKeepBytes = 256 * 1024;

}  // namespace

CodeBuffer::~CodeBuffer() {
  std::free(data_);
}

uint8_t *CodeBuffer::reserve(size_t bytes) {
  if (bytes <= capacity_) return data_;
  const size_t rounded = (bytes + kPage - 1) / kPage * kPage;
  auto *grown = static_cast<uint8_t *>(std::aligned_alloc(kPage, rounded));
  if (grown == nullptr) return nullptr;
  // Touch every page now, once per thread: otherwise a later first call that emits more code
  // than any before on this thread takes the page faults (~3 us each on the VMs measured,
  // more with cold caches) in the middle of emission.
  std::memset(grown, 0, rounded);
  std::free(data_);
  data_ = grown;
  capacity_ = rounded;
  return data_;
}

void CodeBuffer::trim() {
  if (capacity_ <= kKeepBytes) return;
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace tessel
