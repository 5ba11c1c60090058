#!/usr/bin/env bash
# Clients that would hold ndm-recv for ever end, and the next client is
# served (ndm-recv --help: --rcv-timeout, --snd-timeout, --test-grace). One
# server, short limits, QUIC's idle timeout far longer than them (so it is
# not what ends a test), and in turn:
#   forward: (1) a -t 2 client that after its data sends only a keep-alive
#   frame a second (holding_client keepalive) and (2) one that sends PINGs
#   and no data at all (ndm_probe --keepalive): both end at --rcv-timeout;
#   (3) a -t 1 client that trickles a byte every 200 ms after its data: data
#   progress, so it ends at -t plus --test-grace; then a normal test; with
#   -J the reason and the client's address; a -t beyond --max-test-time is refused.
#   reverse: (4) a -R client that sends PINGs and no ACK (ndm_probe
#   --keepalive), (5) one silent once the data flows (holding_client no-ack)
#   and (6) one that never reads (its flow-control window stays shut): all
#   end at --snd-timeout; an
#   interrupted -R test's closing line shows the bytes sent; then a normal -R test.
# Every ended test is reported as ended by the server with its reason, and at
# exit (-V) no connection is left open; with -J the reason is the "error" key.
set -euo pipefail
direction="$1"
send="$2"
recv="$3"
client="$4"
probe="$5"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

port=$(free_port)
"$recv" -B 127.0.0.1 -p "$port" -V --idle-timeout 60 --rcv-timeout 1500 --snd-timeout 1500 --test-grace 2 \
  > "$out/recv.txt" 2> "$out/recv_err.txt" &
srv_pid=$!
for _ in $(seq 50); do grep -q "listening" "$out/recv.txt" 2>/dev/null && break; sleep 0.1; done
grep -q "listening" "$out/recv.txt" || fail "ndm-recv did not start"

# The tools' test request (as ndm_hostile_peer_test.sh), REVERSE spliced in.
params() {
  printf '{"magic":"ndm-perf/1","cc":"cubic","packet_size":1452,"seconds":%s,"bytes":0,"interval":1,"seed":1,"streams":1,"index":0,"test_id":%s,"reverse":%s,"workload":4}' \
    "$1" "$RANDOM$RANDOM" "$2"
}
# held CASE MAX: the client's file says the server closed within MAX seconds.
held() {
  local s
  s=$(sed -n 's/^held: //p' "$out/$1.txt")
  [ -n "$s" ] || fail "$1: no close from the server"
  awk -v s="$s" -v m="$2" 'BEGIN { exit !(s <= m) }' || fail "$1: the server held the client $s s (more than $2 s)"
}
normal_test() {
  timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 "$@" > "$out/send.txt" 2> "$out/send_err.txt" ||
    fail "the normal test after the holding clients: exit $?"
  grep -q "receiver  (byte-exact)" "$out/send.txt" || fail "the normal test is not byte-exact"
}

if [ "$direction" = forward ]; then
  "$client" --port "$port" --mode keepalive --seconds 2 > "$out/keepalive.txt" 2>&1 || fail "keepalive client"
  grep -q "close: no data from the client for 1500 ms (--rcv-timeout)" "$out/keepalive.txt" || fail "keepalive: reason"
  held keepalive 6
  timeout 20 "$probe" hello --to "127.0.0.1:$port" --params "$(params 2 false)" --keepalive > "$out/pings.txt" ||
    fail "PING probe: $(cat "$out/pings.txt")"
  grep -q "reason=no data from the client for 1500 ms (--rcv-timeout)" "$out/pings.txt" || fail "PINGs: reason"
  "$client" --port "$port" --mode trickle --seconds 1 > "$out/trickle.txt" 2>&1 || fail "trickle client"
  grep -q "close: the test was not over 2 s after its send phase (-t 1 s): --test-grace" "$out/trickle.txt" ||
    fail "trickle: reason"
  held trickle 5
  normal_test
  ended=3
