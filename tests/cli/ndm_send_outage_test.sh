#!/usr/bin/env bash
# A 3 s blackhole of both directions mid-test on real sockets (the sender keeps
# probing through it, docs/architecture.md "Bounded PTO backoff"; both sides
# once ended with exit 1 at 6 s): ndm-send -t 8 --emu outage=3s@2s against
# ndm-recv on loopback. Both exit 0, the data is byte-exact, the -J document
# (docs/ndm-send-json.md's shape) counts the blackhole drops, the intervals
# show the dark seconds, and the sender resumed after them.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
doc="$4"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

start_server
timeout 40 "$send" --insecure -c 127.0.0.1 -p "$port" -t 8 --emu outage=3s@2s -J > "$out/outage.json" 2> "$out/err.txt" \
  || fail "ndm-send --emu outage=3s@2s: exit $?"
finish_server
check_shape outage.json the
[ "$(get outage.json end.byte_exact)" = true ] || fail "not byte-exact"
[ "$(get outage.json end.sum_received.bytes)" = "$(get outage.json end.sum_sent.bytes)" ] || fail "byte counts differ"
[ "$(get outage.json start.profile)" = "outage=3s@2s" ] || fail "profile name"
up=$(get outage.json end.emulator.up.drops.blackhole)
down=$(get outage.json end.emulator.down.drops.blackhole)
echo "blackhole drops: up $up, down $down"
[ "$up" -gt 0 ] || fail "no blackhole drops on the up path"
# Only the blackhole drops on an otherwise clean path.
[ "$(get outage.json end.emulator.up.dropped)" = "$up" ] || fail "up drops other than blackhole"
# Intervals 3-4 and 4-5 s lie inside [2 s, 5 s) from the first datagram: at
# most a few probes' new data (the window is full of unacknowledged data).
for i in 3 4; do
  b=$(get outage.json "intervals.$i.sum.bytes")
  [ "$b" -le 100000 ] || fail "interval $i: $b bytes sent in the dark"
done
# ... and the transfer resumed after it: new data in 5-8 s. Everything sent
# into the dark (~13 MB in 2-3 s on loopback) is resent first, which under
# sanitizers on a loaded machine can take until the last second.
resumed=0
for i in 5 6 7; do resumed=$((resumed + $(get outage.json "intervals.$i.sum.bytes"))); done
[ "$resumed" -gt 0 ] || fail "no new data in 5-8 s: did not resume"
[ "$(get outage.json end.sum_sent.retransmits)" -gt 0 ] || fail "no retransmissions after the blackhole"
echo "ok"
