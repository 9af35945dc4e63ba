// Shared test helpers: seeded data, the naive reference matmul, tolerance.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace tessel::test {

// Fills with uniform values in [-1, 1).
void fill_random(std::vector<float> &v, std::mt19937_64 &rng);

// C = alpha * op(A) * op(B) + beta * C, row-major C (ldc), A is m x k (row-major with lda, or
// stored k x m when trans_a), B is k x n likewise. beta == 0 overwrites C. Double accumulation.
void reference_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                     int64_t ldc);

// Tolerance for a result accumulated over k products of values in [-1, 1).
inline float tolerance(int64_t k) {
  return 1e-5f * static_cast<float>(k + 8);
}

}  // namespace tessel::test
