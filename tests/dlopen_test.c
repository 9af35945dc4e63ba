/* libtessel.so and libtessel_blas.so loaded with dlopen, as Python's ctypes or FlexiBLAS load
 * them, then called from the loading thread and from a thread started afterwards (whose
 * thread-local storage of the library is then made on first use). Each library reads its
 * per-thread state with the initial-exec TLS model, so its whole TLS block must fit in the
 * static TLS glibc keeps spare for libraries loaded later, shared with every other such
 * library of the process (runtime/thread_state.cpp): each block must stay within
 * kMaxTlsBytes, well inside glibc's 512 bytes, not merely load here. Last, a product on two
 * threads leaves a helper polling inside libtessel.so (runtime/team.h) and both libraries are
 * closed at once: they are linked -z nodelete, so that code stays mapped.
 *
 * usage: tessel_dlopen_test path/to/libtessel.so path/to/libtessel_blas.so */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tessel/tessel.h"

typedef tessel_status (*sgemm_fn)(tessel_layout, tessel_transpose, tessel_transpose, int64_t,
                                  int64_t, int64_t, float, const float *, int64_t, const float *,
                                  int64_t, float, float *, int64_t);
typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                               const float *, int, float, float *, int);

static sgemm_fn tessel_sgemm_ptr;
static tessel_status (*set_threads_ptr)(int);
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

enum { kMaxTlsBytes = 256 };

struct TlsQuery {
  const char *name; /* the library's name as the dynamic linker has it */
  size_t bytes;     /* its PT_TLS segment's size in memory */
};

static int find_tls(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct TlsQuery *q = data;
  if (strcmp(info->dlpi_name, q->name) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS) q->bytes = info->dlpi_phdr[i].p_memsz;
  return 1;
}

/* The size of the thread-local block of the loaded library `handle`. */
static size_t tls_bytes(void *handle) {
  struct link_map *map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map) return (size_t)-1;
  struct TlsQuery q = {map->l_name, 0};
  return dl_iterate_phdr(find_tls, &q) ? q.bytes : (size_t)-1;
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
  const char *paths[2] = {argv[1], argv[2]};
  void *handles[2] = {lib, blas};
  for (int i = 0; i < 2; ++i) {
    const size_t bytes = tls_bytes(handles[i]);
    if (bytes > kMaxTlsBytes) {
      fprintf(stderr, "FAIL: %s has %zu bytes of thread-local storage (at most %d)\n", paths[i],
              bytes, kMaxTlsBytes);
      return 1;
    }
    printf("%s: %zu bytes of thread-local storage\n", paths[i], bytes);
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

  *(void **)&set_threads_ptr = dlsym(lib, "tessel_set_num_threads");
  enum { n = 128 };
  static float a2[n * n], b2[n * n], c2[n * n];
  for (int i = 0; i < n * n; ++i) a2[i] = 1, b2[i] = 0.5f;
  if (!set_threads_ptr || set_threads_ptr(2) != TESSEL_OK ||
      tessel_sgemm_ptr(TESSEL_ROW_MAJOR, TESSEL_NO_TRANS, TESSEL_NO_TRANS, n, n, n, 1, a2, n, b2,
                       n, 0, c2, n) != TESSEL_OK ||
      c2[n * n - 1] != 0.5f * n) {
    fprintf(stderr, "FAIL: a product on two threads\n");
    return 1;
  }
  dlclose(blas);
  dlclose(lib);
  usleep(20000); /* past the helper's patience */
  printf("closed while a helper polled, and still running\n");
  return 0;
}
