#!/usr/bin/env bash
# Sets up (packages, configure, build) and runs the whole test suite twice: an
# ASan+UBSan build, then the Release build. Exits non-zero on any failure.
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
