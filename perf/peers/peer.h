// One GEMM library behind a common interface, so each library is its own executable (OpenBLAS
// and BLIS both export sgemm_, and cannot share a process). peer_main.cpp times whatever
// library the executable was linked with; one peer_<library>.cpp per library.
#pragma once
#include <cstdint>
#include <string>

// The library's name, as the results name it.
const char *peer_name();
// Restricts the library to `threads` threads and to AVX2, before any call.
void peer_setup(int threads);
// Evidence of the ISA the library really uses (its own query), for the results.
std::string peer_isa();
// C = A * B, row-major, tight leading dimensions, f32.
void peer_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c);
