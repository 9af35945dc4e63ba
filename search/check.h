// Internal invariants. A failed TESSEL_CHECK is a bug in tessel, never a user mistake (those
// return a status): it reports file and line and aborts, as Halide's internal_assert does.
#pragma once

namespace tessel {
[[noreturn]] void check_failed(const char *file, int line, const char *cond, const char *msg);
}

#define TESSEL_CHECK(cond, msg) \
  ((cond) ? (void)0 : ::tessel::check_failed(__FILE__, __LINE__, #cond, msg))
