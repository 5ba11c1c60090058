#!/usr/bin/env bash
# ndm-send / ndm-recv flags at iperf3 parity (README.md, "ndm-send / ndm-recv"), on loopback: -u
# with a flag a datagram test has no use for is refused naming it (the datagram test itself:
# ndm_send_datagram_test.sh), --version names version and commit, -b paces the
# sender to the asked rate (forward and -R), -O leaves the first seconds out
# of the totals (rows and intervals marked omitted, forward and -R), -T and
# --logfile (--forceflush: tests/tools/test_output_redirect.cpp), -4/-6, -B,
# --cport, -k, ndm-recv -D with --pidfile, -V, and NDM_AEAD_BACKEND.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
doc="$4"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

# within VALUE LO HI: LO <= VALUE <= HI (floating point).
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# 1. -u -R: one line naming -R, exit 2; --version: "TOOL VERSION (git COMMIT)", exit 0.
set +e
"$send" -c 127.0.0.1 -u -R > "$out/u.txt" 2> "$out/u_err.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "-u -R: exit $rc, not 2"
[ "$(wc -l < "$out/u_err.txt")" -eq 1 ] || fail "-u -R: not one line"
grep -q -- "-u: -R does not apply to a datagram test" "$out/u_err.txt" || fail "-u -R message: $(cat "$out/u_err.txt")"
for tool in "$send" "$recv"; do
  "$tool" --version > "$out/version.txt" || fail "$tool --version exit $?"
  grep -Eq "^ndm-(send|recv) [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{40}(-dirty)?|unknown)\)$" "$out/version.txt" \
    || fail "--version: $(cat "$out/version.txt")"
done

# 2. -b: bad rates are bad input; 20M for 2 s reports about 20 Mbit/s both ways.
for bad in 0 fast 20M/0 20M/1001 11T; do
  set +e
  "$send" -c 127.0.0.1 -b "$bad" > /dev/null 2> "$out/b_err.txt"; rc=$?
  set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l < "$out/b_err.txt")" -eq 1 ] || fail "-b $bad: exit $rc"
done
for mode in "" -R; do
  start_server
  # shellcheck disable=SC2086
  timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 2 -b 20M $mode -J > "$out/b.json" 2> "$out/err.txt" \
    || fail "-b 20M $mode exit $?"
  finish_server
  for key in end.sum_sent.bits_per_second end.sum_received.bits_per_second; do
    within "$(get b.json $key)" 15e6 25e6 || fail "-b 20M $mode: $key $(get b.json $key)"
  done
  [ "$(get b.json end.byte_exact)" = true ] || fail "-b 20M $mode not byte-exact"
done
# 3. -O 1 -t 2 at 20 Mbit/s: 3 s of sending, the first second's intervals
# marked omitted (text and -J), the totals those of the last 2 s only.
for mode in "" -R; do
  start_server
  # shellcheck disable=SC2086
  timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 2 -O 1 -i 0.5 -b 20M $mode -J > "$out/o.json" 2> "$out/err.txt" \
    || fail "-O 1 $mode exit $?"
  finish_server
  check_shape o.json "-O $mode"
  python3 - "$out/o.json" <<'PY' || fail "-O 1 $mode: intervals or totals"
import json, sys
d = json.load(open(sys.argv[1]))
iv = d["intervals"]
om = [i for i in iv if i["sum"]["omitted"]]
kept = [i for i in iv if not i["sum"]["omitted"]]
assert d["start"]["test_start"]["omit"] == 1, "test_start.omit"
assert len(om) == 2 and iv[:2] == om, "the first two 0.5 s intervals are omitted: %d" % len(om)
assert all(s["omitted"] == i["sum"]["omitted"] for i in iv for s in i["streams"]), "streams[].omitted"
assert kept[0]["sum"]["start"] == 0, "the kept intervals start again at 0"
end = d["end"]
for k in ("sum_sent", "sum_received"):
    assert 1.8 <= end[k]["seconds"] <= 2.3, "%s.seconds %s" % (k, end[k]["seconds"])
    assert 15e6 <= end[k]["bits_per_second"] <= 25e6, "%s rate %s" % (k, end[k]["bits_per_second"])
    # the omitted second (~2.5 MB) is not in the totals
    assert end[k]["bytes"] < 0.8 * sum(i["sum"]["bytes"] for i in iv), k
