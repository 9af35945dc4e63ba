#pragma once
// The FMA loop of fma_peak.cpp: 12 independent ymm FMA chains on one core.

// GFLOP/s of one run of the loop lasting about `seconds`.
double fma_loop_gflops(double seconds);

// The best of several runs: the core's peak when the machine is quiet.
double measure_fma_peak_gflops();
