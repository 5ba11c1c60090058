#!/usr/bin/env bash
# ndm's controllers against the kernel's under the same impairments (bench/RESULTS.md,
# "Fidelity against the kernel"):
# kernel TCP (iperf3 -C reno|cubic|bbr) and ndm (ndm-send -C reno|cubic|bbr1)
# each from inside `ndm-emu shell --profile P` to a server on the host, so both
# cross the same emulator through the same TUN devices. Two packet sizes: a
# 1500-byte MTU (ndm: 1452-byte datagrams) and a 65535-byte MTU (ndm: 65507,
# the seed replica). ROUNDS runs each, interleaved, seeds 1..ROUNDS (the same
# seed for kernel and ndm in a round); prints the medians and ndm/kernel.
# Needs root (ndm-emu shell); says so and exits 0 otherwise (a benchmark, not a test).
#
#   bench/kernel_fidelity.sh [BUILD_DIR]   env: PROFILE (urban-lte), SECS (10), ROUNDS (5), SIZES ("1500 65535"),
#     PAIRS ("reno:reno cubic:cubic bbr:bbr1", kernel:ndm controller pairs),
#     NDM_ARGS (extra ndm-send options, e.g. "--loss-detection rack"),
#     RECV_ARGS (extra ndm-recv options, e.g. "--ack-ranges 4": the receiver's ACKs as TCP's SACK)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
PROFILE=${PROFILE:-urban-lte}
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-5}
SIZES=${SIZES:-"1500 65535"}
PAIRS=${PAIRS:-"reno:reno cubic:cubic bbr:bbr1"}
NDM_ARGS=${NDM_ARGS:-}
RECV_ARGS=${RECV_ARGS:-}
EMU="$BUILD_DIR/tools/ndm-emu"
SEND="$BUILD_DIR/tools/ndm-send"
RECV="$BUILD_DIR/tools/ndm-recv"
for b in "$EMU" "$SEND" "$RECV"; do [ -x "$b" ] || { echo "kernel_fidelity: $b not built (scripts/build.sh)" >&2; exit 2; }; done
if [ "$(id -u)" -ne 0 ]; then
  echo "kernel_fidelity: needs root for ndm-emu shell (network namespace, TUN devices); nothing measured"
  exit 0
fi
command -v iperf3 > /dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 > /dev/null
command -v jq > /dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq > /dev/null
grep -qw bbr /proc/sys/net/ipv4/tcp_available_congestion_control ||
  echo "kernel_fidelity: the kernel offers no bbr ($(cat /proc/sys/net/ipv4/tcp_available_congestion_control))" >&2

out=$(mktemp -d)
pids=()
host_rmem=$(sysctl -n net.ipv4.tcp_rmem)
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  sysctl -qw net.ipv4.tcp_rmem="$host_rmem" || true
  rm -rf "$out"
}
trap cleanup EXIT
sysctl -qw net.ipv4.tcp_rmem="4096 131072 67108864"
# shellcheck disable=SC2086  # RECV_ARGS is a list of options
"$RECV" -p 5298 $RECV_ARGS > /dev/null 2> "$out/recv_err.txt" &
pids+=($!)
sleep 1