assert end["byte_exact"], "byte-exact"
PY
done
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -O 1 -b 20M > "$out/o.txt" 2> "$out/err.txt" || fail "-O text exit $?"
finish_server
[ "$(grep -c '(omitted)$' "$out/o.txt")" -eq 1 ] || fail "-O 1: not one (omitted) row"
[ "$(grep -c '(omitted)$' "$out/recv.txt")" -eq 1 ] || fail "-O 1: ndm-recv: not one (omitted) row"
set +e
"$send" -c 127.0.0.1 -n 1M -O 1 > /dev/null 2> "$out/on_err.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "-O with -n: exit $rc, not 2"

# 4. -T prefixes every line (both tools; -J: a "title" key), --logfile
# appends the output to a file instead of stdout, a bad one is bad input.
start_server -T srv
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -V -T "my run" --logfile "$out/log.txt" --forceflush \
  > "$out/t_stdout.txt" 2> "$out/err.txt" || fail "-T --logfile exit $?"
finish_server
[ ! -s "$out/t_stdout.txt" ] || fail "--logfile: output on stdout too"
# -V: the parameters, the controller, TLS at the start; both sides' CPU and controllers at the end.
for pat in "^my run:  Starting Test: protocol: NDM, 1 streams, [0-9]+ byte packets, omitting 0 seconds, 1 second test$" \
           "^my run:  Controller: cubic$" "^my run:  TLS: TLS 1.3, TLS_[A-Z0-9_]+, ALPN [a-z0-9]+, QUIC version 0x" \
           "^my run:  Packet protection: (gnutls|openssl) \((GnuTLS|OpenSSL) [^;]+; measured gnutls [0-9.]+, openssl [0-9.]+ us per 1452-byte packet\)$" \
           "^my run:  CPU Utilization: local/sender [0-9.]+% \([0-9.]+%u/[0-9.]+%s\), remote/receiver [0-9.]+%" \
           "^my run:  snd_congestion cubic$" "^my run:  rcv_congestion reno$"; do
  grep -Eq "$pat" "$out/log.txt" || fail "-V: no line matching $pat"
done
grep -q "sender$" "$out/log.txt" || fail "--logfile: no sender line in the file"
[ "$(grep -vc '^my run:  ' "$out/log.txt")" -eq 0 ] || fail "-T: a line without the prefix"
[ "$(grep -c . "$out/recv.txt")" -eq "$(grep -c '^srv:  ' "$out/recv.txt")" ] || fail "ndm-recv -T: a line without the prefix"
lines=$(wc -l < "$out/log.txt")
start_server
timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -T "my run" -J --logfile "$out/log.txt" > /dev/null 2> "$out/err.txt" \
  || fail "-T -J exit $?"
finish_server
tail -n +"$((lines + 1))" "$out/log.txt" > "$out/t.json"
[ "$(get t.json title)" = "my run" ] || fail "-T -J: title $(get t.json title)"
check_shape t.json "-T -J"
set +e
"$send" -c 127.0.0.1 --logfile "$out" > /dev/null 2> "$out/lf_err.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q -- "--logfile" "$out/lf_err.txt" || fail "--logfile DIR: exit $rc"

# 5. -4/-6 refuse the other family; -k sends that many 128 KiB blocks from
# -B's address and --cport's port; ndm-recv -D detaches, its --pidfile names
# the running server and is removed when it exits.
for bad in "-6 -c 127.0.0.1" "-4 -c ::1" "-4 -6 -c 127.0.0.1" "-k 0 -c 127.0.0.1" "-k 2 -t 1 -c 127.0.0.1"; do
  set +e
  # shellcheck disable=SC2086
  "$send" $bad > /dev/null 2> "$out/fam_err.txt"; rc=$?
  set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l < "$out/fam_err.txt")" -eq 1 ] || fail "ndm-send $bad: exit $rc"
done
set +e
"$recv" -4 -B ::1 > /dev/null 2> "$out/fam_err.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "ndm-recv -4 -B ::1: exit $rc"
port=$(free_port)
cport=$(free_port)
"$recv" -D --pidfile "$out/recv.pid" --logfile "$out/daemon.txt" -1 -4 -p "$port" 2> "$out/d_err.txt" \
  || fail "ndm-recv -D exit $?"
