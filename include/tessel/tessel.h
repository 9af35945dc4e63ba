/* tessel: JIT-generated matrix multiplication for x86-64 CPUs.
 *
 * The first call with a new shape searches for the cheapest implementation, emits it as
 * machine code and caches it; later calls with the same shape are a lookup and a call.
 * Every function returns a status; none aborts, throws or exits on bad input. After a
 * failure, tessel_last_error() describes it (per thread). */
#ifndef TESSEL_TESSEL_H
#define TESSEL_TESSEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TESSEL_API __attribute__((visibility("default")))
#else
#define TESSEL_API
#endif

typedef enum tessel_status {
  TESSEL_OK = 0,
  TESSEL_INVALID_ARGUMENT = 1, /* a bad size, leading dimension, pointer or enum value */
  TESSEL_UNSUPPORTED_CPU = 2,  /* the CPU or OS lacks AVX2 and FMA */
  TESSEL_OUT_OF_MEMORY = 3,
  TESSEL_NO_PLAN = 4,       /* the search found no implementation (a tessel bug) */
  TESSEL_CODEGEN_ERROR = 5, /* machine code emission failed (a tessel bug) */
  TESSEL_INTERNAL_ERROR = 6
} tessel_status;

/* Values match CBLAS so the enums convert directly. */
typedef enum tessel_layout { TESSEL_ROW_MAJOR = 101, TESSEL_COL_MAJOR = 102 } tessel_layout;
typedef enum tessel_transpose { TESSEL_NO_TRANS = 111, TESSEL_TRANS = 112 } tessel_transpose;

/* C = alpha * op(A) * op(B) + beta * C, op(A) m x k, op(B) k x n, C m x n, BLAS semantics:
 * beta == 0 overwrites C without reading it; alpha == 0 (or k == 0) reads neither A nor B;
 * m, n or k == 0 are legal. Leading dimensions are in elements, at least a stored row (or
 * column) long, and small enough that each operand spans at most 2^56 bytes. */
TESSEL_API tessel_status tessel_sgemm(tessel_layout layout, tessel_transpose trans_a,
                                      tessel_transpose trans_b, int64_t m, int64_t n, int64_t k,
                                      float alpha, const float *a, int64_t lda, const float *b,
                                      int64_t ldb, float beta, float *c, int64_t ldc);

/* A short description of a status code. Never NULL. */
TESSEL_API const char *tessel_status_string(tessel_status status);

/* The message of the last failed call on this thread ("" if none). Never NULL. */
TESSEL_API const char *tessel_last_error(void);

/* Threads tessel may use for one call (1 = no tasking). 0 restores the default:
 * TESSEL_NUM_THREADS, else the hardware concurrency. */
TESSEL_API tessel_status tessel_set_num_threads(int threads);
TESSEL_API int tessel_get_num_threads(void);

/* A prepared kernel: the shape, layouts and leading dimensions fixed once, so each run
 * skips argument normalization and the registry lookup. */
typedef struct tessel_sgemm_kernel_s *tessel_sgemm_kernel;

TESSEL_API tessel_status tessel_sgemm_kernel_create(tessel_layout layout, tessel_transpose trans_a,
                                                    tessel_transpose trans_b, int64_t m, int64_t n,
                                                    int64_t k, int64_t lda, int64_t ldb,
                                                    int64_t ldc, tessel_sgemm_kernel *out);
TESSEL_API tessel_status tessel_sgemm_kernel_run(tessel_sgemm_kernel kernel, float alpha,
                                                 const float *a, const float *b, float beta,
                                                 float *c);
TESSEL_API void tessel_sgemm_kernel_destroy(tessel_sgemm_kernel kernel);

typedef struct tessel_stats {
  int64_t kernels;       /* kernels compiled and resident */
  int64_t hits;          /* calls served from the registry */
  int64_t misses;        /* calls that compiled (or waited for) a new kernel */
  int64_t evictions;     /* kernels dropped to respect the registry capacity */
  double search_seconds; /* total time spent searching */
  double emit_seconds;   /* total time spent emitting machine code */
} tessel_stats;

TESSEL_API tessel_status tessel_get_stats(tessel_stats *out);

/* One GEMM call to prepare ahead of time: the arguments tessel_sgemm will get. */
typedef struct tessel_sgemm_shape {
  tessel_layout layout;
  tessel_transpose trans_a, trans_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldc; /* 0: the smallest legal value */
  float beta;            /* only whether it is 0 matters */
} tessel_sgemm_shape;

/* Hears about each prepared shape (index into the list), one call at a time, from any
 * thread. */
typedef void (*tessel_warm_progress)(size_t done, size_t total, size_t index, tessel_status status,
                                     void *user);

/* Searches and emits the kernels of `count` shapes in parallel, for the current thread count
 * (tessel_get_num_threads), so that later calls with them are lookups; what the searches
 * solve is saved in the memo database for other processes. Every shape is checked first: a
 * bad one fails the whole call before any work. Otherwise every shape is attempted and the
 * first failure, if any, is returned. `progress` may be NULL. */
TESSEL_API tessel_status tessel_warm(const tessel_sgemm_shape *shapes, size_t count,
                                     tessel_warm_progress progress, void *user);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_TESSEL_H */
