#!/usr/bin/env bash
# Load on one ndm-recv (docs/security.md, "Load"): does a server that has served many tests
# hold what it held after the first few? And what does an Initial flood cost
# the legitimate transfers that run through it?
#
#   bench/load_check.sh [BUILD_DIR]        (default: build)
#
# Needs only bash, coreutils and awk (no bc: not on every Debian).
# Environment (defaults in brackets):
#   SEQUENTIAL [1000]   sequential ndm-send tests (-n 64K each, a process and a handshake each)
#   CONCURRENT [100]    connections of each concurrent test (ndm-send -P, at most 128; 256 KB each)
#   ROUNDS [10]         concurrent tests
#   FLOOD_SECONDS [60]  length of the Initial flood (0: no flood phase)
#   FLOOD_RATE [10000000] Initials a second asked of tests/tools/initial_flood
#                       (it sends as fast as it can up to that; as root from
#                       spoofed source ports, as a pool of sockets otherwise)
#   TRANSFER [16M]      size of each legitimate transfer in the flood phase
#   RSS_CHECK [1]       0: check descriptors only (sanitizer builds, whose
#                       allocators hold freed memory in quarantine)
#
# Prints the server's RSS and open descriptors after the warm-up, after the
# sequential and the concurrent tests and after the flood, and fails (exit 1)
# when a test is not byte-exact, when descriptors differ from the warm-up's or
# RSS grew more than 10 % + 4 MB over it. The flood phase prints the median
# time of TRANSFER without and under the flood (slowdown = their ratio); with
# two cores the flood, the server and the client share the CPU, so the
# slowdown measures this machine as much as ndm: state both.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}
send="$bin/tools/ndm-send" recv="$bin/tools/ndm-recv" flood="$bin/tests/initial_flood"
for b in "$send" "$recv"; do
  [ -x "$b" ] || { echo "load_check: $b not built (bash scripts/build.sh)" >&2; exit 2; }
done
SEQUENTIAL=${SEQUENTIAL:-1000} CONCURRENT=${CONCURRENT:-100} ROUNDS=${ROUNDS:-10}
FLOOD_SECONDS=${FLOOD_SECONDS:-60} FLOOD_RATE=${FLOOD_RATE:-10000000} TRANSFER=${TRANSFER:-16M}
if [ "$FLOOD_SECONDS" != 0 ] && [ ! -x "$flood" ]; then
  echo "load_check: $flood not built (it is built with the tests)" >&2; exit 2
fi

