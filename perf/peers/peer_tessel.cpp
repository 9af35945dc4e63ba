#include "peer.h"
#include "tessel/tessel.h"

const char *peer_name() {
  return "tessel";
}
void peer_setup(int threads) {
  tessel_set_num_threads(threads);
}
std::string peer_isa() {
  return "AVX2+FMA kernels only (tessel has no other target)";
}
void peer_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
  tessel_sgemm(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, m, n, k, 1.0f, a, k, b, n, 0.0f,
               c, n);
}
