#include "executable_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tessel {

bool make_executable(const uint8_t *src, size_t size, ExecutableCode *out, std::string *error) {
  const long page_size = sysconf(_SC_PAGESIZE);
  const size_t page = page_size > 0 ? static_cast<size_t>(page_size) : 4096;
  const size_t mapped = (size + page - 1) / page * page;
  if (mapped == 0) {
    *error = "make_executable: empty code";
    return false;
  }
  void *p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    *error = std::string("mmap: ") + std::strerror(errno);
    return false;
  }
  std::memcpy(p, src, size);
  if (mprotect(p, mapped, PROT_READ | PROT_EXEC) != 0) {
    *error = std::string("mprotect(R+X): ") + std::strerror(errno);
    munmap(p, mapped);
    return false;
  }
  out->code = static_cast<uint8_t *>(p);
  out->size = size;
  out->mapped = mapped;
  return true;
}

void release_executable(uint8_t *code, size_t mapped) {
  if (code != nullptr) munmap(code, mapped);
}

}  // namespace tessel
