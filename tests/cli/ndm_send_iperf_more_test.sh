#!/usr/bin/env bash
# More ndm-send / ndm-recv flags at iperf3 parity (README.md, "ndm-send / ndm-recv"), on loopback:
# -F sends a file / writes what is received, byte-exact, both directions and
# on both tools; --bidir loads both directions at once; --get-server-output
# brings the server's text or -J document back; -w limits goodput to about
# a window per RTT (also as the server's window, after the handshake);
# --forceflush writes each row as it happens; -R reports both sides' CPU and
# the server's RTTs; --connect-timeout bounds the handshake.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
doc="$4"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

# bad CMD...: exit 2 with a one-line message.
bad() {
  set +e
  "$@" > /dev/null 2> "$out/bad_err.txt"; local rc=$?
  set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l < "$out/bad_err.txt")" -eq 1 ] || fail "$*: exit $rc, not 2 with one line"
}

# 1. -F: a random 3 MiB file arrives byte-identical, client to server and
# back (client -R -F writes what the server's -F sends); a missing file, a
# directory to write into, and -F with -P 2 are bad input.
head -c $((3 * 1024 * 1024)) /dev/urandom > "$out/file.bin"
start_server -F "$out/server_got.bin"
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -F "$out/file.bin" -J > "$out/f.json" 2> "$out/err.txt" || fail "-F exit $?"
finish_server
cmp "$out/file.bin" "$out/server_got.bin" || fail "-F: the server's copy differs"
[ "$(get f.json end.sum_received.bytes)" = $((3 * 1024 * 1024)) ] || fail "-F: received $(get f.json end.sum_received.bytes)"
[ "$(get f.json end.byte_exact)" = true ] || fail "-F: not byte-exact"
check_shape f.json "-F"
start_server -F "$out/file.bin"
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -R -F "$out/client_got.bin" > "$out/fr.txt" 2> "$out/err.txt" || fail "-R -F exit $?"
finish_server
cmp "$out/file.bin" "$out/client_got.bin" || fail "-R -F: the client's copy differs"
grep -q "receiver  (byte-exact)" "$out/fr.txt" || fail "-R -F: not byte-exact"
# -n limits the amount below the file's size.
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -F "$out/file.bin" -n 1M -J > "$out/fn.json" 2> "$out/err.txt" \
  || fail "-F -n exit $?"
finish_server
[ "$(get fn.json end.sum_received.bytes)" = 1048576 ] || fail "-F -n 1M: received $(get fn.json end.sum_received.bytes)"
bad "$send" -c 127.0.0.1 -F "$out/no such file"
bad "$send" -c 127.0.0.1 -R -F "$out"
bad "$send" -c 127.0.0.1 -F "$out/file.bin" -P 2
bad "$recv" -F "$out/no/such/dir/file"

# 2. --bidir: both directions byte-exact at once, rows tagged [TX-C]/[RX-C]
# ([TX-S]/[RX-S] on the server), iperf3's *_bidir_reverse sums in -J.
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" --bidir -t 2 -b 20M -J > "$out/bd.json" 2> "$out/err.txt" \
  || fail "--bidir -J exit $?"
finish_server
check_shape bd.json "--bidir"
python3 - "$out/bd.json" <<'PY' || fail "--bidir -J"
import json, sys
d = json.load(open(sys.argv[1]))
end = d["end"]
assert end["byte_exact"], "byte-exact"
assert d["start"]["test_start"]["bidir"] == 1
for k in ("sum_sent", "sum_received", "sum_sent_bidir_reverse", "sum_received_bidir_reverse"):
    assert 15e6 <= end[k]["bits_per_second"] <= 25e6, "%s %s" % (k, end[k]["bits_per_second"])
assert end["sum_sent"]["sender"] and not end["sum_sent_bidir_reverse"]["sender"]
assert [s["sender"]["sender"] for s in end["streams"]] == [True, False], "streams: ours, then the server's"
assert all(s["byte_exact"] for s in end["streams"])
assert all("sum_bidir_reverse" in i and len(i["streams"]) == 2 for i in d["intervals"])
PY
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" --bidir -P 2 -t 1 > "$out/bd.txt" 2> "$out/err.txt" || fail "--bidir -P 2 exit $?"
finish_server
for tag in "[  1][TX-C]" "[  2][RX-C]" "[SUM][TX-C]" "[SUM][RX-C]"; do
  grep -F "$tag" "$out/bd.txt" | grep -q "receiver  (byte-exact)" || fail "--bidir: no byte-exact $tag receiver line"
done
grep -Fq "[  1][RX-S]" "$out/recv.txt" && grep -Fq "[SUM][TX-S]" "$out/recv.txt" || fail "--bidir: server rows"
bad "$send" -c 127.0.0.1 --bidir -R

# 3. --get-server-output: the server's rows and closing lines after ours,
# or (-J) its document as server_output_json.
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -i 0.5 --get-server-output > "$out/so.txt" 2> "$out/err.txt" \
  || fail "--get-server-output exit $?"
finish_server
sed -n '/^Server output:$/,$p' "$out/so.txt" > "$out/so_part.txt"
grep -q "Accepted connection" "$out/so_part.txt" && grep -q "receiver" "$out/so_part.txt" \
  && [ "$(grep -c " sec " "$out/so_part.txt")" -ge 3 ] || fail "--get-server-output: $(cat "$out/so_part.txt")"
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -R -J --get-server-output > "$out/soj.json" 2> "$out/err.txt" \
  || fail "--get-server-output -R -J exit $?"
