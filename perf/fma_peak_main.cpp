// Prints the measured single-core AVX2 FMA peak in GFLOP/s (fma_peak.cpp).
#include <cstdio>

#include "fma_peak.h"

int main() {
  std::printf("%.2f\n", measure_fma_peak_gflops());
  return 0;
}
