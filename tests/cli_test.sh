#!/usr/bin/env bash
# The command-line tool and the observability switches, end to end.
#   tests/cli_test.sh path/to/tessel
set -u
tessel=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Bad arguments: a message and exit status 2, never a crash.
for args in "" "plan" "plan 1 2" "plan 0 4 4" "plan -3 4 4" "plan 4 4 x" "plan 4 4 4 --bogus" \
            "plan 4 4 4 --threads" "plan 4 4 4 --threads 0" "run 99999999999 1 1" "frobnicate"; do
  $tessel $args >"$work/out" 2>"$work/err"
  status=$?
  [ $status -eq 2 ] || fail "'tessel $args' exited $status, expected 2"
  grep -q "usage" "$work/err" || fail "'tessel $args' printed no usage"
done
# An unknown option is named (--alternatives is plan's alone).
$tessel run 4 4 4 --alternatives 2>"$work/err"
grep -q "unknown option --alternatives" "$work/err" || fail "run's unknown option not named"

# plan: a tree, its cost, search statistics.
$tessel plan 64 48 80 --trans-b >"$work/plan" || fail "tessel plan failed"
grep -q "f32_fma_bcast__avx2\|f32_fma_dot__avx2" "$work/plan" || fail "plan names no multiply kernel"
grep -q "^cost:" "$work/plan" || fail "plan prints no cost"
grep -q "specs solved" "$work/plan" || fail "plan prints no search statistics"

# plan --alternatives: the same tree, each line with the next best action beside it.
$tessel plan 64 48 80 --alternatives --trans-b >"$work/alternatives" ||
  fail "tessel plan --alternatives failed"
sed 's/  (next: .*)$//; s/  (no other action)$//' "$work/alternatives" | grep -v "^search:" >"$work/stripped"
grep -v "^search:" "$work/plan" | cmp -s - "$work/stripped" ||
  fail "plan --alternatives printed another plan"
grep -q "(next: .* at [0-9.e+]*, +[0-9.]*%)$" "$work/alternatives" ||
  fail "plan --alternatives names no next best action"

# TESSEL_HELPER_LAG sets the cost model's helper lag (TESSEL_VERBOSE says so), and two-thread
# plans follow it: 64^3 splits 36 + 28 rows at a lag of 1600 cycles (worth a tenth of its
# FMAs), 32 + 32 at 600. A bad value is named and not used.
for lag_rows in 1600:36 600:32; do
  TESSEL_HELPER_LAG=${lag_rows%:*} TESSEL_VERBOSE=1 $tessel plan 64 64 64 --threads 2 \
    >"$work/lag" 2>"$work/lag_err" || fail "tessel plan with TESSEL_HELPER_LAG=${lag_rows%:*} failed"
  head -1 "$work/lag" | grep -q "^parallel grid of ${lag_rows#*:}x64 tiles" ||
    fail "TESSEL_HELPER_LAG=${lag_rows%:*}: 64^3 not split at ${lag_rows#*:} rows"
  grep -q "helper lag ${lag_rows%:*} cycles (TESSEL_HELPER_LAG)" "$work/lag_err" ||
    fail "TESSEL_HELPER_LAG=${lag_rows%:*} not reported"
done
TESSEL_HELPER_LAG=soon TESSEL_VERBOSE=1 $tessel plan 8 8 8 >/dev/null 2>"$work/lag_err"
grep -q "ignoring TESSEL_HELPER_LAG=soon" "$work/lag_err" || fail "a bad TESSEL_HELPER_LAG not named"
grep -q "helper lag" "$work/lag_err" && fail "a bad TESSEL_HELPER_LAG was used"

# run, with dumps, a perf map and verbose lines.
mkdir -p "$work/dumps"
TESSEL_DUMP_DIR="$work/dumps" TESSEL_PERF_MAP=1 TESSEL_VERBOSE=1 \
  $tessel run 37 29 41 --trans-a --threads 1 >"$work/run" 2>"$work/verbose"
status=$?
[ $status -eq 0 ] || fail "tessel run exited $status"
grep -q "check against reference: PASS" "$work/run" || fail "run did not verify"
grep -q "GFLOP/s" "$work/run" || fail "run printed no speed"
grep -q "first call: search" "$work/run" || fail "run printed no first-call split"
grep -q "new kernel tessel_sgemm_37x29x41_tn" "$work/verbose" || fail "no verbose kernel line"
grep -q "1 kernels, .* hits, 1 misses" "$work/verbose" || fail "no verbose summary at exit"
bin=$(ls "$work"/dumps/*.bin 2>/dev/null | head -1)
if [ -z "$bin" ]; then
  fail "no code dump"
else
  [ -s "${bin%.bin}.txt" ] || fail "no plan dump beside $bin"
  if command -v objdump >/dev/null; then
    objdump -D -b binary -mi386:x86-64 "$bin" | grep -q "vfmadd231ps" || fail "dump has no FMA"
  fi
fi
map=$(ls /tmp/perf-*.map 2>/dev/null | xargs grep -l "tessel_sgemm_37x29x41" 2>/dev/null | head -1)
[ -n "$map" ] || fail "no perf map entry"
[ -n "$map" ] && rm -f "$map"

if [ $failures -eq 0 ]; then echo "cli: all checks passed"; exit 0; fi
exit 1
