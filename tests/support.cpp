#include "support.h"

namespace tessel::test {

void fill_random(std::vector<float> &v, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float &x : v) x = dist(rng);
}

void reference_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                     int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const float bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc += double(av) * double(bv);
      }
      float &dst = c[i * ldc + j];
      dst = beta == 0.0f ? float(alpha * acc) : float(alpha * acc + double(beta) * dst);
    }
}

}  // namespace tessel::test
