#!/usr/bin/env bash
# The memo database across processes, end to end with the tessel tool: concurrent writers,
# kill -9, damaged, truncated and foreign files, read-only places, TESSEL_DB modes,
# export/import, and cold and warm runs emitting the same machine code.
#   tests/database_test.sh path/to/tessel work-dir
set -u
tessel=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
python=/usr/bin/python3
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
unset TESSEL_DB TESSEL_DUMP_DIR TESSEL_VERBOSE
export TESSEL_NUM_THREADS=1
export TESSEL_CACHE_DIR="$work/cache"

db_file() { "$tessel" db path | cut -d' ' -f1; }
# Lines tessel printed as warnings.
warnings() { grep -c '^tessel: ' "$1"; }
# A run must verify and exit 0 whatever the database looks like.
check_run() {
  local label=$1
  shift
  "$tessel" run "$@" >"$work/run.out" 2>"$work/run.err"
  local status=$?
  [ $status -eq 0 ] && grep -q "PASS" "$work/run.out" ||
    fail "$label: 'tessel run $*' exited $status: $(tail -3 "$work/run.err")"
}
specs_solved() {  # M K N -> specs the search solved (0 when everything was replayed)
  "$tessel" plan "$@" | sed -n 's/^search: .* ms, \([0-9]*\) specs solved.*/\1/p'
}

# 1. Four processes warming overlapping lists into one database at once lose nothing.
lists=("64x64x64,17x33x65,96x48x80,1x256x512,40x40x40"
       "17x33x65,33x17x65,128x32x64,1x256x512,24x24x24"
       "96x48x80,100x70x90,8x512x512,48x48x48"
       "40x40x40,128x32x64,33x17x65,7x300x13,64x64x64")
pids=()
for i in 0 1 2 3; do
  "$tessel" warm --shapes "${lists[$i]}" >"$work/warm$i.out" 2>&1 &
  pids+=($!)
done
for i in 0 1 2 3; do
  wait "${pids[$i]}" || fail "concurrent warm $i failed: $(tail -2 "$work/warm$i.out")"
