#!/usr/bin/env bash
# Wireshark's QUIC dissector (tshark, Debian's) decodes a captured ndm-send /
# ndm-recv session as QUIC version 1: no malformed packet and no expert
# warning, and, given the key log ndm-send wrote (SSLKEYLOGFILE), every 1-RTT
# packet decrypts and shows its frames, STREAM and ACK among them. --no-gso so
# that the loopback capture holds one datagram per frame. Capturing needs
# root (or dumpcap's capabilities): skipped, never passed, without it.
set -uo pipefail
send="$1"
recv="$2"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"
# shellcheck source=skip_lib.sh
source "$(dirname "$0")/skip_lib.sh"

command -v tshark > /dev/null || skip "tshark is not installed (scripts/setup.sh installs it)"
[ "$(id -u)" -eq 0 ] || skip "capturing on loopback needs root"

port=$(free_port)
tshark -i lo -f "udp port $port" -w "$out/session.pcap" > /dev/null 2> "$out/capture.txt" &
cap_pid=$!
for _ in $(seq 100); do grep -q "Capturing on" "$out/capture.txt" 2>/dev/null && break; sleep 0.1; done
grep -q "Capturing on" "$out/capture.txt" || { kill "$cap_pid" 2>/dev/null; skip "tshark cannot capture on lo: $(cat "$out/capture.txt")"; }

"$recv" -1 -B 127.0.0.1 -p "$port" --no-gso > "$out/recv.txt" 2> "$out/recv_err.txt" &
srv_pid=$!
for _ in $(seq 50); do grep -q "listening" "$out/recv.txt" 2>/dev/null && break; sleep 0.1; done
SSLKEYLOGFILE="$out/keys.log" timeout 20 "$send" --insecure --no-gso -c 127.0.0.1 -p "$port" -n 300K \
  > "$out/send.txt" 2> "$out/send_err.txt" || fail "ndm-send exit $?"
finish_server
sleep 0.5
kill -INT "$cap_pid"
wait "$cap_pid" 2>/dev/null

decode() { tshark -r "$out/session.pcap" -o "tls.keylog_file:$out/keys.log" "$@" 2>/dev/null; }
count() { decode -Y "$1" | wc -l; }
total=$(count "udp")
quic=$(count "quic")
[ "$total" -gt 20 ] || fail "only $total datagrams captured"
[ "$quic" -eq "$total" ] || fail "$((total - quic)) of $total datagrams not decoded as QUIC"
[ "$(count "quic.version == 0x00000001")" -gt 0 ] || fail "no QUIC v1 long header"
bad=$(decode -Y "_ws.malformed || _ws.expert.severity >= warning")
[ -z "$bad" ] || fail "malformed or warned-about packets: $bad"
short=$(count "quic.short")
[ "$short" -gt 10 ] || fail "only $short 1-RTT packets"
undecrypted=$(count "quic.short && !quic.frame")
[ "$undecrypted" -eq 0 ] || fail "$undecrypted of $short 1-RTT packets not decrypted"
[ "$(count "quic.stream.stream_id")" -gt 0 ] || fail "no STREAM frame decoded"
[ "$(count "quic.ack.largest_acknowledged")" -gt 0 ] || fail "no ACK frame decoded"
# One ClientHello: on a loaded machine its Initial may be sent again after a
# PTO, a copy with the same random, so count distinct randoms.
hellos=$(decode -Y "tls.handshake.type == 1" -T fields -e tls.handshake.random | sort -u)
[ -n "$hellos" ] || fail "no ClientHello decoded"
[ "$(wc -l <<<"$hellos")" -eq 1 ] || fail "more than one ClientHello: $hellos"
echo "ok: tshark decodes $total datagrams as QUIC v1, $short 1-RTT packets decrypted, no malformed packet"
