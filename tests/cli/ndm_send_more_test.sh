#!/usr/bin/env bash
# ndm-send beyond the basics: the -J document matches docs/ndm-send-json.md
# (forward with -P 2 and reverse, and a failed test's document with its
# error) and records its provenance, -n delivers exactly that many bytes (in
# QUIC version 2 too),
# --emu loss=5% retransmits and stays byte-exact, and a server killed with
# SIGKILL mid-test gives one clear error line and a non-zero exit within seconds.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
doc="$4"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

# 1. The documented JSON shape, forward with two connections and reverse.
start_server
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -P 2 -J > "$out/fwd.json" 2> "$out/err.txt" || fail "-J -P 2 exit $?"
fwd_port=$port
finish_server
check_shape fwd.json forward
[ "$(get fwd.json start.test_start.num_streams)" = 2 ] || fail "num_streams"
get fwd.json end.streams.1.byte_exact > /dev/null
# ECN is on by default and loopback keeps the codepoints: the path validates.
[ "$(get fwd.json end.streams.0.ecn.ect0_sent)" -gt 0 ] || fail "no ECT(0) packets sent"
[ "$(get fwd.json end.streams.0.ecn.state)" = capable ] || fail "ECN state $(get fwd.json end.streams.0.ecn.state)"
start_server
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -R -J > "$out/rev.json" 2> "$out/err.txt" || fail "-J -R exit $?"
finish_server
check_shape rev.json reverse
[ "$(get rev.json start.test_start.reverse)" = 1 ] || fail "reverse flag"
[ "$(get rev.json end.byte_exact)" = true ] || fail "reverse not byte-exact"
# Provenance: what produced the document; the drain after the send phase is its own key.
[ "$(get fwd.json provenance.command_line)" = "$send --insecure -c 127.0.0.1 -p $fwd_port -t 1 -P 2 -J" ] \
  || fail "provenance.command_line: $(get fwd.json provenance.command_line)"
get fwd.json provenance.git_commit | grep -Eq '^([0-9a-f]{40}(-dirty)?|unknown)$' || fail "provenance.git_commit"
get fwd.json provenance.start_time | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z$' || fail "provenance.start_time"
get fwd.json provenance.kernel | grep -q "^$(uname -s) $(uname -r) " || fail "provenance.kernel"
get fwd.json end.sum_received.drain_seconds > /dev/null

# 1b. A test that fails before its end still prints a JSON document with "error" (as iperf3), exit 1.
noport=$(free_port)
set +e
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$noport" -t 1 -J > "$out/fail.json" 2> "$out/fail_err.txt"; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "no server: exit $rc, not 1"
[ -n "$(get fail.json error)" ] || fail "no error in the failure document"
[ "$(get fail.json error)" = "$(sed 's/^ndm-send: //' "$out/fail_err.txt")" ] || fail "JSON error differs from stderr"
check_shape fail.json failure

# 2. -n: exactly that many bytes, both sides agree; ndm-recv -J records its provenance too.
start_server -J
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -n 3M -J > "$out/n.json" 2> "$out/err.txt" || fail "-n exit $?"
finish_server
[ "$(get recv.txt provenance.command_line)" = "$recv -1 -B 127.0.0.1 -p $port -J" ] || fail "ndm-recv -J provenance"
[ "$(get n.json end.sum_sent.bytes)" = 3145728 ] || fail "-n 3M: sent $(get n.json end.sum_sent.bytes)"
[ "$(get n.json end.sum_received.bytes)" = 3145728 ] || fail "-n 3M: received $(get n.json end.sum_received.bytes)"
[ "$(get n.json end.byte_exact)" = true ] || fail "-n not byte-exact"

# 2b. --quic-version 2 (RFC 9369): the server answers in version 2, byte-exact.
start_server -V
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -n 1M --quic-version 2 -J > "$out/v2.json" 2> "$out/err.txt" \
  || fail "--quic-version 2 exit $?"
finish_server
[ "$(get v2.json end.byte_exact)" = true ] || fail "--quic-version 2 not byte-exact"
grep -q "QUIC version 0x6b3343cf" "$out/recv.txt" || fail "the server did not report version 2: $(cat "$out/recv.txt")"

# 3. --emu loss=5%: retransmissions, still byte-exact.
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -n 2M --emu loss=5% --seed 3 -J > "$out/loss.json" 2> "$out/err.txt" \
  || fail "--emu exit $?"
finish_server
[ "$(get loss.json end.sum_sent.retransmits)" -gt 0 ] || fail "no retransmissions at 5% loss"
[ "$(get loss.json end.byte_exact)" = true ] || fail "--emu loss not byte-exact"
[ "$(get loss.json end.sum_received.bytes)" = 2097152 ] || fail "--emu loss: wrong byte count"

# 4. The server disappears (SIGKILL) during a 10 s test.
start_server
"$send" --insecure -c 127.0.0.1 -p "$port" -t 10 > "$out/kill_send.txt" 2> "$out/kill_err.txt" &
send_pid=$!
sleep 1.5
kill -9 "$srv_pid"
wait "$srv_pid" 2>/dev/null || true
srv_pid=""
t0=$SECONDS
for _ in $(seq 100); do kill -0 "$send_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$send_pid" 2>/dev/null; then kill -9 "$send_pid"; fail "ndm-send still running 10 s after the server died"; fi
set +e
wait "$send_pid"; rc=$?
set -e
[ "$rc" -ne 0 ] || fail "ndm-send exited 0 after the server died"
[ $((SECONDS - t0)) -le 7 ] || fail "ndm-send took $((SECONDS - t0)) s to notice"
# One error line; on a machine without io_uring the back end's fallback notice comes first.
[ "$(grep -vc "using the epoll fallback" "$out/kill_err.txt")" -eq 1 ] || fail "not one error line: $(cat "$out/kill_err.txt")"
grep -q "lost" "$out/kill_err.txt" || fail "unclear error: $(cat "$out/kill_err.txt")"
echo "ok"
