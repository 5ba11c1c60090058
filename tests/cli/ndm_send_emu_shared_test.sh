#!/usr/bin/env bash
# ndm-send -P 2 --emu up.rate=20mbit: the two connections share one emulated
# path, as they would share a real bottleneck (tools/emu/shared_path.hpp), so
# together they get at most the link's 20 Mbit/s (with a
# private link per connection they got ~40), and the data stays byte-exact.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 3 -P 2 --emu up.rate=20mbit,up.queue=100pkt -J \
  > "$out/shared.json" 2> "$out/err.txt" || fail "-P 2 --emu exit $?"
finish_server
[ "$(get shared.json end.byte_exact)" = true ] || fail "not byte-exact"
sent=$(get shared.json end.sum_sent.bits_per_second)
recvd=$(get shared.json end.sum_received.bits_per_second)
echo "-P 2 through one 20 Mbit/s emulated path: sent $sent bit/s, received $recvd bit/s"
# Margins: the sender also counts what the 100-packet queue (0.6 Mbit over 3 s) still holds at the end.
awk -v s="$sent" -v r="$recvd" 'BEGIN { exit !(r <= 22e6 && s <= 24e6 && r >= 2e6) }' \
  || fail "-P 2 at rate=20mbit: sent $sent, received $recvd bit/s (want <= 24e6 / 22e6 together)"
echo "ok"
