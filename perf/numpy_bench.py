#!/usr/bin/python3
"""numpy float32 matmul over the shape list, with and without libtessel_blas.so preloaded
(the system BLAS, e.g. OpenBLAS, beneath), as ratios.

    perf/numpy_bench.py path/to/libtessel_blas.so [shapes.txt]
"""
import os
import subprocess
import sys

CHILD = r'''
import numpy as np, sys, time
shapes = [tuple(map(int, l.split('#')[0].split())) for l in open(sys.argv[1])
          if l.split('#')[0].strip()]
rng = np.random.default_rng(0)
for m, k, n in shapes:
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    a @ b  # first call: tessel compiles here
    reps = max(3, min(200, int(2e9 / (2 * m * n * k + 1))))
    times = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(reps):
            a @ b
        times.append((time.perf_counter() - t) / reps)
    times.sort()
    print(m, k, n, 2 * m * n * k / times[3] * 1e-9, flush=True)
'''


def run(lib, shapes):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', TESSEL_NUM_THREADS='1')
    env.pop('LD_PRELOAD', None)
    if lib:
        env['LD_PRELOAD'] = lib
    out = subprocess.run([sys.executable, '-c', CHILD, shapes], env=env, check=True,
                         capture_output=True, text=True).stdout
    return {tuple(map(int, l.split()[:3])): float(l.split()[3]) for l in out.splitlines()}


def main():
    lib = os.path.abspath(sys.argv[1])
    shapes = sys.argv[2] if len(sys.argv) > 2 else '../shared/bench/shapes.txt'
    plain, ours = run(None, shapes), run(lib, shapes)
    print('| M | K | N | numpy GFLOP/s | numpy + tessel GFLOP/s | ratio |\n|---|---|---|---|---|---|')
    for key, g in plain.items():
        print(f'| {key[0]} | {key[1]} | {key[2]} | {g:.1f} | {ours[key]:.1f} | {ours[key] / g:.2f} |')


if __name__ == '__main__':
    main()
