#!/usr/bin/env bash
# Hostile peers (docs/security.md, "Limits": nothing from the network is
# trusted). Against one ndm-recv -1: (1) the wedge: a
# reverse-mode hello, then an Initial that ACKs the server's packet 0 and a
# packet never sent; (2) test parameters out of bounds (interval 1e-300, 1e10,
# 9.2233715e9) and a controller name full of escape sequences: each refused
# with a close reason, stderr escaped, no interval rows; then a normal ndm-send
# test still succeeds on the same server. (2b) A -P 2 test missing a
# connection ends after one idle timeout. (3) ndm-recv -J: a client closing
# with a reason that is not UTF-8 ends the test, the JSON document holds it
# escaped. (4) ndm-send against a server whose close reason carries escape
# sequences: one escaped line, exit 1. (5) ndm-send's flags have the same bounds.
set -euo pipefail
send="$1"
recv="$2"
probe="$3"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

# The tools' test request, with INTERVAL, REVERSE and CC spliced in raw.
params() {
  printf '{"magic":"ndm-perf/1","cc":"%s","packet_size":1452,"seconds":2,"bytes":0,"interval":%s,"seed":1,"streams":1,"index":0,"test_id":%s,"reverse":%s,"workload":4}' \
    "$3" "$1" "$RANDOM$RANDOM" "$2"
}
hostile() { timeout 10 "$probe" hello --to "127.0.0.1:$port" --params "$@"; }

# 1 and 2: hostile hellos, then a normal test.
start_server
hostile "$(params 1 true cubic)" --bogus-ack > "$out/probe.txt" || fail "wedge probe: $(cat "$out/probe.txt")"
grep -q "never sent" "$out/probe.txt" || fail "wedge: the server did not close with the ACK error"
for iv in 1e-300 1e10 9.2233715e9; do
  hostile "$(params "$iv" false cubic)" > "$out/probe.txt" || fail "interval $iv: $(cat "$out/probe.txt")"
  grep -q "reason=test parameter interval .* outside 0.1..60 s" "$out/probe.txt" || fail "interval $iv not refused"
done
hostile "$(params 1 false '\u001b]0;pwned\u0007\u001b[2J')" > "$out/probe.txt" || fail "cc probe: $(cat "$out/probe.txt")"
grep -qF 'reason=test parameter cc "\x1b]0;pwned\x07\x1b[2J" is not a known controller' "$out/probe.txt" ||
  fail "escape-laden controller name: $(cat "$out/probe.txt")"
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 > "$out/send.txt" 2> "$out/send_err.txt" ||
  fail "ndm-send after the hostile peers: exit $?"
grep -q "receiver  (byte-exact)" "$out/send.txt" || fail "the test after the hostile peers is not byte-exact"
finish_server
[ "$(grep -c 'rejected a connection: test parameter interval' "$out/recv_err.txt")" -eq 3 ] || fail "interval rejections on stderr"
grep -qF 'rejected a connection: test parameter cc "\x1b]0;pwned\x07\x1b[2J"' "$out/recv_err.txt" || fail "escaped cc on stderr"
if grep -q $'\e' "$out/recv_err.txt" "$out/recv.txt"; then fail "a raw escape byte reached ndm-recv's output"; fi
[ "$(grep -c 'Accepted connection' "$out/recv.txt")" -eq 1 ] || fail "a refused connection started a test"
[ "$(wc -l < "$out/recv.txt")" -lt 30 ] || fail "ndm-recv printed $(wc -l < "$out/recv.txt") lines"

# 2b. A -P 2 test whose second connection never comes ends after one idle
# timeout, closing the first with the reason, even though that one stays alive.
idle=()
if grep -q -- --idle-timeout <<<"$("$recv" --help)"; then idle=(--idle-timeout 3); fi
start_server "${idle[@]}"
join=$(params 1 false cubic | sed 's/"streams":1/"streams":2/')
timeout 70 "$probe" hello --to "127.0.0.1:$port" --params "$join" --keepalive > "$out/probe.txt" || fail "join probe: $(cat "$out/probe.txt")"
grep -q "reason=only 1 of 2 connections of the test arrived within" "$out/probe.txt" || fail "incomplete -P test did not end"
finish_server
grep -q "the test ended early: the server ended it: only 1 of 2 connections" "$out/recv.txt" || fail "ndm-recv did not report the incomplete test"

# 3. -J: the client's close reason is not UTF-8 (nlohmann::json refuses to dump such a string).
start_server -J
hostile "$(params 1 false cubic)" --close-with $'bye \xff\xfe \e[2J' > "$out/probe.txt" || fail "close-with probe: $(cat "$out/probe.txt")"
grep -q "sent close" "$out/probe.txt" || fail "the server refused a valid test: $(cat "$out/probe.txt")"
finish_server
grep -qF '"error": "client disconnected: bye \\xff\\xfe \\x1b[2J"' "$out/recv.txt" || fail "-J error with the escaped reason"

# 4. ndm-send: a server that closes with escape sequences in its reason.
port=$(free_port)
"$probe" close-server --bind "127.0.0.1:$port" --reason $'\e]0;pwned\a\e[2J\rFAKE' > "$out/fake.txt" &
fake=$!
for _ in $(seq 50); do grep -q listening "$out/fake.txt" 2>/dev/null && break; sleep 0.1; done
set +e
timeout 15 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 > "$out/send.txt" 2> "$out/send_err.txt"
rc=$?
set -e
wait "$fake" || fail "fake server exit code"
[ "$rc" -eq 1 ] || fail "ndm-send exit code $rc against a closing server"
grep -qF 'ndm-send: connection failed: \x1b]0;pwned\x07\x1b[2J\rFAKE' "$out/send_err.txt" || fail "escaped reason"
if grep -q $'\e' "$out/send_err.txt"; then fail "a raw escape byte reached ndm-send's stderr"; fi
[ "$(wc -l < "$out/send_err.txt")" -eq 1 ] || fail "ndm-send's error is not one line"

# 5. ndm-send's own flags: the same bounds as the server's, one line, exit 2, before any packet.
for args in "-i 0.05" "-i 61" "-t 0" "-t 86401" "-n 1025T" "-n 1e30" "-l 1199" "-l 65508" "-P 0" "-P 129"; do
  set +e
  # shellcheck disable=SC2086
  err=$("$send" --insecure -c 127.0.0.1 -p 9 $args 2>&1 > /dev/null)
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "ndm-send $args: exit $rc ($err)"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "ndm-send $args: not one line: $err"
done
echo "ok"
