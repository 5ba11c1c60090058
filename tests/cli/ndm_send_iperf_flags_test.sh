#!/usr/bin/env bash
# ndm-send / ndm-recv flags at iperf3 parity (issue 21), on loopback: -u is
# refused with the reason, --version names version and commit, -b paces the
# sender to the asked rate (forward and -R).
set -euo pipefail
send="$1"
recv="$2"
check="$3"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

# within VALUE LO HI: LO <= VALUE <= HI (floating point).
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# 1. -u: one line saying why, exit 2; --version: "TOOL VERSION (git COMMIT)", exit 0.
set +e
"$send" -c 127.0.0.1 -u > "$out/u.txt" 2> "$out/u_err.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "-u: exit $rc, not 2"
[ "$(wc -l < "$out/u_err.txt")" -eq 1 ] || fail "-u: not one line"
grep -q "reliable transport" "$out/u_err.txt" && grep -q "iperf3 -u" "$out/u_err.txt" && grep -q -- "-b RATE" "$out/u_err.txt" \
  || fail "-u message: $(cat "$out/u_err.txt")"
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
echo PASS