else
  timeout 20 "$probe" hello --to "127.0.0.1:$port" --params "$(params 5 true)" --keepalive > "$out/noack.txt" ||
    fail "no-ACK probe: $(cat "$out/noack.txt")"
  # The probe's own connection acknowledged the first second's data (up to
  # its 16 MiB window): from then on nothing is acknowledged or let through.
  grep -q "reason=.* for 1500 ms (--snd-timeout)" "$out/noack.txt" || fail "PINGs without ACKs: reason"
  "$client" --port "$port" --mode no-ack --seconds 5 > "$out/noack2.txt" 2>&1 || fail "no-ack client"
  grep -q "close: no acknowledgement of the data sent for 1500 ms (--snd-timeout)" "$out/noack2.txt" || fail "no-ack: reason"
  held noack2 4
  "$client" --port "$port" --mode no-read --seconds 5 > "$out/noread.txt" 2>&1 || fail "no-read client"
  grep -q "close: the client's flow control let nothing more be sent for 1500 ms (--snd-timeout)" "$out/noread.txt" ||
    fail "no-read: reason"
  held noread 4
  # An interrupted -R test: its closing sender line has what was sent, not 0.
  timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 10 -R --forceflush > "$out/int_send.txt" 2>&1 &
  int_pid=$!
  for _ in $(seq 50); do grep -q "sec" "$out/int_send.txt" 2>/dev/null && break; sleep 0.1; done
  kill -INT "$int_pid"
  wait "$int_pid" || true
  normal_test -R
  ended=3
fi

sleep 1  # the last test's connection through its closing period
kill -INT "$srv_pid"
wait "$srv_pid" || fail "ndm-recv exit code"
srv_pid=""
[ "$(grep -c "the test ended early: the server ended it:" "$out/recv.txt")" -eq "$ended" ] ||
  fail "ndm-recv did not report $ended tests as ended by the server"
[ "$(grep -c "the server ended the test:" "$out/recv_err.txt")" -eq "$ended" ] || fail "stderr: tests ended by the server"
grep -q "Server: .* tests served, 0 connections open at exit" "$out/recv.txt" || fail "connections left open"
grep -q "Accepted connection from 127.0.0.1, port [0-9]" "$out/recv.txt" || fail "no client address"
grep -qE '^\[  1\] local 127\.0\.0\.1 port '"$port"' connected to 127\.0\.0\.1 port [0-9]+$' "$out/recv.txt" ||
  fail "no connected line"
if [ "$direction" = forward ]; then
  # -J: the reason in iperf3's "error" key, the client's address in its start keys.
  start_server -J --rcv-timeout 500 --max-test-time 5
  # A -t beyond --max-test-time is refused with the reason, and starts no test.
  timeout 10 "$probe" hello --to "127.0.0.1:$port" --params "$(params 10 false)" > "$out/long.txt" || fail "long -t probe"
  grep -q "reason=the test asks for 10 s; this server takes at most 5 s (--max-test-time)" "$out/long.txt" ||
    fail "a -t beyond --max-test-time was not refused"
  "$client" --port "$port" --mode keepalive --seconds 0.5 > "$out/json_client.txt" 2>&1 || fail "-J: keepalive client"
  finish_server
  grep -qF '"error": "the server ended the test: no data from the client for 500 ms (--rcv-timeout)"' "$out/recv.txt" ||
    fail "-J: no error key with the reason"
  grep -q '"accepted_connection": {' "$out/recv.txt" || fail "-J: no start.accepted_connection"
  grep -q '"remote_host": "127.0.0.1"' "$out/recv.txt" || fail "-J: no start.connected[].remote_host"
fi
if [ "$direction" = reverse ]; then
  # The interrupted test's closing sender line counts what was sent, over the time it was.
  line=$(grep -B1 "the test ended early: the client was interrupted" "$out/recv.txt" | head -1)
  grep -q "sender" <<< "$line" || fail "no closing line of the interrupted -R test"
  if grep -qE '0\.00-0\.00 |  0\.00 Bytes' <<< "$line"; then fail "the interrupted -R test's closing line: $line"; fi
fi
echo "ok"
