#!/usr/bin/env bash
# --qlog on both sides of a -P 2 run: one JSON-SEQ qlog file per connection and
# side, named <odcid>_<client|server>.sqlog with matching ODCIDs, every record
# valid JSON (checked by ndm_json_check), the QUIC event names present; a bad
# --qlog directory is one line and exit code 2.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

start_server --qlog "$out/srv"
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -n 1M -P 2 --emu loss=2% --qlog "$out/cli" > "$out/send.txt" 2> "$out/send_err.txt" \
  || fail "ndm-send exit $?"
finish_server
grep -q "receiver  (byte-exact)" "$out/send.txt" || fail "not byte-exact with --qlog"

ls "$out/cli" > "$out/cli_files.txt"
ls "$out/srv" > "$out/srv_files.txt"
[ "$(grep -cE '^[0-9a-f]{16}_client\.sqlog$' "$out/cli_files.txt")" -eq 2 ] || fail "client qlog files"
[ "$(grep -cE '^[0-9a-f]{16}_server\.sqlog$' "$out/srv_files.txt")" -eq 2 ] || fail "server qlog files"
# The same connections on both sides.
diff <(sed 's/_client.sqlog//' "$out/cli_files.txt") <(sed 's/_server.sqlog//' "$out/srv_files.txt") > /dev/null \
  || fail "ODCIDs differ between the sides"
"$check" seq "$out"/cli/*.sqlog "$out"/srv/*.sqlog > "$out/check.txt" 2>&1 || fail "qlog records: $(cat "$out/check.txt")"
for name in transport:packet_sent transport:packet_received recovery:metrics_updated; do
  grep -q "\"$name\"" "$out"/cli/*.sqlog || fail "no $name events"
done
grep -q '"vantage_point":{"name":"ndm","type":"server"}' "$out"/srv/*.sqlog || fail "server vantage point"

# A --qlog path that cannot be a directory: exit code 2, one line naming it.
set +e
err=$("$send" --insecure -c 127.0.0.1 -p "$port" -t 1 --qlog /proc/ndm-no-such-dir 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" -eq 2 ] || fail "bad --qlog exit code $rc"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "bad --qlog error is not one line: $err"
echo "$err" | grep -q 'qlog directory' || fail "bad --qlog message: $err"
echo "ok"
