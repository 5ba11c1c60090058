#!/usr/bin/env bash
# The evaluation of the `ndm` controller (docs/ndm-controller.md §7) in
# deterministic virtual time (ndm-compare --virtual / --compete), every
# scenario over SEEDS seeds with common random numbers across controllers.
# Prints Markdown tables (mean ± 95 % confidence half-width, Student t) for
# bench/results/.
#
#   bench/ndm_eval.sh [BUILD_DIR]
#   env: SEEDS=10, SECS=30, FAIR_SECS=60, NDM=ndm, SECTIONS="loss delay lte harm",
#        PACKETS="realistic seed", EXTRA="" (more controllers, e.g. EXTRA=reno,ndm-lkm)
# NDM may carry options, e.g. NDM=ndm:model=data/models/other.ndmm. The
# controllers compared are $NDM, bbr, bbr1, cubic and ndm-cubic (the
# Cubic-based first design). Acceptance (docs/ndm-controller.md §7.5):
#   loss:  $NDM goodput ≥ max(bbr, bbr1) on every random-loss profile;
#   delay: $NDM p95 queueing delay ≤ bbr's with goodput ≥ 0.95× bbr's (droptail, LTE);
#   harm:  cubic beside $NDM ≥ 0.9× cubic beside cubic; Jain ≥ 0.9 without random loss;
#          the same for bbr beside $NDM.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
SEEDS=${SEEDS:-10}
SECS=${SECS:-30}
FAIR_SECS=${FAIR_SECS:-60}
NDM=${NDM:-ndm}
SECTIONS=${SECTIONS:-loss delay lte harm}
PACKETS=${PACKETS:-realistic seed}
CCS="$NDM,bbr,bbr1,cubic,ndm-cubic${EXTRA:+,$EXTRA}"
IFS=, read -r -a CC_LIST <<<"$CCS"
CMP="$BUILD_DIR/tools/ndm-compare"
[ -x "$CMP" ] || { echo "ndm_eval: $CMP not found; build first (scripts/build.sh)" >&2; exit 1; }
if ! command -v jq >/dev/null; then
  echo "ndm_eval: installing jq (Debian package)" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq jq >/dev/null
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
has() { [[ " $SECTIONS " == *" $1 "* ]]; }

# mean ± ci of a summary metric for one controller: stat FILE CC METRIC SCALE
stat() {
  jq -r --arg cc "$2" --arg m "$3" --argjson k "$4" '
    .controllers[] | select(.name == $cc) | .summary[$m]
    | "\(.mean * $k | . * 100 | round / 100) ± \(.ci95 * $k | . * 100 | round / 100)"' "$1"
}
mean() { jq -r --arg cc "$2" --arg m "$3" '.controllers[] | select(.name == $cc) | .summary[$m].mean' "$1"; }
lower() { jq -r --arg cc "$2" --arg m "$3" '.controllers[] | select(.name == $cc) | .summary[$m] | .mean - .ci95' "$1"; }
# Student t(0.975, SEEDS - 1), for the per-flow confidence half-widths of --compete.
tq() {
  local t=(0 12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086)
  local df=$((SEEDS - 1))
  if [ "$df" -ge 1 ] && [ "$df" -le 20 ]; then echo "${t[$df]}"; else echo 1.96; fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
maxof() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }
virtual() {  # FILE PROFILE PACKETS
  nice -n 10 "$CMP" --virtual -q -J --repeat "$SEEDS" -t "$SECS" --profile "$2" --packets "$3" \
    --cc "$CCS" --out "$OUT/o" >"$1" || true
}
header() {  # FIRST_COLUMNS... (then one per controller, then $TAIL_COLUMNS)
  local h="|" s="|" tail=()
  [ -n "${TAIL_COLUMNS:-}" ] && IFS=, read -r -a tail <<<"$TAIL_COLUMNS"
  for c in "$@" "${CC_LIST[@]}" "${tail[@]}"; do h+=" $c |"; s+="---|"; done
  echo "$h"; echo "$s"
}

echo "Commands: \`$CMP --virtual --repeat $SEEDS -t $SECS --profile P --packets K --cc $CCS\`"
echo "(seeds 1..$SEEDS, common random numbers; goodput = bytes delivered to the receiver ÷ time; mean ± 95 % CI)"

