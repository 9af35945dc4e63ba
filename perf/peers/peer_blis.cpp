// BLIS: forced to its haswell configuration with BLIS_ARCH_TYPE=3 (peers.py; BLIS 0.9 reads
// the arch_t number, and BLIS_ARCH_HASWELL is 3).
#include <blis.h>

#include "peer.h"

const char *peer_name() {
  return "BLIS";
}
void peer_setup(int threads) {
  bli_thread_set_num_threads(threads);
}
std::string peer_isa() {
  return std::string("arch ") + bli_arch_string(bli_arch_query_id());
}
void peer_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
  float one = 1.0f, zero = 0.0f;
  bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, const_cast<float *>(a), k, 1,
            const_cast<float *>(b), n, 1, &zero, c, n, 1);
}
