#include "check.h"

#include <cstdio>
#include <cstdlib>

namespace tessel {

void check_failed(const char *file, int line, const char *cond, const char *msg) {
  std::fprintf(stderr, "tessel internal error at %s:%d: %s (%s)\n", file, line, msg, cond);
  std::abort();
}

}  // namespace tessel
