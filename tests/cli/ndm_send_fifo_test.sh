#!/usr/bin/env bash
# ndm-send -F with a FIFO never hangs silently: (1) sending from a FIFO is
# refused at once (exit 2, one line: the bytes of a lost packet are read
# again at their offset); (2) -R into a FIFO no one reads says that it waits
# and gives up after --connect-timeout (exit 1); (3) -R into a FIFO whose
# reader comes writes the test's bytes through it.
set -euo pipefail
send="$1"
recv="$2"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"
reader=""
trap '[ -n "$reader" ] && kill "$reader" 2>/dev/null; cleanup' EXIT
mkfifo "$out/fifo"

set +e
timeout 10 "$send" --insecure -c 127.0.0.1 -p 9 -F "$out/fifo" > "$out/send.txt" 2> "$out/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "sending from a FIFO: exit $rc (124: it hung)"
[ "$(wc -l < "$out/err.txt")" -eq 1 ] && grep -q "ndm-send: -F .*fifo: not a regular file but a FIFO" "$out/err.txt" ||
  fail "sending from a FIFO: not one line naming it"

set +e
timeout 10 "$send" --insecure -c 127.0.0.1 -p 9 -R -F "$out/fifo" --connect-timeout 500 > "$out/send.txt" 2> "$out/err.txt"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "-R into a FIFO without a reader: exit $rc (124: it hung)"
grep -q "waiting up to 0.5 s (--connect-timeout) for a reader to open the FIFO" "$out/err.txt" || fail "the wait is not said"
grep -q "no reader opened the FIFO within 0.5 s" "$out/err.txt" || fail "the end of the wait is not said"

start_server
(sleep 0.3; exec cat "$out/fifo" > "$out/got.bin") &
reader=$!
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -R -n 2M -F "$out/fifo" > "$out/send.txt" 2> "$out/err.txt" ||
  fail "-R into a FIFO with a reader: exit $?"
wait "$reader"
reader=""
finish_server
[ "$(stat -c %s "$out/got.bin")" -eq 2097152 ] || fail "the FIFO's reader got $(stat -c %s "$out/got.bin") bytes, not 2 MiB"
grep -q "waiting up to" "$out/err.txt" || fail "the wait for the reader is not said"
echo "ok"
