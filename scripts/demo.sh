#!/usr/bin/env bash
# The main job: set up (packages, build), then search, JIT-compile, run and verify GEMMs,
# printing the plan the search chose and what the first call cost.
#   scripts/demo.sh [M K N [--trans-a] [--trans-b] [--threads T]]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
if [ $# -gt 0 ]; then
  exec build/bin/tessel run "$@"
fi
build/bin/tessel run 512 512 512 --threads 1
echo
echo "== the same shape in a new process: its decisions come back from the memo database"
echo "   ($(build/bin/tessel db path)), so the search is a replay"
build/bin/tessel run 512 512 512 --threads 1 | grep -E "^first call|^check|^speed"
echo
build/bin/tessel run 17 33 65 --trans-b --threads 1
