// libtessel_blas.so: the BLAS sgemm entry points over tessel, for programs that already
// call BLAS (link it, or LD_PRELOAD it in front of any BLAS).
//
//   sgemm_       Fortran ABI: every argument by pointer, column-major; the hidden string
//                lengths of transa/transb are never read (many C callers omit them).
//   cblas_sgemm  CBLAS: both layouts.
//
// Argument errors are checked in the reference implementation's order and reported through
// xerbla_ / cblas_xerbla with the reference parameter numbers. The weak defaults below print
// the reference message and return (the reference stops the program; a library must not).
// Applications and the reference testers define their own, which take precedence.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "tessel/tessel.h"

extern "C" {
// Set while a row-major cblas call reports an error, as the reference CBLAS does.
TESSEL_API int RowMajorStrg = 0;
TESSEL_API void xerbla_(const char *srname, const int *info, int srname_len);
TESSEL_API void cblas_xerbla(int info, const char *rout, const char *form, ...);
TESSEL_API void sgemm_(const char *transa, const char *transb, const int *m, const int *n,
                       const int *k, const float *alpha, const float *a, const int *lda,
                       const float *b, const int *ldb, const float *beta, float *c, const int *ldc);
TESSEL_API void cblas_sgemm(int layout, int trans_a, int trans_b, int m, int n, int k, float alpha,
                            const float *a, int lda, const float *b, int ldb, float beta, float *c,
                            int ldc);
}

namespace {

// CBLAS enumerator values (cblas.h), which tessel.h shares.
constexpr int kRowMajor = 101, kColMajor = 102;
constexpr int kNoTrans = 111, kTrans = 112, kConjTrans = 113;

// The reference semantics, for when tessel cannot run (no AVX2, an internal error): slow but
// never wrong, and the caller still gets C.
void fallback_sgemm(bool row_major, bool ta, bool tb, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c,
                    int ldc) {
  auto at = [&](const float *p, int ld, bool trans, int i, int j) {
    // Element (i, j) of op(X) for a matrix stored in `row_major` order.
    const bool rows = row_major != trans;
    return rows ? p[int64_t(trans ? j : i) * ld + (trans ? i : j)]
                : p[(trans ? j : i) + int64_t(trans ? i : j) * ld];
  };
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      if (alpha != 0.0f)
        for (int p = 0; p < k; ++p) acc += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
      float &dst = row_major ? c[int64_t(i) * ldc + j] : c[i + int64_t(j) * ldc];
      dst = beta == 0.0f ? alpha * acc : alpha * acc + beta * dst;
    }
}

void gemm(bool row_major, bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
          int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  // The reference's quick return.
  if (m == 0 || n == 0 || ((alpha == 0.0f || k == 0) && beta == 1.0f)) return;
  const tessel_status st = tessel_sgemm(
      row_major ? TESSEL_ROW_MAJOR : TESSEL_COL_MAJOR, ta ? TESSEL_TRANS : TESSEL_NO_TRANS,
      tb ? TESSEL_TRANS : TESSEL_NO_TRANS, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (st == TESSEL_OK) return;
  static std::once_flag warned;
  std::call_once(warned, [st] {
    std::fprintf(stderr, "tessel_blas: %s (%s); using the portable reference loop\n",
                 tessel_status_string(st), tessel_last_error());
  });
  fallback_sgemm(row_major, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int max1(int v) {
  return v > 1 ? v : 1;
}

bool is_no_trans(char t) {
  return t == 'N' || t == 'n';
}
bool is_trans(char t) {
  return t == 'T' || t == 't' || t == 'C' || t == 'c';
}

}  // namespace

extern "C" {

__attribute__((weak)) void xerbla_(const char *srname, const int *info, int srname_len) {
  int len = srname_len > 0 && srname_len < 32 ? srname_len : 6;
  while (len > 0 && srname[len - 1] == ' ') --len;
  std::fprintf(stderr, " ** On entry to %.*s parameter number %2d had an illegal value\n", len,
               srname, *info);
}

__attribute__((weak)) void cblas_xerbla(int info, const char *rout, const char *form, ...) {
  if (RowMajorStrg && std::strstr(rout, "gemm")) {
    static const int kRowMajorNumber[15] = {0, 1, 2, 3, 5, 4, 6, 7, 8, 11, 10, 9, 12, 13, 14};
    if (info > 0 && info < 15) info = kRowMajorNumber[info];
  }
  std::fprintf(stderr, "Parameter %d to routine %s was incorrect\n", info, rout);
  va_list args;
  va_start(args, form);
  std::vfprintf(stderr, form, args);
  va_end(args);
}

void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
            const float *beta, float *c, const int *ldc) {
  const bool nota = is_no_trans(*transa), notb = is_no_trans(*transb);
  int info = 0;
  if (!nota && !is_trans(*transa))
    info = 1;
  else if (!notb && !is_trans(*transb))
    info = 2;
  else if (*m < 0)
    info = 3;
  else if (*n < 0)
    info = 4;
  else if (*k < 0)
    info = 5;
  else if (*lda < max1(nota ? *m : *k))
    info = 8;
  else if (*ldb < max1(notb ? *k : *n))
    info = 10;
  else if (*ldc < max1(*m))
    info = 13;
  if (info) {
    xerbla_("SGEMM ", &info, 6);
    return;
  }
  gemm(false, !nota, !notb, *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c, *ldc);
}

void cblas_sgemm(int layout, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  auto valid = [](int t) { return t == kNoTrans || t == kTrans || t == kConjTrans; };
  if (layout != kRowMajor && layout != kColMajor) {
    cblas_xerbla(1, "cblas_sgemm", "Illegal layout setting, %d\n", layout);
    return;
  }
  if (!valid(trans_a)) {
    cblas_xerbla(2, "cblas_sgemm", "Illegal TransA setting, %d\n", trans_a);
    return;
  }
  if (!valid(trans_b)) {
    cblas_xerbla(3, "cblas_sgemm", "Illegal TransB setting, %d\n", trans_b);
    return;
  }
  const bool ta = trans_a != kNoTrans, tb = trans_b != kNoTrans;
  // The reference hands a row-major call to the Fortran routine as the transposed problem
  // (B and A, n and m swapped): its checks run in that order and number the parameters of
  // that call, and cblas_xerbla maps them back (4 <-> 5, 9 <-> 11 for gemm) when
  // RowMajorStrg is set. Testers and applications rely on exactly that protocol.
  int info = 0;
  if (layout == kColMajor) {
    if (m < 0)
      info = 4;
    else if (n < 0)
      info = 5;
    else if (k < 0)
      info = 6;
    else if (lda < max1(ta ? k : m))
      info = 9;
    else if (ldb < max1(tb ? n : k))
      info = 11;
    else if (ldc < max1(m))
      info = 14;
  } else {
    if (n < 0)
      info = 4;
    else if (m < 0)
      info = 5;
    else if (k < 0)
      info = 6;
    else if (ldb < max1(tb ? k : n))
      info = 9;
    else if (lda < max1(ta ? m : k))
      info = 11;
    else if (ldc < max1(n))
      info = 14;
  }
  if (info) {
    RowMajorStrg = layout == kRowMajor;
    cblas_xerbla(info, "cblas_sgemm", "");
    RowMajorStrg = 0;
    return;
  }
  gemm(layout == kRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // extern "C"
