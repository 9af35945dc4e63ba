#!/usr/bin/env bash
# Debian's reference BLAS testers (package libblas-test), run against libtessel_blas.so under
# LD_PRELOAD, restricted to SGEMM but with every size, alpha, beta and layout they offer, and
# with error-exit tests on.
#   tests/blas/reference_tester.sh path/to/libtessel_blas.so
# The testers exit 0 even when they fail, so their output is searched for failure words.
set -u
lib=$(readlink -f "$1")
dir=/usr/lib/x86_64-linux-gnu/blas
for f in xblat3s xscblat3 sblat3.in sin3; do
  [ -e "$dir/$f" ] || { echo "FAIL: $dir/$f missing: install libblas-test (scripts/setup.sh does)"; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# Same input files with every routine but SGEMM switched off.
sed -E '/^S(SYMM|TRMM|TRSM|SYRK|SYR2K) /s/ T / F /' "$dir/sblat3.in" >sblat3.in
sed -E '/^cblas_s(symm|trmm|trsm|syrk|syr2k) /s/ T / F /' "$dir/sin3" >sin3
grep -q "^SGEMM  T" sblat3.in && grep -q "^cblas_sgemm  T" sin3 || { echo "FAIL: input files not as expected"; exit 1; }

failures=0
check() {  # name, output file, patterns of the lines a pass prints
  local name=$1 out=$2
  if grep -qE "FAIL|NOT DETECTED|SUSPECT|FATAL|ABANDONED|INSTEAD OF" "$out"; then
    echo "FAIL: $name reported failures:"; grep -E "FAIL|NOT DETECTED|SUSPECT|FATAL|ABANDONED|INSTEAD OF" "$out" | head -20
    failures=$((failures + 1))
  fi
  shift 2
  for passed in "$@"; do  # the lines a full pass prints
    grep -qE "$passed" "$out" || { echo "FAIL: $name printed no '$passed'"; failures=$((failures + 1)); }
  done
}

TESSEL_VERBOSE=1 TESSEL_NUM_THREADS=1 LD_PRELOAD="$lib" "$dir/xblat3s" <sblat3.in >xblat3s.log 2>verbose-f77.log
check xblat3s sblat3.out "SGEMM  PASSED THE TESTS OF ERROR-EXITS" "SGEMM  PASSED THE COMPUTATIONAL TESTS"
TESSEL_VERBOSE=1 TESSEL_NUM_THREADS=1 LD_LIBRARY_PATH="$dir" LD_PRELOAD="$lib" "$dir/xscblat3" <sin3 >xscblat3.out 2>verbose-c.log
check xscblat3 xscblat3.out "cblas_sgemm  PASSED THE TESTS OF ERROR-EXITS" \
  "cblas_sgemm  PASSED THE COLUMN-MAJOR COMPUTATIONAL TESTS" "cblas_sgemm  PASSED THE ROW-MAJOR +COMPUTATIONAL TESTS"
# Prove the calls reached tessel: its exit summary counts the kernels it compiled.
for log in verbose-f77.log verbose-c.log; do
  kernels=$(sed -nE 's/^tessel: ([0-9]+) kernels.*/\1/p' "$log" | tail -1)
  [ -n "$kernels" ] && [ "$kernels" -gt 0 ] || { echo "FAIL: $log shows no tessel kernels"; failures=$((failures + 1)); }
  echo "$log: $(grep '^tessel: [0-9]* kernels' "$log" | tail -1)"
done
[ $failures -eq 0 ] && echo "reference testers: SGEMM passed (Fortran and CBLAS, error exits on)"
exit $((failures > 0))
