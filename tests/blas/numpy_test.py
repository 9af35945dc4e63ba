#!/usr/bin/python3
"""numpy float32 matmuls under LD_PRELOAD of libtessel_blas.so equal numpy without it.

    tests/blas/numpy_test.py path/to/libtessel_blas.so

Runs one child with the preload and one without, each computing the same products of many
shapes (odd, large, transposed views, non-contiguous slices with non-tight leading
dimensions, batched), and compares. The preloaded child's TESSEL_VERBOSE summary proves its
sgemm calls reached tessel."""
import os
import re
import subprocess
import sys
import tempfile

CHILD = r'''
import numpy as np, sys
rng = np.random.default_rng(5)
out = []
def add(x): out.append(np.ascontiguousarray(x, dtype=np.float32))
for m, k, n in [(1, 1, 1), (3, 5, 7), (17, 33, 65), (64, 64, 64), (129, 129, 129),
                (200, 3, 150), (1, 300, 257), (300, 257, 1), (97, 211, 131), (512, 256, 128)]:
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    add(a @ b)
    add(b.T.copy().T @ a.T.copy().T.T.T if False else a.T.copy().T @ b)  # F-ordered A
    add((b.T @ a.T).T)                                                    # transposed views
big = rng.standard_normal((400, 500), dtype=np.float32)
add(big[10:210:2, 5:305] @ big[50:350, 100:250])    # strided rows, non-tight ld
add(big[20:120, :200].T @ big[100:200, 7:97])
batch_a = rng.standard_normal((6, 40, 30), dtype=np.float32)
batch_b = rng.standard_normal((6, 30, 50), dtype=np.float32)
add(batch_a @ batch_b)
add(np.einsum('bij,bjk->bik', batch_a, batch_b, optimize=True))
np.savez(sys.argv[1], *out)
'''


def run(lib, path):
    env = dict(os.environ, TESSEL_VERBOSE='1', TESSEL_NUM_THREADS='1')
    env.pop('LD_PRELOAD', None)
    if lib:
        env['LD_PRELOAD'] = lib
    r = subprocess.run([sys.executable, '-c', CHILD, path], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f'FAIL: child ({"preloaded" if lib else "plain"}) exited {r.returncode}:\n{r.stderr}')
    return r.stderr


def main():
    import numpy as np
    lib = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        plain, ours = os.path.join(tmp, 'plain.npz'), os.path.join(tmp, 'ours.npz')
        run(None, plain)
        log = run(lib, ours)
        match = re.search(r'^tessel: (\d+) kernels, (\d+) hits, (\d+) misses', log, re.M)
        if not match or int(match.group(1)) == 0:
            sys.exit(f'FAIL: no tessel kernels ran under LD_PRELOAD (stderr: {log[-500:]})')
        want, got = np.load(plain), np.load(ours)
        worst = 0.0
        for key in want.files:
            w, g = want[key], got[key]
            if w.shape != g.shape:
                sys.exit(f'FAIL: {key}: shape {g.shape} != {w.shape}')
            scale = max(1.0, float(np.abs(w).max()))
            err = float(np.abs(w - g).max()) / scale
            worst = max(worst, err)
            if not err <= 1e-4:
                sys.exit(f'FAIL: {key} {w.shape}: relative error {err}')
        print(f'numpy: {len(want.files)} products equal with and without the preload '
              f'(worst relative error {worst:.2e}); {match.group(0)}')


if __name__ == '__main__':
    main()
