#!/usr/bin/env bash
# Throughput of `ndm-emu relay` with no impairment configured, against iperf3
# -u direct on loopback in the same run (the ratio is the number to compare;
# this machine is shared and noisy).
#
#   bench/relay_bench.sh [BUILD_DIR] [SECONDS] [ROUNDS]      (default: build 5 3)
#
# iperf3 opens a TCP control connection to the same port as its UDP data, and
# the relay forwards UDP only, so a small TCP forwarder (python3, bench-only)
# carries the control connection next to the relay. Each round runs direct,
# then through the relay; the script prints receiver goodput (what the iperf3
# server got) and the relay/direct ratio per round and the median.
set -eu
BUILD=${1:-build}
SECONDS_PER_RUN=${2:-5}
ROUNDS=${3:-3}
EMU=$BUILD/tools/ndm-emu
[ -x "$EMU" ] || { echo "relay_bench: $EMU not built" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "relay_bench: iperf3 not installed" >&2; exit 2; }
command -v python3 >/dev/null || { echo "relay_bench: python3 not installed" >&2; exit 2; }

BASE=$((20000 + $$ % 20000))
SERVER_PORT=$BASE
RELAY_PORT=$((BASE + 1))
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/tcpfwd.py" <<'EOF'
import asyncio, sys
lport, dport = int(sys.argv[1]), int(sys.argv[2])
async def pipe(r, w):
    try:
        while (b := await r.read(65536)):
            w.write(b)
            await w.drain()
    finally:
        w.close()
async def handle(r1, w1):
    r2, w2 = await asyncio.open_connection('127.0.0.1', dport)
    await asyncio.gather(pipe(r1, w2), pipe(r2, w1), return_exceptions=True)
async def main():
    s = await asyncio.start_server(handle, '127.0.0.1', lport)
    async with s:
        await s.serve_forever()
asyncio.run(main())
EOF
wait_tcp() {  # wait until something listens on TCP port $1
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "relay_bench: nothing listens on TCP $1" >&2
    exit 1
}

iperf3 -s -p "$SERVER_PORT" > "$work/server.log" 2>&1 & pids+=($!)
python3 "$work/tcpfwd.py" "$RELAY_PORT" "$SERVER_PORT" & pids+=($!)
"$EMU" relay --listen "127.0.0.1:$RELAY_PORT" --to "127.0.0.1:$SERVER_PORT" --profile none 2> "$work/relay.log" & pids+=($!)
relay_pid=$!
wait_tcp "$SERVER_PORT"
wait_tcp "$RELAY_PORT"

run() {  # prints the receiver's goodput in Gbit/s
    iperf3 -c 127.0.0.1 -p "$1" -u -b 0 -l 1400 -t "$SECONDS_PER_RUN" -J > "$work/run.json"
    python3 -c "
import json, sys
d = json.load(open('$work/run.json'))
if 'error' in d: sys.exit('relay_bench: iperf3: ' + d['error'])
print('%.3f' % (d['end']['sum_received']['bits_per_second'] / 1e9))"
}

ratios=()
for r in $(seq "$ROUNDS"); do
    direct=$(run "$SERVER_PORT")
    relayed=$(run "$RELAY_PORT")
    ratio=$(awk -v a="$relayed" -v b="$direct" 'BEGIN { printf "%.2f", a / b }')
    ratios+=("$ratio")
    echo "round $r: direct $direct Gbit/s, through ndm-emu relay $relayed Gbit/s, ratio $ratio"
done
# CPU the relay used per forwarded datagram (utime + stime from /proc): less
# sensitive to the machine's load than goodput; 1 Gbit/s of 1400-byte
# datagrams is 89.3 k datagrams/s, i.e. <= 11.2 us of CPU each on one core.
ticks=$(awk '{ print $14 + $15 }' "/proc/$relay_pid/stat")
hz=$(getconf CLK_TCK)
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
echo "median ratio relay/direct: $median"
kill -INT "$relay_pid"
wait "$relay_pid" 2>/dev/null || true
echo "relay statistics:"
sed -n '/^up/,$p' "$work/relay.log"
forwarded=$(awk '/^up/ { getline; gsub(",", ""); print $4 }' "$work/relay.log")
# What the relay itself passed on (into the server's socket, which may then
# overflow when the server gets too little CPU), averaged over the relayed runs.
awk -v n="$forwarded" -v s="$((SECONDS_PER_RUN * ROUNDS))" 'BEGIN {
    printf "relay forwarded: %d datagrams in %d s of relayed runs = %.3f Gbit/s\n", n, s, n * 1400 * 8 / s / 1e9 }'
awk -v t="$ticks" -v hz="$hz" -v n="$forwarded" 'BEGIN {
    us = t / hz * 1e6 / n
    printf "relay CPU: %.2f s for %d datagrams = %.2f us/datagram = %.2f Gbit/s of 1400-byte datagrams per core\n",
           t / hz, n, us, 1400 * 8 / us / 1000 }'
