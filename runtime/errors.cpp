#include "errors.h"

namespace tessel::runtime {

static thread_local std::string t_last_error;

tessel_status fail(tessel_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

void clear_error() {
  t_last_error.clear();
}

const char *last_error() {
  return t_last_error.c_str();
}

}  // namespace tessel::runtime
