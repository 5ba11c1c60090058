#!/usr/bin/env bash
# Issue 7's evaluation of the `ndm` controller, in deterministic virtual time
# (ndm-compare --virtual / --compete), every scenario over SEEDS seeds with
# common random numbers across controllers. Prints Markdown tables (mean ±
# 95 % confidence half-width, Student t) for bench/RESULTS.md.
#
#   bench/ndm_eval.sh [BUILD_DIR]        (env: SEEDS=10, SECS=30, FAIR_SECS=60, NDM=ndm)
# NDM may carry options, e.g. NDM=ndm:model=data/models/other.ndmm
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
SEEDS=${SEEDS:-10}
SECS=${SECS:-30}
FAIR_SECS=${FAIR_SECS:-60}
NDM=${NDM:-ndm}
CMP="$BUILD_DIR/tools/ndm-compare"
[ -x "$CMP" ] || { echo "ndm_eval: $CMP not found; build first (scripts/build.sh)" >&2; exit 1; }
if ! command -v jq >/dev/null; then
  echo "ndm_eval: installing jq (Debian package)" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq jq >/dev/null
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# mean ± ci of a summary metric for one controller: stat FILE CC METRIC SCALE FMT
stat() {
  jq -r --arg cc "$2" --arg m "$3" --argjson k "$4" --arg f "$5" '
    .controllers[] | select(.name == $cc) | .summary[$m]
    | "\(.mean * $k | . * 100 | round / 100) ± \(.ci95 * $k | . * 100 | round / 100)"' "$1"
}
mean() { jq -r --arg cc "$2" --arg m "$3" '.controllers[] | select(.name == $cc) | .summary[$m].mean' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

echo "Commands: \`$CMP --virtual --repeat $SEEDS -t $SECS --profile P --packets K --cc $NDM,cubic,reno,ndm-lkm,bbr,bbr1\`"
echo "(seeds 1..$SEEDS, common random numbers; goodput = receiver bitrate)"
echo
echo "### 1. Random loss (no bottleneck queue)"
echo
echo "| profile | packets | $NDM Mbit/s | cubic Mbit/s | reno Mbit/s | ndm-lkm Mbit/s | bbr Mbit/s | bbr1 Mbit/s | $NDM / cubic | $NDM / bbr | $NDM / bbr1 |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for prof in urban-lte urban-lte-inorder "urban-lte,loss=2%" "urban-lte,loss=1%" "urban-lte,loss=0.5%" "urban-lte-inorder,loss=1%"; do
  for pk in realistic seed; do
    f="$OUT/rl.json"
    "$CMP" --virtual -q -J --repeat "$SEEDS" -t "$SECS" --profile "$prof" --packets "$pk" \
      --cc "$NDM,cubic,reno,ndm-lkm,bbr,bbr1" --out "$OUT/o" >"$f" || true
    n=$(mean "$f" "$NDM" receiver_bitrate_bps); c=$(mean "$f" cubic receiver_bitrate_bps)
    b3=$(mean "$f" bbr receiver_bitrate_bps); b=$(mean "$f" bbr1 receiver_bitrate_bps)
    echo "| $prof | $pk | $(stat "$f" "$NDM" receiver_bitrate_bps 1e-6 x) | $(stat "$f" cubic receiver_bitrate_bps 1e-6 x) | $(stat "$f" reno receiver_bitrate_bps 1e-6 x) | $(stat "$f" ndm-lkm receiver_bitrate_bps 1e-6 x) | $(stat "$f" bbr receiver_bitrate_bps 1e-6 x) | $(stat "$f" bbr1 receiver_bitrate_bps 1e-6 x) | $(ratio "$n" "$c") | $(ratio "$n" "$b3") | $(ratio "$n" "$b") |"
  done
done
echo
echo "### 2. Pure congestion: 20 Mbit/s, 50 ms RTT, droptail of 1 BDP (86 packets), no random loss"
echo
echo "| buffer | controller | goodput Mbit/s | p95 queueing delay ms | path loss % |"
echo "|---|---|---:|---:|---:|"
# The jittered variant (2 ms, order-preserving) gives the seeds something to vary.
for q in 86 22 344 86j; do
  f="$OUT/cg.json"
  prof="delay=25ms,rate=20mbit,queue=${q%j}pkt"
  [ "$q" = 86j ] && prof="$prof,jitter=2ms,order=inorder"
  "$CMP" --virtual -q -J --repeat "$SEEDS" -t "$SECS" --profile "$prof" \
    --packets realistic --cc "$NDM,cubic,reno,bbr,bbr1" --out "$OUT/o" >"$f" || true
  for cc in "$NDM" cubic reno bbr bbr1; do
    label="${q%j} pkt"; [ "$q" = 86j ] && label="86 pkt + 2 ms in-order jitter"
    echo "| $label | $cc | $(stat "$f" "$cc" receiver_bitrate_bps 1e-6 x) | $(stat "$f" "$cc" queue_delay_p95_ms 1 x) | $(stat "$f" "$cc" path_loss_percent 1 x) |"
  done
done
echo
echo "### 3. Fairness on a shared bottleneck (20 Mbit/s, 1 BDP droptail, ${FAIR_SECS} s)"
echo
echo "| flows | Jain's index, last half | goodput of each flow, last half, Mbit/s | bottleneck p95 queueing delay ms |"
echo "|---|---:|---|---:|"
for pair in "$NDM,cubic|0|" "$NDM,$NDM|10|" "cubic,cubic|0|" "$NDM,cubic|0|j" "$NDM,$NDM|10|j" "bbr,cubic|0|" "bbr,bbr|10|" "bbr1,cubic|0|" "bbr1,bbr1|10|"; do
  IFS='|' read -r ccs stag jit <<<"$pair"
  prof="delay=25ms,rate=20mbit,queue=86pkt"
  [ "$jit" = j ] && prof="$prof,jitter=2ms,order=inorder"
  f="$OUT/fair.json"
  "$CMP" --compete -q -J --repeat "$SEEDS" -t "$FAIR_SECS" --stagger "$stag" \
    --profile "$prof" --packets realistic --cc "$ccs" --out "$OUT/o" >"$f" || true
  jain=$(jq -r '[.runs[].jain_last_half] | "\(add / length * 1000 | round / 1000) (min \(min * 1000 | round / 1000))"' "$f")
  each=$(jq -r '[.runs[0].flows | length] as $n | [range(0; .runs[0].flows | length) as $i
                 | ([.runs[].flows[$i].last_half_bps] | add / length / 1e6 * 100 | round / 100)] | map(tostring) | join(" / ")' "$f")
  qd=$(jq -r '[.runs[].bottleneck.queue_delay_p95_ms] | add / length * 10 | round / 10' "$f")
  echo "| $ccs (stagger ${stag} s${jit:+, 2 ms jitter}) | $jain | $each | $qd |"
done
echo
echo "### 4. LTE traces (Mahimahi, droptail)"
echo
echo "| trace | controller | goodput Mbit/s | p95 queueing delay ms | path loss % |"
echo "|---|---|---:|---:|---:|"
for prof in lte-verizon lte-tmobile lte-att-driving; do
  f="$OUT/lte.json"
  "$CMP" --virtual -q -J --repeat "$SEEDS" -t "$SECS" --profile "$prof" --packets realistic \
    --cc "$NDM,cubic,reno,ndm-lkm,bbr,bbr1" --out "$OUT/o" >"$f" || true
  for cc in "$NDM" cubic reno ndm-lkm bbr bbr1; do
    echo "| $prof | $cc | $(stat "$f" "$cc" receiver_bitrate_bps 1e-6 x) | $(stat "$f" "$cc" queue_delay_p95_ms 1 x) | $(stat "$f" "$cc" path_loss_percent 1 x) |"
  done
done
