#!/usr/bin/env bash
# Across hosts: ndm-recv and ndm-send in two network namespaces joined by a
# veth pair, with a kernel tbf bottleneck of 20 Mbit/s on the sender's side.
# The transfer must be byte-exact and its goodput below the bottleneck rate
# (and well above zero). Needs root, ip and tc; skips (exit 77, skip_lib.sh) otherwise.
set -euo pipefail
send="$1"
recv="$2"
check="$3"

# shellcheck source=skip_lib.sh
source "$(dirname "$0")/skip_lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip > /dev/null || skip "no 'ip' command (iproute2; scripts/setup.sh installs it)"
command -v tc > /dev/null || skip "no 'tc' command (iproute2; scripts/setup.sh installs it)"
skip_unless_netns_exec

ns_s="ndm_snd_$$"
ns_r="ndm_rcv_$$"
veth_s="ndms$$"  # interface names stay under 16 characters
veth_r="ndmr$$"
out=$(mktemp -d)
srv_pid=""
cleanup() {
  [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
  ip netns del "$ns_s" 2>/dev/null || true  # takes the veth pair with it
  ip netns del "$ns_r" 2>/dev/null || true
  ip link del "$veth_s" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; for f in "$out"/*.txt "$out"/*.json; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done; exit 1; }

ip netns add "$ns_s" 2> /dev/null || skip "cannot create network namespaces here"
ip netns add "$ns_r"
ip link add "$veth_s" type veth peer name "$veth_r" 2> /dev/null || skip "cannot create a veth pair here"
ip link set "$veth_s" netns "$ns_s"
ip link set "$veth_r" netns "$ns_r"
ip -n "$ns_s" addr add 10.199.0.1/24 dev "$veth_s"
ip -n "$ns_r" addr add 10.199.0.2/24 dev "$veth_r"
for ns in "$ns_s" "$ns_r"; do ip -n "$ns" link set lo up; done
ip -n "$ns_s" link set "$veth_s" up
ip -n "$ns_r" link set "$veth_r" up
ip netns exec "$ns_s" tc qdisc add dev "$veth_s" root tbf rate 20mbit burst 32kbit latency 100ms \
  || skip "tc cannot install a tbf qdisc here"

ip netns exec "$ns_r" timeout 40 "$recv" -1 -B 10.199.0.2 -p 5201 > "$out/recv.txt" 2> "$out/recv_err.txt" &
srv_pid=$!
for _ in $(seq 50); do grep -q "listening" "$out/recv.txt" 2>/dev/null && break; sleep 0.1; done
grep -q "listening" "$out/recv.txt" || fail "ndm-recv did not start"

ip netns exec "$ns_s" timeout 30 "$send" --insecure -c 10.199.0.2 -p 5201 -t 3 -l 1452 -J > "$out/send.json" 2> "$out/send_err.txt" \
  || fail "ndm-send exit $?"
wait "$srv_pid" || fail "ndm-recv exit code"
srv_pid=""

[ "$("$check" get "$out/send.json" end.byte_exact)" = "true" ] || fail "not byte-exact"
bps=$("$check" get "$out/send.json" end.sum_received.bits_per_second) || fail "no receiver bitrate"
bytes=$("$check" get "$out/send.json" end.sum_received.bytes)
[ "$bytes" = "$("$check" get "$out/send.json" end.sum_sent.bytes)" ] || fail "sent and received bytes differ"
awk -v b="$bps" 'BEGIN { exit !(b > 5e6 && b < 20e6) }' \
  || fail "receiver goodput $bps bit/s is not between 5 and 20 Mbit/s"
echo "ok: $bytes bytes byte-exact through a 20 Mbit/s tbf, goodput $bps bit/s"
