// Eigen, compiled with -mavx2 -mfma and no AVX-512 (CMakeLists.txt); threads with OpenMP.
#include <omp.h>

#include <Eigen/Core>

#include "peer.h"

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

const char *peer_name() {
  return "Eigen";
}
void peer_setup(int threads) {
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
}
std::string peer_isa() {
  std::string isa = std::string("SIMD ") + Eigen::SimdInstructionSetsInUse();
#if defined(__AVX2__) && defined(__FMA__)
  isa += "; compiled with AVX2 and FMA";
#endif
#ifdef __AVX512F__
  isa += "; AVX-512 compiled in (not a fair comparison)";
#else
  isa += ", without AVX-512";
#endif
  return isa;
}
void peer_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
  Eigen::Map<const Matrix> A(a, m, k), B(b, k, n);
  Eigen::Map<Matrix> C(c, m, n);
  C.noalias() = A * B;
}
