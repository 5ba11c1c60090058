#!/usr/bin/env bash
# A NAT rebinding on real sockets: ndm-send -> ndm-emu relay --rebind 1s@1s ->
# ndm-recv. Each rebinding gives the client's datagrams a new source port as
# the server sees them, and what the server still sends to the old port is
# dropped (RFC 9000 §9.3). The server follows each one (it validates the new
# path, docs/wire-format.md §3.3): both exit 0, the data is byte-exact, and
# the relay reports its rebindings. Also --rebind's one-line errors (exit 2).
set -euo pipefail
send="$1"
recv="$2"
check="$3"
emu="$4"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

start_server
relay_port=$(free_port)
"$emu" relay --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$port" --rebind 1s@1s 2> "$out/relay.txt" &
relay=$!
for _ in $(seq 100); do grep -q "^ndm-emu relay:" "$out/relay.txt" 2>/dev/null && break; sleep 0.05; done
grep -q "^ndm-emu relay:" "$out/relay.txt" || fail "relay did not start"
timeout 40 "$send" --insecure -c 127.0.0.1 -p "$relay_port" -t 4 -b 200M -J > "$out/rebind.json" 2> "$out/err.txt" \
  || fail "ndm-send through a rebinding relay: exit $?"
finish_server
kill -INT $relay
wait $relay || fail "relay exit code"
[ "$(get rebind.json end.byte_exact)" = true ] || fail "not byte-exact"
[ "$(get rebind.json end.sum_received.bytes)" = "$(get rebind.json end.sum_sent.bytes)" ] || fail "byte counts differ"
rebinds=$(sed -n 's/^rebindings: \([0-9]*\);.*/\1/p' "$out/relay.txt")
echo "rebindings: $rebinds"
[ "${rebinds:-0}" -ge 2 ] || fail "the relay rebound ${rebinds:-0} times in 4 s"
# Data still flowed after the last rebinding: the last interval carried bytes.
[ "$(get rebind.json intervals.3.sum.bytes)" -gt 0 ] || fail "nothing sent in the last second"

for bad in 0s x 1s@ @2s; do
  msg=$("$emu" relay --listen 127.0.0.1:0 --to 127.0.0.1:9 --rebind "$bad" 2>&1) && fail "--rebind $bad accepted"
  rc=$?
  [ $rc = 2 ] && [ "$(echo "$msg" | wc -l)" = 1 ] && echo "$msg" | grep -q -- "--rebind" \
    || fail "--rebind $bad: exit $rc: $msg"
done
echo "ok"
