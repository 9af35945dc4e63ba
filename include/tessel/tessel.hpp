// tessel C++ API: a thin layer over tessel.h. Errors become tessel::Error exceptions here
// and only here; nothing throws across the C boundary.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tessel/tessel.h"

namespace tessel {

class Error : public std::runtime_error {
 public:
  Error(tessel_status status, const std::string &what)
      : std::runtime_error(what), status_(status) {}
  tessel_status status() const { return status_; }

 private:
  tessel_status status_;
};

inline void check(tessel_status status) {
  if (status != TESSEL_OK)
    throw Error(status, std::string(tessel_status_string(status)) + ": " + tessel_last_error());
}

enum class Layout { RowMajor = TESSEL_ROW_MAJOR, ColMajor = TESSEL_COL_MAJOR };
enum class Transpose { No = TESSEL_NO_TRANS, Yes = TESSEL_TRANS };

struct GemmShape {
  Layout layout = Layout::RowMajor;
  Transpose trans_a = Transpose::No, trans_b = Transpose::No;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
};

// C = alpha * op(A) * op(B) + beta * C, with a registry lookup per call.
inline void sgemm(const GemmShape &s, float alpha, const float *a, const float *b, float beta,
                  float *c) {
  check(tessel_sgemm(tessel_layout(s.layout), tessel_transpose(s.trans_a),
                     tessel_transpose(s.trans_b), s.m, s.n, s.k, alpha, a, s.lda, b, s.ldb, beta, c,
                     s.ldc));
}

// A kernel handle: prepare once, call many times without any lookup.
class SgemmKernel {
 public:
  explicit SgemmKernel(const GemmShape &s) {
    check(tessel_sgemm_kernel_create(tessel_layout(s.layout), tessel_transpose(s.trans_a),
                                     tessel_transpose(s.trans_b), s.m, s.n, s.k, s.lda, s.ldb,
                                     s.ldc, &kernel_));
  }
  ~SgemmKernel() { tessel_sgemm_kernel_destroy(kernel_); }
  SgemmKernel(SgemmKernel &&other) noexcept : kernel_(std::exchange(other.kernel_, nullptr)) {}
  SgemmKernel &operator=(SgemmKernel &&other) noexcept {
    std::swap(kernel_, other.kernel_);
    return *this;
  }
  SgemmKernel(const SgemmKernel &) = delete;
  SgemmKernel &operator=(const SgemmKernel &) = delete;

  void operator()(float alpha, const float *a, const float *b, float beta, float *c) const {
    check(tessel_sgemm_kernel_run(kernel_, alpha, a, b, beta, c));
  }

 private:
  tessel_sgemm_kernel kernel_ = nullptr;
};

// Prepares kernels for these calls ahead of time (see tessel_warm). `beta` of each shape
// selects overwrite (0) or accumulate kernels; `progress(done, total)` may be empty.
inline void warm(std::span<const GemmShape> shapes, float beta = 0,
                 std::function<void(size_t done, size_t total)> progress = {}) {
  std::vector<tessel_sgemm_shape> list;
  list.reserve(shapes.size());
  for (const GemmShape &s : shapes)
    list.push_back({tessel_layout(s.layout), tessel_transpose(s.trans_a),
                    tessel_transpose(s.trans_b), s.m, s.n, s.k, s.lda, s.ldb, s.ldc, beta});
  auto report = [](size_t done, size_t total, size_t, tessel_status, void *user) {
    (*static_cast<std::function<void(size_t, size_t)> *>(user))(done, total);
  };
  check(tessel_warm(list.data(), list.size(), progress ? +report : nullptr, &progress));
}

}  // namespace tessel
