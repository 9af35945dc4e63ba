#include "problem.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "errors.h"

namespace tessel::runtime {

size_t KernelKeyHash::operator()(const KernelKey &k) const {
  uint64_t h = 0;
  auto mix = [&h](uint64_t w) {
    uint64_t z = h + w + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    h = z ^ (z >> 31);
  };
  mix(uint64_t(uint32_t(k.m)) | uint64_t(uint32_t(k.n)) << 32);
  mix(uint64_t(uint32_t(k.k)) | uint64_t(k.trans_a) << 32 | uint64_t(k.trans_b) << 33 |
      uint64_t(k.accumulate) << 34 | uint64_t(k.threads) << 40);
  mix(uint64_t(k.lda));
  mix(uint64_t(k.ldb));
  mix(uint64_t(k.ldc));
  return h;
}

std::string kernel_name(const KernelKey &k) {
  char buf[192];
  std::snprintf(buf, sizeof buf, "tessel_sgemm_%dx%dx%d_%c%c_%s_t%d_ld%lld_%lld_%lld", k.m, k.k,
                k.n, k.trans_a ? 't' : 'n', k.trans_b ? 't' : 'n', k.accumulate ? "acc" : "set",
                k.threads, static_cast<long long>(k.lda), static_cast<long long>(k.ldb),
                static_cast<long long>(k.ldc));
  return buf;
}

static tessel_status bad(const char *what, int64_t value, int64_t minimum) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s is %lld, must be at least %lld", what,
                static_cast<long long>(value), static_cast<long long>(minimum));
  return fail(TESSEL_INVALID_ARGUMENT, buf);
}

// Whether `lines` rows (or columns) `ld` floats apart, each `length` long, fit the largest
// address space of x86-64 (2^56 bytes of user space, with 5-level paging). Operands beyond it
// can only come from a wrong leading dimension, and the addresses the kernels compute across
// them would wrap around: read garbage or fault instead of reporting the mistake.
static bool fits_address_space(int64_t lines, int64_t length, int64_t ld) {
  constexpr int64_t kMaxFloats = int64_t{1} << 54;
  return ld <= kMaxFloats && (lines <= 1 || lines - 1 <= (kMaxFloats - length) / ld);
}

static tessel_status too_far_apart(const char *what, int64_t ld, bool row_major) {
  char buf[192];
  std::snprintf(buf, sizeof buf,
                "%s is %lld: %s that far apart would span more than the 2^56 bytes of any "
                "address space",
                what, static_cast<long long>(ld), row_major ? "rows" : "columns");
  return fail(TESSEL_INVALID_ARGUMENT, buf);
}

std::array<int64_t, 3> min_leading_dimensions(int layout, int trans_a, int trans_b, int64_t m,
                                              int64_t n, int64_t k) {
  const bool ta = trans_a == TESSEL_TRANS, tb = trans_b == TESSEL_TRANS;
  const bool row = layout == TESSEL_ROW_MAJOR;
  // The length of a stored row (row-major) or column.
  return {std::max<int64_t>(1, row != ta ? k : m), std::max<int64_t>(1, row != tb ? n : k),
          std::max<int64_t>(1, row ? n : m)};
}

tessel_status normalize_shape(int layout, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                              int64_t lda, int64_t ldb, int64_t ldc, Problem *out) {
  if (layout != TESSEL_ROW_MAJOR && layout != TESSEL_COL_MAJOR)
    return fail(TESSEL_INVALID_ARGUMENT, "layout must be TESSEL_ROW_MAJOR or TESSEL_COL_MAJOR");
  if (trans_a != TESSEL_NO_TRANS && trans_a != TESSEL_TRANS)
    return fail(TESSEL_INVALID_ARGUMENT, "trans_a must be TESSEL_NO_TRANS or TESSEL_TRANS");
  if (trans_b != TESSEL_NO_TRANS && trans_b != TESSEL_TRANS)
    return fail(TESSEL_INVALID_ARGUMENT, "trans_b must be TESSEL_NO_TRANS or TESSEL_TRANS");
  if (m < 0) return bad("m", m, 0);
  if (n < 0) return bad("n", n, 0);
  if (k < 0) return bad("k", k, 0);
  // The emitted code addresses with 32-bit loop extents; larger matrices are refused clearly.
  constexpr int64_t kMaxExtent = INT32_MAX;
  if (m > kMaxExtent || n > kMaxExtent || k > kMaxExtent)
    return fail(TESSEL_INVALID_ARGUMENT, "m, n and k must be below 2^31");
  const bool ta = trans_a == TESSEL_TRANS, tb = trans_b == TESSEL_TRANS;
  const bool row = layout == TESSEL_ROW_MAJOR;
  const auto [min_lda, min_ldb, min_ldc] =
      min_leading_dimensions(layout, trans_a, trans_b, m, n, k);
  if (lda < min_lda) return bad("lda", lda, min_lda);
  if (ldb < min_ldb) return bad("ldb", ldb, min_ldb);
  if (ldc < min_ldc) return bad("ldc", ldc, min_ldc);
  // The operands a call reads or writes (C when it has elements, A and B when k > 0 too), as
  // stored: how many rows (or columns) and how long.
  if (m > 0 && n > 0) {
    if (!fits_address_space(row ? m : n, min_ldc, ldc)) return too_far_apart("ldc", ldc, row);
    if (k > 0 && !fits_address_space(row != ta ? m : k, min_lda, lda))
      return too_far_apart("lda", lda, row);
    if (k > 0 && !fits_address_space(row != tb ? k : n, min_ldb, ldb))
      return too_far_apart("ldb", ldb, row);
  }
  Problem p;
  if (row) {
    p = Problem{m, n, k, ta, tb, false, nullptr, nullptr, nullptr, lda, ldb, ldc};
  } else {
    p = Problem{n, m, k, tb, ta, true, nullptr, nullptr, nullptr, ldb, lda, ldc};
  }
  *out = p;
  return TESSEL_OK;
}

tessel_status bind_operands(Problem &p, float alpha, const float *a, const float *b, float *c) {
  if (p.swapped) std::swap(a, b);
  const bool reads_ab = alpha != 0.0f && p.k > 0 && p.m > 0 && p.n > 0;
  if (p.m > 0 && p.n > 0 && !c) return fail(TESSEL_INVALID_ARGUMENT, "c is NULL");
  if (reads_ab && (!a || !b))
    return fail(TESSEL_INVALID_ARGUMENT, (!a) != p.swapped ? "a is NULL" : "b is NULL");
  p.a = a;
  p.b = b;
  p.c = c;
  return TESSEL_OK;
}

KernelKey kernel_key(const Problem &p, bool accumulate, int threads) {
  KernelKey key;
  key.m = static_cast<int32_t>(p.m);
  key.n = static_cast<int32_t>(p.n);
  key.k = static_cast<int32_t>(p.k);
  key.trans_a = p.trans_a;
  key.trans_b = p.trans_b;
  key.accumulate = accumulate;
  key.threads = static_cast<uint8_t>(threads);
  key.lda = p.lda;
  key.ldb = p.ldb;
  key.ldc = p.ldc;
  return key;
}

}  // namespace tessel::runtime
