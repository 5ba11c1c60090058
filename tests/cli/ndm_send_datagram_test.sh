#!/usr/bin/env bash
# ndm-send -u (RFC 9221 DATAGRAM frames, as iperf3 -u) against ndm-recv on
# loopback through --emu loss=2%: the receiver's count, by sequence numbers,
# shows about 2 % lost, none twice or damaged, nothing retransmitted, and
# the transport told the sender of about as many losses; the text output has
# iperf3 -u's Jitter and Lost/Total columns on both sides.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

# within VALUE LO HI: LO <= VALUE <= HI (floating point).
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# 1. -J: 10 Mbit/s for 3 s, about 2650 datagrams of 1408 bytes.
start_server
timeout 60 "$send" --insecure -c 127.0.0.1 -p "$port" -u -b 10M -t 3 --emu loss=2% -J \
  > "$out/u.json" 2> "$out/u_err.txt" || fail "ndm-send -u: exit $?"
finish_server
sent=$(get u.json end.datagrams.sent)
received=$(get u.json end.datagrams.received)
pct=$(get u.json end.sum.lost_percent)
lost=$(get u.json end.sum.lost_packets)
told=$(get u.json end.datagrams.lost_by_transport)
echo "sent $sent, received $received, lost $lost ($pct %), the transport declared $told lost"
within "$sent" 2300 2800 || fail "-b 10M -t 3 sent $sent datagrams, not about 2660"
within "$pct" 0.8 3.6 || fail "lost $pct %, not about 2 %"
[ "$lost" -eq $((sent - received)) ] || fail "lost $lost is not sent - received"
[ "$(get u.json end.datagrams.duplicates)" = 0 ] || fail "datagrams arrived twice"
[ "$(get u.json end.datagrams.malformed)" = 0 ] || fail "datagrams arrived damaged"
[ "$(get u.json end.datagrams.retransmits)" = 0 ] || fail "packets were retransmitted"
# What the link dropped the transport declared lost (a few may have arrived late).
within "$told" "$((lost > 5 ? lost - 5 : 0))" "$((lost + 5))" || fail "the transport declared $told lost, the receiver missed $lost"
within "$(get u.json end.sum_received.bits_per_second)" 7.5e6 10.5e6 || fail "receiver rate not about 10 Mbit/s"

# 2. Text: iperf3 -u's columns on the client, the counts on the server.
start_server
timeout 60 "$send" --insecure -c 127.0.0.1 -p "$port" -u -b 2M -t 1 > "$out/u.txt" 2> "$out/u_err.txt" \
  || fail "ndm-send -u (text): exit $?"
finish_server
grep -q "Jitter    Lost/Total Datagrams" "$out/u.txt" || fail "no Jitter/Lost column header"
grep -Eq " ms  0/[0-9]+ \(0%\)  receiver$" "$out/u.txt" || fail "no lossless receiver line"
grep -q "datagrams: jitter" "$out/recv.txt" || fail "ndm-recv printed no datagram counts"
echo "ok"