# One run inside the shell: MTU, then the command; prints the receiver's Mbit/s or "fail".
# The shell's TUN device (ndms<pid>) is the namespace's only device besides
# lo (ip sees the namespace's devices; /sys/class/net would show the host's);
# its host side (ndmh<pid>) gets the same MTU through nsenter into this
# script's namespace, or the host's TCP would announce a 1460-byte MSS. The
# namespace's TCP buffers may grow to 64 MB: with the default 4 MB send
# buffer (net.ipv4.tcp_wmem) kernel BBR is limited by its own socket, not
# the path, to about a third of what it reaches here (measured: 9–14 against
# 17–27 Mbit/s at 1500 B, 92 against 323 Mbit/s at 65535 B); ndm's windows
# are 16 MB per stream and 32 MB per connection. The host's tcp_rmem is raised
# alike for the run and restored after.
in_shell() {  # SEED MTU CMD
  "$EMU" shell --quiet --profile "$PROFILE" --seed "$1" -- sh -c \
    "sysctl -qw net.ipv4.tcp_wmem='4096 16384 67108864' net.ipv4.tcp_rmem='4096 131072 67108864' &&
     dev=\$(ip -o link show | awk -F': ' '\$2 != \"lo\" { sub(/@.*/, \"\", \$2); print \$2; exit }');
     ip link set dev \$dev mtu $2 && nsenter -t $$ -n ip link set dev ndmh\${dev#ndms} mtu $2 && $3" 2> /dev/null
}
# iperf3 3.12's server stays "busy" for a while after a test whose control
# connection broke (5 % loss can do that), so every attempt gets a one-off
# server of its own, and a broken attempt is tried again (at most 3 times).
iperf_port=5300
kernel_run() {  # SEED MTU CC
  local v srv
  for _ in 1 2 3; do
    iperf_port=$((iperf_port + 1))
    iperf3 -s -1 -p "$iperf_port" > /dev/null 2>&1 &
    srv=$!
    sleep 0.3
    v=$(in_shell "$1" "$2" "iperf3 -c \$NDM_EMU_HOST_ADDR -p $iperf_port -C $3 -t $SECS -J" |
      jq -r '.end.sum_received.bits_per_second / 1e6' 2> /dev/null) || v=""
    kill "$srv" 2> /dev/null || true
    wait "$srv" 2> /dev/null || true
    if [ -n "$v" ] && [ "$v" != null ]; then echo "$v"; return; fi
  done
  echo fail
}
ndm_run() {  # SEED MTU CC
  local len=1452
  [ "$2" -gt 1500 ] && len=65507
  in_shell "$1" "$2" "$SEND --insecure -c \$NDM_EMU_HOST_ADDR -p 5298 -C $3 -l $len -t $SECS --seed $1 $NDM_ARGS -J" |
    jq -r '.end.sum_received.bits_per_second / 1e6' 2> /dev/null || echo fail
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(uname -r); profile $PROFILE, ${SECS} s per run, $ROUNDS rounds${NDM_ARGS:+, ndm-send $NDM_ARGS}${RECV_ARGS:+, ndm-recv $RECV_ARGS}"
for mtu in $SIZES; do
  for r in $(seq "$ROUNDS"); do
    for pair in $PAIRS; do
      k=${pair%%:*}
      n=${pair##*:}
      echo "$mtu kernel-$k $(kernel_run "$r" "$mtu" "$k")" >> "$out/runs.txt"
      echo "$mtu ndm-$n $(ndm_run "$r" "$mtu" "$n")" >> "$out/runs.txt"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out/runs.txt" "$PAIRS" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    mtu, who, v = line.split()
    runs.setdefault((int(mtu), who), []).append(v)
def med(vals):
    ok = [float(v) for v in vals if v not in ("fail", "null")]
    return (statistics.median(ok) if ok else None), len(vals) - len(ok)
print("| MTU | controller | kernel Mbit/s (median) | ndm Mbit/s (median) | ndm / kernel | kernel runs | ndm runs |")
print("|---|---|---:|---:|---:|---|---|")
for mtu in sorted({m for m, _ in runs}):
    for k, n in (pair.split(":") for pair in sys.argv[2].split()):
        kv, kf = med(runs.get((mtu, f"kernel-{k}"), []))
        nv, nf = med(runs.get((mtu, f"ndm-{n}"), []))
        ratio = f"{nv / kv:.2f}" if kv and nv else "n/a"
        fmt = lambda x: f"{x:.2f}" if x is not None else "n/a"
        one = lambda v: v if v in ("fail", "null") else f"{float(v):.1f}"
        kr = ", ".join(map(one, runs.get((mtu, f"kernel-{k}"), [])))
        nr = ", ".join(map(one, runs.get((mtu, f"ndm-{n}"), [])))
        print(f"| {mtu} | {k} / {n} | {fmt(kv)} | {fmt(nv)} | {ratio} | {kr} | {nr} |")
EOF
