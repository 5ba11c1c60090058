#!/usr/bin/env bash
# Ctrl-C on ndm-send, as on iperf3's client: it stops at once (exit 1,
# "interrupted") and closes its connections with a reason, so ndm-recv ends
# the test at once ("the client was interrupted") and is free for the next
# one; it takes no ICMP errors, so without the close it would wait for its
# idle timeout. Forward (the client sends) and -R (the server sends).
set -euo pipefail
send="$1"
recv="$2"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

interrupt_test() {  # ndm-send flags...
  start_server
  "$send" --insecure --forceflush -c 127.0.0.1 -p "$port" -t 30 "$@" > "$out/send.txt" 2> "$out/send_err.txt" &
  local spid=$! rc=0 t0 took
  for _ in $(seq 100); do grep -q " sec " "$out/send.txt" 2>/dev/null && break; sleep 0.1; done
  grep -q " sec " "$out/send.txt" || fail "ndm-send $*: no interval row within 10 s"
  t0=$(date +%s%N)
  kill -INT "$spid"
  wait "$spid" || rc=$?
  took=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$rc" -eq 1 ] || fail "ndm-send $* after SIGINT: exit $rc, want 1"
  grep -q "interrupted" "$out/send_err.txt" || fail "ndm-send $* after SIGINT says: $(cat "$out/send_err.txt")"
  [ "$took" -lt 2000 ] || fail "ndm-send $* took $took ms to stop after SIGINT"
  for _ in $(seq 30); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$srv_pid" 2>/dev/null && fail "ndm-recv -1 still runs 3 s after the client was interrupted ($*)"
  finish_server
  grep -q "the client was interrupted" "$out/recv_err.txt" || fail "ndm-recv was not told ($*)"
}

interrupt_test
interrupt_test -R
echo "PASS: ndm-send stops at SIGINT and ndm-recv ends the test at once, both directions"
