#!/usr/bin/env bash
# ndm-emu relay end to end (no privileges needed): a UDP probe through the
# relay to an echo server on loopback, profile "delay=15ms" in both directions
# (RTT >= 30 ms, median 30..50 ms: the relay runs on the real clock, and a
# loaded CI machine under ASan adds scheduling delay), two probes at once (each gets its own
# echoes), statistics on SIGINT, and one-line errors with exit codes.
# Usage: ndm_emu_relay_test.sh NDM_EMU UDP_PROBE
set -u
EMU=$1
PROBE=$2
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT

base=$((30000 + $$ % 20000))
"$PROBE" echo --bind "127.0.0.1:$base" --idle-exit 10 & pids+=($!)
# Echo server bound before the relay forwards to it (when `ss` can tell).
if command -v ss > /dev/null; then
    for _ in $(seq 100); do ss -Hlun "sport = :$base" 2>/dev/null | grep -q . && break; sleep 0.05; done
fi
"$EMU" relay --listen "127.0.0.1:$((base + 1))" --to "127.0.0.1:$base" --profile delay=15ms --seed 3 \
    2> "$work/relay.err" &
relay=$!
pids+=($relay)
# The relay prints its header once its socket is bound (the probes must not race it).
for _ in $(seq 100); do grep -q "^ndm-emu relay:" "$work/relay.err" 2>/dev/null && break; sleep 0.05; done
grep -q "^ndm-emu relay:" "$work/relay.err" || fail "relay did not start: $(cat "$work/relay.err")"
"$PROBE" probe --to "127.0.0.1:$((base + 1))" --count 100 --interval-ms 3 --linger-ms 1000 > "$work/a.out" &
a=$!
"$PROBE" probe --to "127.0.0.1:$((base + 1))" --count 150 --interval-ms 2 --linger-ms 1000 > "$work/b.out"
wait $a
kill -INT $relay
wait $relay; rc=$?
[ $rc = 0 ] || fail "relay exited $rc after SIGINT"
cat "$work/a.out" "$work/b.out"
val() { tr ' ' '\n' < "$1" | sed -n "s/^$2=//p"; }
[ "$(val "$work/a.out" received)" = 100 ] || fail "probe a: $(cat "$work/a.out")"
[ "$(val "$work/b.out" received)" = 150 ] || fail "probe b: $(cat "$work/b.out")"
for f in a b; do
    awk -v m="$(val "$work/$f.out" rtt_min_ms)" -v p="$(val "$work/$f.out" rtt_median_ms)" \
        'BEGIN { exit !(m >= 30 && p <= 50) }' || fail "probe $f RTT: $(cat "$work/$f.out")"
done
grep -q "clients: 2 seen" "$work/relay.err" || fail "relay did not see two clients: $(cat "$work/relay.err")"
grep -q "^sent 250, delivered 250" "$work/relay.err" || fail "statistics: $(cat "$work/relay.err")"

# One-line errors: a bad profile, option or address exits 2, an address that cannot be bound 1.
out=$("$EMU" relay --listen 127.0.0.1:0 --to 127.0.0.1:9 --profile loss=150% 2>&1); rc=$?
[ $rc = 2 ] && [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q loss || fail "bad profile: $rc: $out"
out=$("$EMU" relay --listen 127.0.0.1:0 2>&1); rc=$?
[ $rc = 2 ] || fail "missing --to: exit $rc: $out"
out=$("$EMU" relay --listen nonsense --to 127.0.0.1:9 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "not ADDR:PORT" || fail "bad --listen: $rc: $out"
out=$("$EMU" relay --listen 192.0.2.1:7 --to 127.0.0.1:9 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "cannot bind" || fail "unbindable --listen: $rc: $out"
echo "ok"
