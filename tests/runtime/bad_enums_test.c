/* C callers may pass any int where tessel.h expects an enum; this file does, in C, where
 * that is well defined (it would not be from C++). */
#include <stddef.h>

#include "tessel/tessel.h"

void tessel_test_call_with_bad_enums(tessel_status out[4], const char **status_text) {
  float a[4] = {0}, b[4] = {0}, c[4] = {0};
  out[0] = tessel_sgemm((tessel_layout)0, TESSEL_NO_TRANS, TESSEL_NO_TRANS, 2, 2, 2, 1, a, 2, b, 2,
                        0, c, 2);
  out[1] = tessel_sgemm(TESSEL_ROW_MAJOR, (tessel_transpose)7, TESSEL_NO_TRANS, 2, 2, 2, 1, a, 2, b,
                        2, 0, c, 2);
  out[2] = tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, (tessel_transpose)-1, 2, 2, 2, 1, a, 2,
                        b, 2, 0, c, 2);
  tessel_sgemm_kernel k = NULL;
  out[3] = tessel_sgemm_kernel_create(TESSEL_ROW_MAJOR, (tessel_transpose)113, TESSEL_NO_TRANS, 2,
                                      2, 2, 2, 2, 2, &k);
  *status_text = tessel_status_string((tessel_status)99);
}
