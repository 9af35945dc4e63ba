// OpenBLAS: forced to its Haswell (AVX2) kernels with OPENBLAS_CORETYPE=Haswell (peers.py).
#include <cblas.h>

#include "peer.h"

extern "C" char *openblas_get_corename(void);
extern "C" void openblas_set_num_threads(int);

const char *peer_name() {
  return "OpenBLAS";
}
void peer_setup(int threads) {
  openblas_set_num_threads(threads);
}
std::string peer_isa() {
  return std::string("core ") + openblas_get_corename();
}
void peer_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
