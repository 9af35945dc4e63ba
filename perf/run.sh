#!/usr/bin/env bash
# Installs the peer libraries, builds the benchmarks and runs them on the shared shape list.
#   perf/run.sh [--threads T]
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libopenblas-dev libblis-dev libdnnl-dev libxsmm-dev libeigen3-dev gnuplot-nox
          pkg-config python3-numpy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi
scripts/setup.sh build-perf -DTESSEL_BUILD_PERF=ON -DTESSEL_BUILD_TESTS=OFF
shapes=../shared/bench/shapes.txt
[ -f "$shapes" ] || { echo "perf/run.sh: $shapes not found (the shared folder sits beside the repository)"; exit 2; }
echo "== cold search time per shape (fresh memo each)"
build-perf/bin/search_bench "$shapes" "$@"
echo
echo "== first calls with a cold, filling and warm memo database"
build-perf/bin/db_bench "$shapes"
echo
echo "== emission alone: first emission after the search, and over and over"
build-perf/bin/emit_bench "$shapes"
echo
echo "== GEMM: tessel beside OpenBLAS (forced to its Haswell AVX2 kernels)"
OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 build-perf/bin/gemm_bench "$shapes" "$@"
echo
echo "== tessel beside OpenBLAS, BLIS, oneDNN, libxsmm, Eigen (each forced to AVX2), 1 and 2 threads"
/usr/bin/python3 perf/peers.py build-perf/bin "$shapes" build-perf/results
echo "(tables in build-perf/results/peers.md, data in peers.csv, plot in peers.png)"
echo
echo "== numpy float32 matmul with and without libtessel_blas.so preloaded"
/usr/bin/python3 perf/numpy_bench.py build-perf/lib/libtessel_blas.so "$shapes"
