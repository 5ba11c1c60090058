#!/usr/bin/env bash
# Loopback goodput, one run on one machine (bench/results/2026-11-30-loopback-io-uring.md): single-connection bulk
# transfer with no impairment for
#   ndm io_uring (GSO/GRO on, off), ndm epoll fallback (GSO/GRO on, off),
#   ndm io_uring with GSO/GRO and large sends on the io-wq worker
#   (NDM_IO_URING_SEND=async, to show what that offload brings),
#   ndm io_uring and epoll at 64 KB datagrams,
#   kernel TCP (iperf3), iperf3 UDP at 1400-byte datagrams (unlimited rate),
# plus CPU seconds per GB for ndm (the whole process: sender and receiver
# threads and io_uring's io-wq worker).
# Each configuration runs ROUNDS (>= 3) times, interleaved so that background
# load hits all of them alike; the median is reported, and the ratios are
# taken between medians of the same run. Prints the machine load before and
# after (the machine is shared) and a Markdown table.
#
#   bench/bench_loopback.sh [BUILD_DIR]      (env: BYTES, ROUNDS, SECONDS_IPERF)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${1:-build-bench}
BYTES=${BYTES:-1073741824}      # 1 GiB per ndm run
ROUNDS=${ROUNDS:-3}
if [ "$ROUNDS" -lt 3 ]; then echo "bench: ROUNDS must be at least 3 (medians of interleaved runs)" >&2; exit 2; fi
SECONDS_IPERF=${SECONDS_IPERF:-5}
PORT=${PORT:-5301}

if ! command -v iperf3 >/dev/null; then
  echo "bench: installing iperf3 (Debian package)" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq iperf3 >/dev/null
fi

