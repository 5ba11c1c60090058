#!/usr/bin/env bash
# A client whose final CONNECTION_CLOSE is lost, and who is then gone, never
# sends it again (RFC 9000 §10.2.1 repeats it only in answer to the peer's
# packets). ndm-recv ends the test once the client has acknowledged its
# report, so it prints its summary and (-1) exits at once, instead of
# refusing new tests until the idle timeout (120 s).
set -euo pipefail
recv="$1"
client="$2"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"
client_pid=""
trap '[ -n "$client_pid" ] && kill "$client_pid" 2>/dev/null; cleanup' EXIT

start_server
"$client" --port "$port" --bytes 4000000 --linger 30 > "$out/client.txt" 2> "$out/client_err.txt" &
client_pid=$!
for _ in $(seq 100); do grep -q "report:" "$out/client.txt" 2>/dev/null && break; sleep 0.1; done
grep -q "report: 4000000 bytes" "$out/client.txt" || fail "the client got no report"
# The client now holds its connection open without a word for 30 s.
for _ in $(seq 50); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$srv_pid" 2>/dev/null && fail "ndm-recv -1 still waits for the client's close 5 s after the client had its report"
finish_server
grep -q "receiver" "$out/recv.txt" || fail "ndm-recv printed no summary"
grep -q "ended early\|disconnected" "$out/recv.txt" "$out/recv_err.txt" && fail "ndm-recv took the test for a failure"
echo "PASS: ndm-recv ended the test when its report was acknowledged; $(grep receiver "$out/recv.txt" | tr -s ' ')"