out=$(mktemp -d)
srv=""
flood_pid=""
cleanup() {
  [ -n "$flood_pid" ] && kill "$flood_pid" 2>/dev/null
  [ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
  rm -rf "$out"
}
trap cleanup EXIT
fail() {  # on stderr: time_transfer's stdout is a number
  {
    echo "load_check: FAIL: $*"
    [ -f "$out/recv_err.txt" ] && tail -n 20 "$out/recv_err.txt"
  } >&2
  exit 1
}

port=$((20000 + RANDOM % 20000))
"$recv" -B 127.0.0.1 -p "$port" > "$out/recv.txt" 2> "$out/recv_err.txt" &
srv=$!
for _ in $(seq 100); do grep -q listening "$out/recv.txt" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$out/recv.txt" || fail "ndm-recv did not start"

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$srv/status"; }
fds() { find "/proc/$srv/fd" -mindepth 1 -maxdepth 1 | wc -l; }
report() { printf '%-34s RSS %6d kB  fds %3d\n' "$1" "$(rss_kb)" "$(fds)"; }
run_send() {  # one ndm-send test into $out/send*.txt; false when ndm-send failed
  timeout 60 "$send" --insecure -c 127.0.0.1 -p "$port" "$@" > "$out/send.txt" 2> "$out/send_err.txt"
}
check_exact() { grep -q "receiver.*(byte-exact)" "$out/send.txt" || fail "ndm-send $*: not byte-exact"; }
one_test() {  # one test; byte-exact or fail
  run_send "$@" || fail "ndm-send $* exited $?: $(tail -n 2 "$out/send_err.txt")"
  check_exact "$@"
}
# Let the server finish its side of the last test (ndm-send exits before the
# server's draining period ends).
settle() { sleep "${1:-4}"; }

for _ in 1 2 3; do one_test -n 64K; done
one_test -P "$CONCURRENT" -n 256K
settle
report "after the warm-up:"
base_rss=$(rss_kb) base_fds=$(fds)
check_flat() {
  local rss f
  rss=$(rss_kb) f=$(fds)
  [ "$f" -eq "$base_fds" ] || fail "$1: $f open descriptors, $base_fds after the warm-up"
  [ "${RSS_CHECK:-1}" = 0 ] || [ "$rss" -le $((base_rss * 11 / 10 + 4096)) ] || fail "$1: RSS $rss kB, $base_rss kB after the warm-up"
}

t0=$(date +%s.%N)
for i in $(seq "$SEQUENTIAL"); do
  one_test -n 64K
  if [ $((i % 100)) -eq 0 ]; then printf '  %d/%d sequential tests\r' "$i" "$SEQUENTIAL" >&2; fi
done
t1=$(date +%s.%N)
settle
report "after $SEQUENTIAL sequential tests:"
awk -v a="$t0" -v b="$t1" -v n="$SEQUENTIAL" 'BEGIN {printf "  (%.1f s, %.1f tests/s)\n", b - a, n / (b - a)}'
check_flat "after $SEQUENTIAL sequential tests"

for i in $(seq "$ROUNDS"); do one_test -P "$CONCURRENT" -n 256K; done
settle
report "after $ROUNDS tests of -P $CONCURRENT:"
check_flat "after $ROUNDS tests of -P $CONCURRENT"

[ "$FLOOD_SECONDS" = 0 ] && { echo "load_check: PASS (no flood phase)"; exit 0; }

# time_transfer: seconds one TRANSFER takes, byte-exact; "failed" when
# ndm-send gave up (its handshake did not get through the flood in 5 s).
time_transfer() {
  local a b
  a=$(date +%s.%N)
  if ! run_send -n "$TRANSFER"; then
    echo "  a transfer failed: $(tail -n 1 "$out/send_err.txt")" >&2
    echo failed; return
  fi
  b=$(date +%s.%N)
  check_exact -n "$TRANSFER"
  awk -v a="$a" -v b="$b" 'BEGIN {print b - a}'
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for _ in 1 2 3 4 5; do time_transfer; done > "$out/quiet.txt"
"$flood" --to "127.0.0.1:$port" --rate "$FLOOD_RATE" --seconds "$FLOOD_SECONDS" > "$out/flood.txt" 2> "$out/flood_err.txt" &
flood_pid=$!
sleep 2
end=$(($(date +%s) + FLOOD_SECONDS - 4))
: > "$out/flooded.txt"
while [ "$(date +%s)" -lt "$end" ]; do time_transfer >> "$out/flooded.txt"; done
report "during the flood:"
wait "$flood_pid" || fail "initial_flood exited $?"
flood_pid=""
settle 12  # handshakes the flood began time out (ndm-recv: 10 s)
report "12 s after the flood:"
check_flat "12 s after the flood"
grep -q failed "$out/quiet.txt" && fail "a transfer failed without a flood"
failed=$(grep -c failed "$out/flooded.txt" || true)
grep -v failed "$out/flooded.txt" > "$out/flooded_ok.txt" || true
[ -s "$out/flooded_ok.txt" ] || fail "no transfer completed under the flood ($failed failed)"
quiet=$(median < "$out/quiet.txt") flooded=$(median < "$out/flooded_ok.txt")
cat "$out/flood.txt"
printf 'TRANSFER %s: median %.3f s without the flood (5 runs), %.3f s under it (%d completed byte-exact, %d failed): %.2fx\n' \
  "$TRANSFER" "$quiet" "$flooded" "$(wc -l < "$out/flooded_ok.txt")" "$failed" "$(awk -v f="$flooded" -v q="$quiet" 'BEGIN {print f / q}')"
[ "$failed" -eq 0 ] || fail "$failed transfers failed under the flood"
echo "load_check: PASS"
