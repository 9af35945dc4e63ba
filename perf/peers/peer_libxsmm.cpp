// libxsmm: LIBXSMM_TARGET=hsw (peers.py). Its JIT covers small shapes; beyond its size
// thresholds libxsmm_sgemm hands the call to the BLAS it is linked with (OpenBLAS here), as it
// would in an application.
#include <libxsmm.h>

#include "peer.h"

const char *peer_name() {
  return "libxsmm";
}
void peer_setup(int) {
  libxsmm_init();
}
std::string peer_isa() {
  return std::string("target ") + libxsmm_get_target_arch();
}
void peer_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
  // Column-major: C^T = B^T A^T.
  const libxsmm_blasint mm = n, nn = m, kk = k, lda = n, ldb = k, ldc = n;
  const float one = 1.0f, zero = 0.0f;
  libxsmm_sgemm("N", "N", &mm, &nn, &kk, &one, b, &lda, a, &ldb, &zero, c, &ldc);
}