done
"$tessel" db verify >"$work/verify" 2>&1 || fail "verify after concurrent warms: $(cat "$work/verify")"
for shape in $(echo "${lists[@]}" | tr ' ,' '\n\n' | sort -u); do
  solved=$(TESSEL_DB=ro specs_solved ${shape//x/ })
  [ "$solved" = "0" ] || fail "$shape was warmed but a later search solved ${solved:-?} specs"
done
"$tessel" db stats >"$work/stats" || fail "db stats failed"
grep -q "compression" "$work/stats" || fail "db stats shows no compression ratio"

# 2. Cold and warm runs emit bit-identical kernels.
export TESSEL_CACHE_DIR="$work/identical"
mkdir -p "$work/cold" "$work/warm"
TESSEL_DUMP_DIR="$work/cold" "$tessel" run 100 70 90 --trans-b >/dev/null 2>&1 || fail "cold run"
TESSEL_DUMP_DIR="$work/warm" TESSEL_VERBOSE=1 "$tessel" run 100 70 90 --trans-b \
  >/dev/null 2>"$work/warm.err" || fail "warm run"
grep -q "(0 specs)" "$work/warm.err" || fail "the warm run searched: $(cat "$work/warm.err")"
for bin in "$work"/cold/*.bin; do
  cmp -s "$bin" "$work/warm/$(basename "$bin")" || fail "$(basename "$bin") differs cold and warm"
done
ls "$work"/cold/*.bin >/dev/null 2>&1 || fail "no kernel was dumped"

# 3. kill -9 at any moment leaves a database that opens, verifies and serves.
export TESSEL_CACHE_DIR="$work/killed"
for delay in 0.05 0.4 0.15 0.9 0.25 0.6 0.1 1.2; do
  "$tessel" warm --shapes 256x256x256,129x129x129,17x33x65,512x64x512,1000x100x100 \
    >/dev/null 2>&1 &
  pid=$!
  sleep $delay
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
done
"$tessel" db verify >"$work/verify" 2>&1 || fail "verify after kill -9: $(cat "$work/verify")"
check_run "after kill -9" 129 129 129

# 4. Damaged blocks and plan records: every row altered behind tessel's back is detected,
# warned about once, and never used; the next searches repair what they touch.
export TESSEL_CACHE_DIR="$work/damaged"
"$tessel" warm --shapes 64x64x64,48x80x96 >/dev/null 2>&1 || fail "warm before damage"
$python - "$(db_file)" <<'EOF' || fail "could not alter blocks"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT rowid_key, data FROM (SELECT class_lo || ',' || class_hi || ',' || m || ',' || n || ',' || k AS rowid_key, data FROM blocks)").fetchall()
for key, data in rows:
    b = bytearray(data)
    b[len(b) // 2] ^= 0x10
    lo, hi, m, n, k = key.split(',')
    db.execute("UPDATE blocks SET data = ? WHERE class_lo = ? AND class_hi = ? AND m = ? AND n = ? AND k = ?",
               (bytes(b), int(lo), int(hi), int(m), int(n), int(k)))
for key in [r[0] for r in db.execute("SELECT w0 || ',' || w1 || ',' || w2 || ',' || w3 || ',' || w4 FROM plans")]:
    words = [int(w) for w in key.split(',')]
    data = bytearray(db.execute("SELECT data FROM plans WHERE w0 = ? AND w1 = ? AND w2 = ? AND w3 = ? AND w4 = ?", words).fetchone()[0])
    data[3] ^= 0x01
    db.execute("UPDATE plans SET data = ? WHERE w0 = ? AND w1 = ? AND w2 = ? AND w3 = ? AND w4 = ?", [bytes(data)] + words)
db.commit()
EOF
"$tessel" db verify >"$work/verify" 2>&1 && fail "verify accepted damaged blocks"
grep -q "damaged" "$work/verify" || fail "verify did not name the damage"
check_run "damaged blocks" 64 64 64
[ "$(warnings "$work/run.err")" = "1" ] || fail "damaged blocks: expected one warning, got: $(cat "$work/run.err")"
check_run "after repair" 64 64 64
[ "$(warnings "$work/run.err")" = "0" ] || fail "repaired blocks still warn: $(cat "$work/run.err")"

# 4b. A plan record whose checksum is right but whose actions do not replay (one short): verify
# names it, a run searches instead (one warning, the right result) and writes a good record.
export TESSEL_CACHE_DIR="$work/stale"
"$tessel" warm --shapes 64x64x64 >/dev/null 2>&1 || fail "warm before a stale record"
$python - "$(db_file)" <<'EOF' || fail "could not alter the plan record"
import sqlite3, sys
M = (1 << 64) - 1
def mix(z):  # splitmix64's finalizer, as search/memo_block.cpp
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
def checksum(root, data):
    h = 0x706c616e
    for w in root:
        h = mix(h ^ w)
    h = mix(h ^ len(data))
    i = 0
    while i + 8 <= len(data):
        h = (mix(h ^ int.from_bytes(data[i:i + 8], 'little')) + 0x9e3779b97f4a7c15) & M
        i += 8
    return mix(h ^ int.from_bytes(data[i:], 'little') ^ 0xa5)
def varint(b, i):
    v = s = 0
    while True:
        v |= (b[i] & 0x7f) << s
        s += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i
db = sqlite3.connect(sys.argv[1])
words, data = [(list(r[:5]), bytes(r[5])) for r in
               db.execute("SELECT w0, w1, w2, w3, w4, data FROM plans")][0]
body = data[:-8]
distinct, i = varint(body, 1)
for _ in range(distinct):
    i += 3
    _, i = varint(body, i)
    _, i = varint(body, i)
n, j = varint(body, i)
assert n < 128 and j == i + 1 and len(body) == j + n  # one-byte node count and indices
short = body[:i] + bytes([n - 1]) + body[j:-1]
root = [w & M for w in words]
db.execute("UPDATE plans SET data = ? WHERE w0 = ? AND w1 = ? AND w2 = ? AND w3 = ? AND w4 = ?",
           [short + checksum(root, short).to_bytes(8, 'little')] + words)
db.commit()
EOF
"$tessel" db verify >"$work/verify" 2>&1 && fail "verify accepted a plan record that does not replay"
grep -q "1 plan records that do not apply" "$work/verify" ||
  fail "verify did not count the stale record: $(cat "$work/verify")"
check_run "stale plan record" 64 64 64
[ "$(warnings "$work/run.err")" = "1" ] ||
  fail "stale plan record: expected one warning, got: $(cat "$work/run.err")"
"$tessel" db verify >"$work/verify" 2>&1 ||
  fail "the search did not replace the stale record: $(cat "$work/verify")"

# 5. Random byte flips and truncation of the file itself: never a crash or a wrong result.
export TESSEL_CACHE_DIR="$work/flipped"
"$tessel" warm --shapes 64x64x64,17x33x65,129x64x33 >/dev/null 2>&1 || fail "warm before flips"
file=$(db_file)
cp "$file" "$work/pristine.sqlite"
for seed in 1 2 3 4 5 6; do
  cp "$work/pristine.sqlite" "$file"
  rm -f "$file-wal" "$file-shm"
  $python - "$file" $seed <<'EOF'
import random, sys
data = bytearray(open(sys.argv[1], 'rb').read())
rng = random.Random(int(sys.argv[2]))
for _ in range(40):
    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
open(sys.argv[1], 'wb').write(data)
EOF
  check_run "byte flips (seed $seed)" 17 33 65
  "$tessel" db verify >/dev/null 2>&1
  [ $? -lt 128 ] || fail "verify crashed on a flipped file (seed $seed)"
done
for fraction in 2 3 7; do
  cp "$work/pristine.sqlite" "$file"
  rm -f "$file-wal" "$file-shm"
  truncate -s $(($(stat -c %s "$file") / fraction)) "$file"
  check_run "truncated to 1/$fraction" 64 64 64
  "$tessel" db verify >/dev/null 2>&1
  [ $? -lt 128 ] || fail "verify crashed on a truncated file"
done

# 6. A database made for another CPU or version is not used, and not imported.
export TESSEL_CACHE_DIR="$work/foreign"
"$tessel" warm --shapes 32x32x32 >/dev/null 2>&1 || fail "warm before foreign"
cp "$(db_file)" "$work/foreign.sqlite"
$python - "$work/foreign.sqlite" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE meta SET value = 'schema=1 actions=1 costs=1 isa=avx512-fma lanes=16 vregs=32' WHERE name = 'fingerprint'")
db.commit()
EOF
"$tessel" db import "$work/foreign.sqlite" >"$work/import" 2>&1 && fail "imported a foreign database"
grep -q "another CPU" "$work/import" || fail "import refusal does not say why: $(cat "$work/import")"
cp "$work/foreign.sqlite" "$(db_file)"
rm -f "$(db_file)-wal" "$(db_file)-shm"
check_run "foreign file" 32 32 32
grep -q "another CPU or tessel version" "$work/run.err" || fail "foreign file: no warning"
[ "$(warnings "$work/run.err")" = "1" ] || fail "foreign file: expected one warning"

# 7. Export, clear, import: the decisions come back.
export TESSEL_CACHE_DIR="$work/moved"
"$tessel" warm --shapes 48x48x48,1x256x512 >/dev/null 2>&1 || fail "warm before export"
"$tessel" db export "$work/exported.sqlite" >/dev/null || fail "export"
"$tessel" db export "$work/exported.sqlite" >/dev/null 2>&1 && fail "export overwrote a file"
"$tessel" db clear >/dev/null || fail "clear"
[ "$(specs_solved 48 48 48)" != "0" ] || fail "clear kept decisions"
"$tessel" db clear >/dev/null
"$tessel" db import "$work/exported.sqlite" >/dev/null || fail "import"
[ "$(TESSEL_DB=ro specs_solved 1 256 512)" = "0" ] || fail "import lost decisions"

# 8. Places where no database can live: one warning, then memory only.
export TESSEL_CACHE_DIR="$work/off"
TESSEL_DB=off check_run "TESSEL_DB=off" 20 20 20
[ ! -e "$work/off" ] || fail "TESSEL_DB=off created $work/off"
[ "$(warnings "$work/run.err")" = "0" ] || fail "TESSEL_DB=off warned"
TESSEL_DB=ro check_run "TESSEL_DB=ro without a database" 20 20 20
[ "$(warnings "$work/run.err")" = "1" ] || fail "TESSEL_DB=ro without a database: expected one warning"
[ ! -e "$(db_file)" ] || fail "TESSEL_DB=ro created the database"
env -u HOME -u XDG_CACHE_HOME -u TESSEL_CACHE_DIR "$tessel" run 20 20 20 >"$work/run.out" \
  2>"$work/run.err" || fail "no HOME: run failed"
grep -q "not used" "$work/run.err" || fail "no HOME: no warning"

# A read-only directory. Root ignores permissions, so as root the run drops to nobody, from
# a copy of the tool in a directory everyone can read.
ro=$(mktemp -d /tmp/tessel-ro-XXXXXX)
cp "$tessel" "$ro/tessel"
mkdir "$ro/cache"
chmod 755 "$ro" "$ro/tessel"
chmod 555 "$ro/cache"
as_user=()
[ "$(id -u)" = "0" ] && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
TESSEL_CACHE_DIR="$ro/cache" "${as_user[@]}" "$ro/tessel" run 20 20 20 >"$work/run.out" \
  2>"$work/run.err" || fail "read-only directory: run failed: $(cat "$work/run.err")"
grep -q "PASS" "$work/run.out" || fail "read-only directory: no PASS"
[ "$(warnings "$work/run.err")" = "1" ] || fail "read-only directory: expected one warning, got: $(cat "$work/run.err")"
rm -rf "$ro"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s); files kept in $work"
  exit 1
fi
rm -rf "$work"
echo "database tests passed"
