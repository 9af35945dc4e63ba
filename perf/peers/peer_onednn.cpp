// oneDNN: dnnl_sgemm, limited to AVX2 with ONEDNN_MAX_CPU_ISA=AVX2 (peers.py); Debian's build
// threads with OpenMP (OMP_NUM_THREADS).
#include <dnnl.h>
#include <omp.h>

#include "peer.h"

const char *peer_name() {
  return "oneDNN";
}
void peer_setup(int threads) {
  omp_set_num_threads(threads);
}
std::string peer_isa() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx2:
      return "effective ISA avx2";
    case dnnl_cpu_isa_avx512_core:
      return "effective ISA avx512_core";
    default:
      return "effective ISA other (" + std::to_string(int(dnnl_get_effective_cpu_isa())) + ")";
  }
}
void peer_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
  dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
