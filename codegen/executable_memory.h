// Executable memory with W^X: pages are mapped read+write, the code is copied in, and the
// pages are switched to read+execute before anyone can call them. No page is ever writable
// and executable at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tessel {

struct ExecutableCode {
  uint8_t *code = nullptr;  // page-aligned, read+execute
  size_t size = 0;          // bytes of code
  size_t mapped = 0;        // bytes mapped (whole pages)
};

// Copies `size` bytes of position-independent code into fresh read+execute pages.
bool make_executable(const uint8_t *src, size_t size, ExecutableCode *out, std::string *error);
// Unmaps what make_executable mapped; null is a no-op.
void release_executable(uint8_t *code, size_t mapped);

}  // namespace tessel
