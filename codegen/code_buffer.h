// The read+write buffer a thread emits code into before it is copied into executable pages.
//
// Each thread keeps one (jit_kernel.cpp) and reuses it for every kernel it emits: allocating a
// fresh buffer per kernel (and touching fresh pages) cost more than emitting a small kernel.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessel {

class CodeBuffer {
 public:
  CodeBuffer() = default;
  ~CodeBuffer();
  CodeBuffer(const CodeBuffer &) = delete;
  CodeBuffer &operator=(const CodeBuffer &) = delete;

  // At least `bytes` bytes, page-aligned (Xbyak's align() counts from the absolute address,
  // and executable copies start on a page); null when memory runs out. Earlier contents are
  // lost.
  uint8_t *reserve(size_t bytes);
  size_t capacity() const { return capacity_; }
  // Gives back a buffer that grew past what the next kernel most likely needs.
  void trim();

 private:
  uint8_t *data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace tessel