for _ in $(seq 50); do grep -q listening "$out/daemon.txt" 2>/dev/null && break; sleep 0.1; done
daemon_pid=$(cat "$out/recv.pid")
kill -0 "$daemon_pid" || fail "--pidfile: no process $daemon_pid"
[ "$daemon_pid" != "$$" ] || fail "--pidfile: our own pid"
timeout 20 "$send" --insecure -4 -c localhost -p "$port" -k 8 -B 127.0.0.1 --cport "$cport" -J > "$out/k.json" 2> "$out/err.txt" \
  || fail "-k exit $?"
check_shape k.json "-k"
[ "$(get k.json end.sum_received.bytes)" = $((8 * 131072)) ] || fail "-k 8: received $(get k.json end.sum_received.bytes)"
[ "$(get k.json start.test_start.blocks)" = 8 ] || fail "-k: test_start.blocks"
[ "$(get k.json start.connected.0.local_port)" = "$cport" ] || fail "--cport: $(get k.json start.connected.0.local_port)"
[ "$(get k.json start.connected.0.local_host)" = "127.0.0.1:$cport" ] || fail "-B: $(get k.json start.connected.0.local_host)"
for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon_pid" 2>/dev/null && { kill "$daemon_pid"; fail "-D -1: still running after the test"; }
[ ! -e "$out/recv.pid" ] || fail "--pidfile not removed at exit"
grep -q "receiver" "$out/daemon.txt" || fail "-D --logfile: no receiver line"

# 6. -6 runs a test over IPv6 (::1), byte-exact, where the host has IPv6 loopback.
if ip -6 addr show dev lo 2>/dev/null | grep -q "::1"; then
  port6=$(free_port)
  "$recv" -1 -6 -B ::1 -p "$port6" > "$out/r6.txt" 2>&1 &
  pid6=$!
  for _ in $(seq 50); do grep -q "listening" "$out/r6.txt" 2>/dev/null && break; sleep 0.1; done
  timeout 20 "$send" --insecure -6 -c ::1 -p "$port6" -t 1 > "$out/s6.txt" 2>&1 || fail "ndm-send -6 -c ::1: exit $?"
  wait "$pid6" || fail "ndm-recv -6: exit code"
  grep -q "receiver  (byte-exact)" "$out/s6.txt" || fail "-6: not byte-exact: $(tail -3 "$out/s6.txt")"
  grep -q "connected to ::1" "$out/s6.txt" || fail "-6: $(head -3 "$out/s6.txt")"
else
  echo "note: no IPv6 loopback on this host: the -6 run was not made"
fi

# 7. NDM_AEAD_BACKEND names the library that protects the packets (docs/packet-protection.md,
# "Backends"): both -V say which and why, and the data arrives byte-exact; a bad value is one line, exit 1.
NDM_AEAD_BACKEND=openssl start_server -V --cipher chacha20
NDM_AEAD_BACKEND=gnutls timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -V > "$out/k.txt" 2>&1 \
  || fail "NDM_AEAD_BACKEND=gnutls: exit $?"
finish_server
grep -q "^Packet protection: gnutls (GnuTLS [0-9.]*; NDM_AEAD_BACKEND=gnutls)$" "$out/k.txt" \
  || fail "ndm-send -V: $(grep -i protection "$out/k.txt")"
grep -Eq "^\[  1\] TLS 1.3, TLS_CHACHA20_POLY1305_SHA256, QUIC version 0x00000001, packet protection: openssl \(OpenSSL 3[^;]*; NDM_AEAD_BACKEND=openssl\)$" \
  "$out/recv.txt" || fail "ndm-recv -V: $(grep -i protection "$out/recv.txt")"
grep -q "receiver  (byte-exact)" "$out/k.txt" || fail "NDM_AEAD_BACKEND: not byte-exact: $(tail -3 "$out/k.txt")"
set +e
NDM_AEAD_BACKEND=nss timeout 20 "$send" --insecure -c 127.0.0.1 -p "$(free_port)" -t 1 > /dev/null 2> "$out/k_err.txt"; rc=$?
set -e
[ "$rc" -eq 1 ] && [ "$(wc -l < "$out/k_err.txt")" -eq 1 ] || fail "NDM_AEAD_BACKEND=nss: exit $rc, $(cat "$out/k_err.txt")"
grep -q "NDM_AEAD_BACKEND=nss: expected gnutls, openssl or auto" "$out/k_err.txt" || fail "$(cat "$out/k_err.txt")"

echo PASS
