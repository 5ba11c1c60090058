#!/usr/bin/env bash
# --cc-plugin: a controller from a shared object (tests/plugin/aimd_plugin.cpp)
# is listed by ndm-compare, compared with a built-in one in virtual time, run
# by ndm-sim and by ndm-send -> ndm-recv both ways over loopback; a file that
# is not a plugin is a one-line error, exit 2.
set -euo pipefail
compare="$1"
sim="$2"
plugin="$3"
not_plugin="$4"
send="$5"
recv="$6"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

"$compare" --cc-plugin "$plugin" --list-cc > "$out/list.txt"
grep -q '^plugin-aimd ' "$out/list.txt" || fail "--list-cc does not show the plugin's controller"

(cd "$out" && "$compare" --cc-plugin "$plugin" --cc plugin-aimd:increase=2,cubic --virtual -t 3 -q \
  --profile "delay=20ms,rate=20mbit,queue=50pkt" --out "$out/res" > "$out/compare.txt") ||
  fail "ndm-compare with the plugin: exit $?"
grep -q 'plugin-aimd:increase=2' "$out/compare.txt" || fail "the plugin's controller is not in the comparison"
grep -q 'plugin-aimd' "$out/res/results.json" || fail "results.json lacks the plugin's controller"

"$sim" --cc-plugin "$plugin" --cc plugin-aimd -n 4M --rate 20 --delay 10 > "$out/sim.txt" ||
  fail "ndm-sim with the plugin: exit $?"

set +e
"$compare" --cc-plugin "$not_plugin" --cc cubic --virtual -t 1 > /dev/null 2> "$out/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a file without the entry point: exit $rc, not 2"
[ "$(wc -l < "$out/err.txt")" -eq 1 ] || fail "the error is not one line: $(cat "$out/err.txt")"
grep -q "not an ndm controller plugin" "$out/err.txt" || fail "unexpected error: $(cat "$out/err.txt")"
# Over sockets: the server loads the plugin too (it checks the name; in -R it runs the controller).
for dir in "" -R; do
  start_server --cc-plugin "$plugin"
  timeout 30 "$send" --insecure --cc-plugin "$plugin" -c 127.0.0.1 -p "$port" -C plugin-aimd:increase=2 -t 1 $dir \
    > "$out/send$dir.txt" 2> "$out/send_err$dir.txt" || fail "ndm-send $dir with the plugin: exit $?"
  finish_server
  grep -q "receiver  (byte-exact)" "$out/send$dir.txt" || fail "ndm-send $dir with the plugin: not byte-exact"
done

echo "PASS: $(grep -c . "$out/list.txt") controllers listed; ndm-compare and ndm-sim ran plugin-aimd"
