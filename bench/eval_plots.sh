#!/usr/bin/env bash
# The plots of ndm's evaluation (docs/ndm-controller.md §7, bench/ndm_eval.sh):
# bitrate and cwnd over time of ndm, bbr, bbr1, cubic and ndm-cubic (the loss-based
# ones in plots of their own where bbr's rates would flatten them), one seed,
# virtual time, written as SVG to bench/plots/ndm-*.svg by ndm-compare (its plot.svg). The
# plots without the prefix are those of bench/results/2026-12-03-ndm-cubic-evaluation.md (the
# controller now named ndm-cubic), made by this script before ndm became BBRv3-based.
#
#   bench/eval_plots.sh [BUILD_DIR]      (env: SECS=30, SEED=1)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
SECS=${SECS:-30}
SEED=${SEED:-1}
CMP="$BUILD_DIR/tools/ndm-compare"
[ -x "$CMP" ] || { echo "eval_plots: $CMP not found; build first (scripts/build.sh)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
mkdir -p bench/plots

plot() {  # NAME PROFILE PACKETS CONTROLLERS
  "$CMP" --virtual -q -t "$SECS" --seed "$SEED" --profile "$2" --packets "$3" --cc "$4" --out "$OUT/$1" > /dev/null
  cp "$OUT/$1/plot.svg" "bench/plots/ndm-$1.svg"
  echo "bench/plots/ndm-$1.svg: $2, $3 packets, $4"
}

# Under random loss the BBR family outruns the loss-based controllers tenfold: a plot of
# its own, or theirs would be flat.
plot urban-lte-1452 urban-lte realistic ndm,bbr,bbr1
plot urban-lte-1452-loss-based urban-lte realistic ndm-cubic,cubic,reno,ndm-lkm
plot urban-lte-65507 urban-lte seed ndm,bbr,bbr1,ndm-cubic
plot urban-lte-inorder-1pct-1452 "urban-lte-inorder,loss=1%" realistic ndm,bbr,bbr1,ndm-cubic
plot droptail-1bdp "delay=25ms,rate=20mbit,queue=86pkt" realistic ndm,bbr,bbr1,cubic,ndm-cubic
plot droptail-4bdp "delay=25ms,rate=20mbit,queue=344pkt" realistic ndm,bbr,bbr1,cubic,ndm-cubic
plot droptail-quarter-bdp "delay=25ms,rate=20mbit,queue=22pkt" realistic ndm,bbr,bbr1,cubic,ndm-cubic
