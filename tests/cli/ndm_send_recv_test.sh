#!/usr/bin/env bash
# ndm-send → ndm-recv over loopback for 2 s: consistent sender/receiver totals,
# byte-exact delivery, the -J document's keys; -P (parallel connections, SUM
# rows) and -R (reverse: the server sends) byte-exact; bad input (unknown controller,
# refused port) is one clear line and a non-zero exit within seconds.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

# 1. Text output: the sender line equals the receiver line's byte count, byte-exact.
start_server
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 2 -C cubic > "$out/send.txt" 2> "$out/send_err.txt" || fail "ndm-send exit $?"
finish_server
grep -q "controller cubic, profile none, packet size 1452 bytes" "$out/send.txt" || fail "header line"
grep -q "Retr  Cwnd" "$out/send.txt" || fail "interval header"
[ "$(grep -c ' sec .*Bytes' "$out/send.txt")" -ge 4 ] || fail "interval rows"
grep -q "receiver  (byte-exact)" "$out/send.txt" || fail "not byte-exact"
grep -q " receiver" "$out/recv.txt" || fail "receiver summary line"
# The receiver's drain after the 2 s send phase is shown, not folded into its duration.
grep -Eq '^\[  1\]   0\.00-[0-9.]+ +sec .* receiver  \(last byte [0-9]+\.[0-9]{2} s after the send phase\)$' "$out/recv.txt" \
  || fail "ndm-recv's receiver line does not show the drain"

# 2. -J on both sides: exact byte totals agree (sum_sent == sum_received == the receiver's own count).
start_server -J
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 2 -C reno -J > "$out/send.json" 2> "$out/send_err.txt" || fail "ndm-send -J exit $?"
finish_server
for k in start intervals end intervals.1 intervals.0.sum.retransmits intervals.0.streams.0.snd_cwnd; do
  get send.json "$k" > /dev/null
done
[ "$(get send.json end.byte_exact)" = true ] || fail "-J: not byte-exact"
sent=$(get send.json end.sum_sent.bytes)
[ "$sent" -gt 0 ] || fail "-J: nothing sent"
[ "$sent" = "$(get send.json end.sum_received.bytes)" ] && [ "$sent" = "$(get recv.txt end.sum_received.bytes)" ] \
  || fail "-J: sum_sent, sum_received and the receiver's own count differ"
[ "$(get send.json start.test_start.protocol)" = NDM ] || fail "-J: protocol"
# ndm-recv -J: the drain is its own key, receiver duration minus the 2 s send phase.
drain=$(get recv.txt end.sum_received.drain_seconds)
end_s=$(get recv.txt end.sum_received.end)
awk -v d="$drain" -v e="$end_s" 'BEGIN { x = e - 2; if (x < 0) x = 0; exit !(d >= 0 && (d - x) < 1e-9 && (x - d) < 1e-9) }' \
  || fail "ndm-recv -J drain_seconds $drain, end $end_s"
get recv.txt end.streams.0.receiver.drain_seconds > /dev/null

# 2b. io_uring unavailable: the fallback's log line goes to stderr, and -J stays one JSON document.
export NDM_IO_FORCE_PROBE_FAIL=1
start_server -J
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -J > "$out/fallback.json" 2> "$out/fallback_err.txt" || fail "ndm-send (fallback) exit $?"
finish_server
unset NDM_IO_FORCE_PROBE_FAIL
grep -q "using the epoll fallback" "$out/fallback_err.txt" || fail "no fallback log line on stderr"
for f in fallback.json recv.txt; do
  [ "$(head -c 1 "$out/$f")" = "{" ] && [ "$(tail -c 2 "$out/$f" | head -c 1)" = "}" ] || fail "$f is not one JSON document"
  get "$f" end > /dev/null  # the whole document parses
done

# 3. -P 3: three connections served as one test, per-connection rows plus [SUM], all byte-exact.
start_server
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -P 3 > "$out/send.txt" 2> "$out/send_err.txt" || fail "ndm-send -P exit $?"
finish_server
[ "$(grep -c '^\[  [123]\] .*receiver  (byte-exact)' "$out/send.txt")" -eq 3 ] || fail "-P: per-connection byte-exact lines"
grep -q '^\[SUM\] .*sender' "$out/send.txt" || fail "-P: SUM sender line"
grep -q '^\[SUM\] .*receiver  (byte-exact)' "$out/send.txt" || fail "-P: SUM receiver line"
grep -q '^\[SUM\] .* sec ' "$out/recv.txt" || fail "-P: server SUM rows"
[ "$(grep -c 'receiver  (last byte .* after the send phase)$' "$out/recv.txt")" -eq 4 ] \
  || fail "-P: server summary (3 connections + SUM, each with its drain)"

# 4. -R -P 2: the server sends with the client's controller; still byte-exact.
start_server
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -R -P 2 -C reno > "$out/send.txt" 2> "$out/send_err.txt" || fail "ndm-send -R exit $?"
finish_server
grep -q "Reverse mode" "$out/send.txt" || fail "-R: no 'Reverse mode' line"
[ "$(grep -c 'receiver  (byte-exact)' "$out/send.txt")" -eq 3 ] || fail "-R: byte-exact lines"
grep -q "controller reno.*reverse mode: sending" "$out/recv.txt" || fail "-R: server did not send with reno"
grep -q '^\[SUM\] .*sender$' "$out/recv.txt" || fail "-R: server sender summary"

# 4b. -C NAME:KEY=VALUE: the options reach the controller on both sides (-R: the server's).
start_server
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -C bbr:beta=0.8:headroom=0.1 > "$out/send.txt" 2> "$out/send_err.txt" \
  || fail "ndm-send -C bbr:... exit $?"
finish_server
grep -q 'receiver  (byte-exact)' "$out/send.txt" || fail "-C bbr:options: not byte-exact"
start_server
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -R -C bbr1:lt_bw=off > "$out/send.txt" 2> "$out/send_err.txt" \
  || fail "ndm-send -R -C bbr1:... exit $?"
finish_server
grep -q 'receiver  (byte-exact)' "$out/send.txt" || fail "-R -C bbr1:options: not byte-exact"
grep -q "controller bbr1.*reverse mode: sending" "$out/recv.txt" || fail "-R: server did not send with bbr1"
set +e
err=$("$send" --insecure -c 127.0.0.1 -p 9 -C bbr:beta=7 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" -eq 2 ] || fail "bad controller option exit code $rc"
echo "$err" | grep -q 'option "beta"' || fail "error does not name the option: $err"

# 5. Unknown controller: exit code 2, one line.
set +e
err=$("$send" --insecure -c 127.0.0.1 -p 9 -C nope 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" -eq 2 ] || fail "unknown controller exit code $rc"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "error is not one line: $err"
echo "$err" | grep -q 'nope' || fail "error does not name the controller: $err"

# 6. Refused port: non-zero within 10 s, one clear line.
port=$(free_port)
set +e
t0=$SECONDS
err=$(timeout 15 "$send" --insecure -c 127.0.0.1 -p "$port" -t 2 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "refused port exit code $rc"
[ $((SECONDS - t0)) -le 10 ] || fail "refused port took $((SECONDS - t0)) s"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "refused port error is not one line: $err"
echo "$err" | grep -q 'connection failed' || fail "refused port message: $err"
echo "ok"
