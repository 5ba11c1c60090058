#!/usr/bin/env bash
# A/B of two ndm_loopback_bench binaries (e.g. before/after a change to the
# protocol core), interleaved so that background load hits both alike:
# ROUNDS x {io_uring, epoll} x {A, B}, 1 GiB each, GSO/GRO on; prints the
# medians and the B/A ratios of goodput and CPU seconds per GB.
#
#   bench/loopback_ab.sh A_BINARY B_BINARY        (env: ROUNDS (>= 3), BYTES)
set -euo pipefail
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: bench/loopback_ab.sh A_BINARY B_BINARY (two executable ndm_loopback_bench builds)" >&2
  exit 2
fi
A=$1; B=$2
ROUNDS=${ROUNDS:-5}
BYTES=${BYTES:-1073741824}
if [ "$ROUNDS" -lt 3 ]; then echo "loopback_ab: ROUNDS must be at least 3" >&2; exit 2; fi

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for io in uring epoll; do
    for v in A B; do
      bin=$A; [ "$v" = B ] && bin=$B
      line=$("$bin" --io "$io" --gso on --bytes "$BYTES" 2>/dev/null || echo '{}')
      echo "$v $io $line" >>"$raw"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$raw" <<'EOF'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    v, io, js = line.split(" ", 2)
    runs.setdefault((v, io), []).append(json.loads(js))
med = {}
for (v, io), ds in sorted(runs.items()):
    g = [d.get("goodput_gbps", 0.0) for d in ds]
    c = [d.get("cpu_s_per_gb", 0.0) for d in ds]
    med[(v, io)] = (statistics.median(g), statistics.median(c))
    ok = all(d.get("complete") for d in ds)
    print(f"{v} {io:5}: goodput {med[(v, io)][0]:.2f} Gbit/s, CPU {med[(v, io)][1]:.3f} s/GB"
          f"  (runs {', '.join(f'{x:.2f}' for x in g)} / {', '.join(f'{x:.2f}' for x in c)}){'' if ok else '  INCOMPLETE'}")
for io in ("uring", "epoll"):
    a, b = med[("A", io)], med[("B", io)]
    print(f"{io}: B/A goodput {b[0] / a[0]:.2f}x, CPU per GB {b[1] / a[1]:.2f}x")
for v in ("A", "B"):
    print(f"{v}: io_uring/epoll goodput {med[(v, 'uring')][0] / med[(v, 'epoll')][0]:.2f}")
EOF
