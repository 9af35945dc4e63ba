#!/usr/bin/env bash
# Sets up (packages, configure, build) and runs the whole test suite three times: an
# ASan+UBSan build, the Release build, and a ThreadSanitizer build of the tests that run
# threads or processes at once (CTest label tsan). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "== ASan+UBSan build"
BUILD_TYPE=RelWithDebInfo scripts/setup.sh build-asan -DTESSEL_SANITIZE=address
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== Release build"
scripts/setup.sh build
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== ThreadSanitizer build (concurrency and database tests)"
BUILD_TYPE=RelWithDebInfo scripts/setup.sh build-tsan -DTESSEL_SANITIZE=thread
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp second_deadlock_stack=1" \
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L tsan