if [ ! -x "$BUILD_DIR/bench/ndm_loopback_bench" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNDM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target ndm_loopback_bench >/dev/null
fi
BENCH="$BUILD_DIR/bench/ndm_loopback_bench"

results=$(mktemp)
trap 'rm -f "$results"; [ -n "${IPERF_PID:-}" ] && kill "$IPERF_PID" 2>/dev/null || true' EXIT

ndm_run() {  # name, [ENV=value ...] args...
  local name=$1; shift
  local env=()
  while [[ ${1:-} == *=* ]]; do env+=("$1"); shift; done
  local line
  if line=$(env "${env[@]}" "$BENCH" "$@" --bytes "$BYTES" 2>/dev/null); then
    echo "$name $line" >>"$results"
  else
    echo "$name FAILED" >>"$results"
  fi
}

iperf3 -s -p "$PORT" >/dev/null 2>&1 &
IPERF_PID=$!
sleep 0.5

iperf_run() {  # name, args...
  local name=$1; shift
  local json
  json=$(iperf3 -c 127.0.0.1 -p "$PORT" -t "$SECONDS_IPERF" -J "$@" 2>/dev/null || true)
  python3 - "$name" "$json" >>"$results" <<'EOF'
import json, sys
name, text = sys.argv[1], sys.argv[2]
try:
    end = json.loads(text)["end"]
    sent, recv = end["sum_sent"], end["sum_received"]
    print(name, json.dumps({"send_gbps": sent["bits_per_second"] / 1e9,
                            "goodput_gbps": recv["bits_per_second"] / 1e9,
                            "lost_percent": recv.get("lost_percent", 0)}))
except Exception:
    print(name, "FAILED")
EOF
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$ROUNDS"); do
  echo "bench: round $round/$ROUNDS" >&2
  ndm_run "ndm-uring-gso"     --io uring --gso on
  ndm_run "ndm-epoll-gso"     --io epoll --gso on
  ndm_run "ndm-uring-gso-async" NDM_IO_URING_SEND=async --io uring --gso on
  ndm_run "ndm-uring-nogso"   --io uring --gso off
  ndm_run "ndm-epoll-nogso"   --io epoll --gso off
  ndm_run "ndm-uring-64k"     --io uring --gso on --mds 65507
  ndm_run "ndm-epoll-64k"     --io epoll --gso on --mds 65507
  iperf_run "iperf3-tcp"
  iperf_run "iperf3-udp-1400" -u -b 0 -l 1400
done

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs, load average (1/5/15 min) before: $load_before, after: $load_after"
echo

python3 - "$results" "$BYTES" "$ROUNDS" <<'EOF'
import json, statistics, sys, collections
path, nbytes, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = collections.OrderedDict()
for line in open(path):
    name, _, rest = line.strip().partition(" ")
    runs.setdefault(name, [])
    if rest != "FAILED":
        runs[name].append(json.loads(rest))
def med(name, key):
    vals = [r[key] for r in runs.get(name, []) if key in r]
    return statistics.median(vals) if vals else float("nan")
labels = {
    "ndm-uring-gso": "ndm io_uring, GSO/GRO on, 1452 B",
    "ndm-uring-gso-async": "ndm io_uring, GSO/GRO on, 1452 B, sends async (io-wq)",
    "ndm-uring-nogso": "ndm io_uring, GSO/GRO off, 1452 B",
    "ndm-epoll-gso": "ndm epoll fallback, GSO/GRO on, 1452 B",
    "ndm-epoll-nogso": "ndm epoll fallback, GSO/GRO off, 1452 B",
    "ndm-uring-64k": "ndm io_uring, 64 KB datagrams",
    "ndm-epoll-64k": "ndm epoll fallback, 64 KB datagrams",
    "iperf3-tcp": "kernel TCP (iperf3)",
    "iperf3-udp-1400": "iperf3 UDP, 1400 B, -b 0",
}
print(f"| configuration | goodput Gbit/s (median of {rounds}) | all runs | CPU s/GB (ndm: process) |")
print("|---|---|---|---|")
for name, label in labels.items():
    rs = runs.get(name, [])
    allv = ", ".join(f"{r['goodput_gbps']:.2f}" for r in rs) or "failed"
    cpu = f"{med(name, 'cpu_s_per_gb'):.2f}" if name.startswith("ndm") else "–"
    extra = ""
    if name == "iperf3-udp-1400":
        extra = f" (send rate {med(name, 'send_gbps'):.2f}, loss {med(name, 'lost_percent'):.1f} %)"
    print(f"| {label} | {med(name, 'goodput_gbps'):.2f}{extra} | {allv} | {cpu} |")
u, e = med("ndm-uring-gso", "goodput_gbps"), med("ndm-epoll-gso", "goodput_gbps")
udp = med("iperf3-udp-1400", "send_gbps")
print()
un, en = med("ndm-uring-nogso", "goodput_gbps"), med("ndm-epoll-nogso", "goodput_gbps")
uc, ec = med("ndm-uring-gso", "cpu_s_per_gb"), med("ndm-epoll-gso", "cpu_s_per_gb")
ua = med("ndm-uring-gso-async", "goodput_gbps")
u64, e64 = med("ndm-uring-64k", "goodput_gbps"), med("ndm-epoll-64k", "goodput_gbps")
print(f"Ratios: io_uring/epoll (GSO on) = {u / e:.2f} (target ≥ 1.3); "
      f"io_uring+GSO / iperf3 UDP send rate = {u / udp:.2f} (target ≥ 1.5); "
      f"io_uring+GSO ≥ 3 Gbit/s: {'yes' if u >= 3 else 'no'}; "
      f"io_uring/epoll without GSO/GRO = {un / en:.2f}; "
      f"epoll/io_uring CPU s per GB (GSO on) = {ec / uc:.2f}; "
      f"io_uring async sends / epoll (GSO on) = {ua / e:.2f}; "
      f"64 KB datagrams: io_uring {u64:.2f} Gbit/s, io_uring/epoll = {u64 / e64:.2f}.")
EOF