if has loss; then
  echo
  echo "### Random loss: goodput Mbit/s"
  echo
  echo "(last columns: $NDM / max(bbr, bbr1) of the means, and the lower end of $NDM's CI / that max)"
  echo
  TAIL_COLUMNS="$NDM / best,CI low / best" header profile packets
  for prof in urban-lte "urban-lte,loss=2%" "urban-lte,loss=1%" "urban-lte,loss=0.5%" "urban-lte-inorder,loss=1%"; do
    for pk in $PACKETS; do
      f="$OUT/rl.json"; virtual "$f" "$prof" "$pk"
      row="| $prof | $pk |"
      for cc in "${CC_LIST[@]}"; do row+=" $(stat "$f" "$cc" goodput_bps 1e-6) |"; done
      best=$(maxof "$(mean "$f" bbr goodput_bps)" "$(mean "$f" bbr1 goodput_bps)")
      row+=" $(ratio "$(mean "$f" "$NDM" goodput_bps)" "$best") | $(ratio "$(lower "$f" "$NDM" goodput_bps)" "$best") |"
      echo "$row"
    done
  done
fi

if has delay; then
  echo
  echo "### Queueing delay: 20 Mbit/s, 50 ms RTT, droptail (1 BDP = 86 packets of 1452 B), no random loss"
  echo
  header buffer metric
  for q in 22 86 344; do
    f="$OUT/cg.json"; virtual "$f" "delay=25ms,rate=20mbit,queue=${q}pkt" realistic
    for m in "goodput Mbit/s|goodput_bps|1e-6" "p95 queueing delay ms|queue_delay_p95_ms|1" "path loss %|path_loss_percent|1"; do
      IFS='|' read -r label key k <<<"$m"
      row="| $q pkt | $label |"
      for cc in "${CC_LIST[@]}"; do row+=" $(stat "$f" "$cc" "$key" "$k") |"; done
      echo "$row"
    done
  done
fi

if has lte; then
  echo
  echo "### LTE traces (Mahimahi, droptail)"
  echo
  header trace metric
  for prof in lte-verizon lte-tmobile lte-att-driving; do
    f="$OUT/lte.json"; virtual "$f" "$prof" realistic
    for m in "goodput Mbit/s|goodput_bps|1e-6" "p95 queueing delay ms|queue_delay_p95_ms|1" "path loss %|path_loss_percent|1"; do
      IFS='|' read -r label key k <<<"$m"
      row="| $prof | $label |"
      for cc in "${CC_LIST[@]}"; do row+=" $(stat "$f" "$cc" "$key" "$k") |"; done
      echo "$row"
    done
  done
fi

if has harm; then
  echo
  echo "### Harm on a shared bottleneck (20 Mbit/s, 50 ms RTT, droptail, ${FAIR_SECS} s, flows start together)"
  echo
  echo "Harm (Ware et al., HotNets 2019): the incumbent's goodput beside the newcomer ÷ beside its own kind."
  echo
  echo "| buffer | random loss | flows | goodput of each flow, last half, Mbit/s | Jain's index, last half (min) | bottleneck p95 queueing delay ms |"
  echo "|---|---|---|---|---:|---:|"
  for q in 86 344; do
    for loss in 0 1; do
      prof="delay=25ms,rate=20mbit,queue=${q}pkt"
      [ "$loss" = 1 ] && prof="$prof,loss=1%"
      for ccs in "cubic,cubic" "$NDM,cubic" "bbr,cubic" "bbr,bbr" "$NDM,bbr"; do
        f="$OUT/fair.json"
        nice -n 10 "$CMP" --compete -q -J --repeat "$SEEDS" -t "$FAIR_SECS" \
          --profile "$prof" --packets realistic --cc "$ccs" --out "$OUT/o" >"$f" || true
        jain=$(jq -r '[.runs[].jain_last_half] | "\(add / length * 1000 | round / 1000) (\(min * 1000 | round / 1000))"' "$f")
        each=$(jq -r --argjson t "$(tq)" '[range(0; .runs[0].flows | length) as $i
                       | [.runs[].flows[$i].last_half_bps] | (add / length) as $m
                       | (map(. - $m | . * .) | add / ((length - 1) | if . < 1 then 1 else . end) | sqrt) as $sd
                       | "\($m / 1e6 * 100 | round / 100) ± \($t * $sd / (length | sqrt) / 1e6 * 100 | round / 100)"]
                      | join(" / ")' "$f")
        qd=$(jq -r '[.runs[].bottleneck.queue_delay_p95_ms] | add / length * 10 | round / 10' "$f")
        echo "| $q pkt | ${loss} % | $ccs | $each | $jain | $qd |"
      done
    done
  done
fi