finish_server
check_shape soj.json "--get-server-output -J"
[ "$(get soj.json server_output_json.end.sum_sent.bytes)" = "$(get soj.json end.sum_sent.bytes)" ] \
  || fail "server_output_json: the server's sum_sent differs from ours"

# 4. -w: over a 100 ms RTT a 64 KiB window caps goodput near 64 KiB per RTT
# (5.2 Mbit/s), forward (the server's window) and -R (ours); the JSON
# reports it; sizes outside 16K..1G are bad input.
for mode in "" -R; do
  start_server
  # shellcheck disable=SC2086
  timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 3 -w 64K --emu delay=50ms $mode -J > "$out/w.json" 2> "$out/err.txt" \
    || fail "-w 64K $mode exit $?"
  finish_server
  [ "$(get w.json start.sock_bufsize)" = 65536 ] || fail "-w: sock_bufsize $(get w.json start.sock_bufsize)"
  rate=$(get w.json end.sum_received.bits_per_second)
  awk -v r="$rate" 'BEGIN { exit !(r > 1e6 && r < 6.5e6) }' || fail "-w 64K $mode over 100 ms: $rate bit/s"
done
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 3 --emu delay=50ms -J > "$out/w0.json" 2> "$out/err.txt" || fail "no -w exit $?"
finish_server
rate=$(get w0.json end.sum_received.bits_per_second)
awk -v r="$rate" 'BEGIN { exit !(r > 15e6) }' || fail "without -w over 100 ms: only $rate bit/s"
for w in 0 8K 2G lots; do bad "$send" -c 127.0.0.1 -w "$w"; done

# 5. --forceflush: the log file holds rows while the test still runs; -R
# reports both sides' CPU and the server's RTTs.
# Without it, the rows wait in the buffer until the end (a 3 s test writes less than a buffer).
for flush in --forceflush ""; do
  rm -f "$out/ff.txt"
  start_server
  # shellcheck disable=SC2086
  timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 3 -i 0.5 -b 5M --logfile "$out/ff.txt" $flush 2> "$out/err.txt" &
  ff_pid=$!
  sleep 2
  rows=$(grep -c " sec " "$out/ff.txt" || true)
  kill -0 "$ff_pid" 2>/dev/null || fail "--forceflush: the test ended within 2 s"
  wait "$ff_pid" || fail "$flush exit $?"
  finish_server
  if [ -n "$flush" ]; then
    [ "$rows" -ge 1 ] || fail "--forceflush: no row in the log file 2 s into a 3 s test"
  else
    [ "$rows" -eq 0 ] || fail "without --forceflush: $rows rows in the log file 2 s into the test"
  fi
  grep -q "receiver" "$out/ff.txt" || fail "$flush: no receiver line at the end"
done
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -R -J > "$out/rc.json" 2> "$out/err.txt" || fail "-R -J exit $?"
finish_server
python3 - "$out/rc.json" <<'PY' || fail "-R CPU and RTT"
import json, sys
end = json.load(open(sys.argv[1]))["end"]
cpu = end["cpu_utilization_percent"]
assert cpu["host_total"] > 0 and cpu["remote_total"] > 0, cpu
s = end["streams"][0]["sender"]
assert 0 < s["min_rtt"] <= s["mean_rtt"] <= s["max_rtt"], s
assert s["max_snd_cwnd"] > 0, s
PY

# 7. --connect-timeout: a server that never answers (a bound socket nobody
# reads: no ICMP either) fails the test after that long, with exit 1. A long
# one (7000 ms, run meanwhile) is waited for in full, not cut short.
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1], flush=True); time.sleep(30)' > "$out/silent.txt" &
silent=$!
for _ in $(seq 50); do [ -s "$out/silent.txt" ] && break; sleep 0.1; done
t0=$(date +%s%N)
( set +e; timeout 20 "$send" --insecure -c 127.0.0.1 -p "$(cat "$out/silent.txt")" --connect-timeout 7000 -t 1 > /dev/null 2> "$out/ct_long_err.txt"
  echo "$? $(( ($(date +%s%N) - t0) / 1000000 ))" > "$out/ct_long.txt" ) &
long=$!
set +e
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$(cat "$out/silent.txt")" --connect-timeout 400 -t 1 > /dev/null 2> "$out/ct_err.txt"
rc=$?
set -e
took=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$rc" -eq 1 ] || fail "--connect-timeout 400 against a silent server: exit $rc, want 1"
grep -q "within 400 ms" "$out/ct_err.txt" || fail "--connect-timeout: $(cat "$out/ct_err.txt")"
[ "$took" -lt 3000 ] || fail "--connect-timeout 400 took $took ms"
wait "$long"
kill "$silent" 2> /dev/null || true
read -r rc took < "$out/ct_long.txt"
[ "$rc" -eq 1 ] || fail "--connect-timeout 7000 against a silent server: exit $rc, want 1"
grep -q "within 7000 ms" "$out/ct_long_err.txt" || fail "--connect-timeout 7000: $(cat "$out/ct_long_err.txt")"
[ "$took" -ge 6900 ] && [ "$took" -lt 9000 ] || fail "--connect-timeout 7000 took $took ms"

echo PASS
