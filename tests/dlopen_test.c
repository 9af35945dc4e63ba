/* libtessel.so and libtessel_blas.so loaded with dlopen, as Python's ctypes or FlexiBLAS load
 * them, then called from the loading thread and from a thread started afterwards (whose
 * thread-local storage of the library is then made on first use). An initial-exec
 * thread_local anywhere in a library would make its whole TLS block static, and dlopen would
 * fail with "cannot allocate memory in static TLS block" (runtime/thread_state.cpp).
 *
 * usage: tessel_dlopen_test path/to/libtessel.so path/to/libtessel_blas.so */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "tessel/tessel.h"

typedef tessel_status (*sgemm_fn)(tessel_layout, tessel_transpose, tessel_transpose, int64_t,
                                  int64_t, int64_t, float, const float *, int64_t, const float *,
                                  int64_t, float, float *, int64_t);
typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                               const float *, int, float, float *, int);

static sgemm_fn tessel_sgemm_ptr;
static cblas_sgemm_fn cblas_sgemm_ptr;

/* 4x4x4 with A = 1, B = 2: every element of C is 8. Three calls, so repeats run too. */
static int calls_compute(void) {
  float a[16], b[16], c[16];
  for (int i = 0; i < 16; ++i) a[i] = 1, b[i] = 2;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 16; ++i) c[i] = -1;
    if (tessel_sgemm_ptr(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, 4, 4, 4, 1, a, 4, b, 4,
                         0, c, 4) != TESSEL_OK)
      return 0;
    for (int i = 0; i < 16; ++i)
      if (c[i] != 8) return 0;
    for (int i = 0; i < 16; ++i) c[i] = -1;
    cblas_sgemm_ptr(102, 111, 111, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4);
    for (int i = 0; i < 16; ++i)
      if (c[i] != 8) return 0;
  }
  return 1;
}

static void *thread_main(void *ok) {
  *(int *)ok = calls_compute();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s libtessel.so libtessel_blas.so\n", argv[0]);
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void *blas = lib ? dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!lib || !blas) {
    fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
    return 1;
  }
  *(void **)&tessel_sgemm_ptr = dlsym(lib, "tessel_sgemm");
  *(void **)&cblas_sgemm_ptr = dlsym(blas, "cblas_sgemm");
  if (!tessel_sgemm_ptr || !cblas_sgemm_ptr) {
    fprintf(stderr, "FAIL: dlsym: %s\n", dlerror());
    return 1;
  }
  if (!calls_compute()) {
    fprintf(stderr, "FAIL: wrong result on the loading thread\n");
    return 1;
  }
  int ok = 0;
  pthread_t thread;
  if (pthread_create(&thread, NULL, thread_main, &ok) != 0 || pthread_join(thread, NULL) != 0 ||
      !ok) {
    fprintf(stderr, "FAIL: wrong result on a new thread\n");
    return 1;
  }
  printf("both libraries load with dlopen and compute on two threads\n");
  return 0;
}
