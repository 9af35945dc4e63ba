// Status plumbing: the per-thread last error message behind tessel_last_error().
#pragma once
#include <string>

#include "tessel/tessel.h"

namespace tessel::runtime {

// Records `message` as this thread's last error and returns `status`.
tessel_status fail(tessel_status status, std::string message);
void clear_error();
const char *last_error();

}  // namespace tessel::runtime
