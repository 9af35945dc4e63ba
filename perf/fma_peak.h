#pragma once
// Best of several runs of a pure FMA loop, in GFLOP/s (one core, ymm registers).
double measure_fma_peak_gflops();
