#!/usr/bin/env bash
# ndm-compare --virtual -t 3 runs all controllers and writes every report file;
# the SVG is well-formed XML, the JSON parses and records its provenance, the
# summary ranks on goodput, --repeat plots mean and band, bad input is a
# one-line error.
set -euo pipefail
bin="$1"
check="$2"  # ndm_json_check
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$bin" --virtual -t 3 --out "$out" -q > "$out/stdout.txt"
for f in results.json samples.csv report.md plot.svg; do
  [ -s "$out/$f" ] || { echo "FAIL: $f missing or empty"; exit 1; }
done
for cc in ndm-lkm cubic reno; do
  grep -q "$cc" "$out/stdout.txt" || { echo "FAIL: $cc missing from the tables"; exit 1; }
  grep -q "^$cc," "$out/samples.csv" || { echo "FAIL: $cc missing from samples.csv"; exit 1; }
done
grep -q "Comparison summary" "$out/stdout.txt"
grep -q "megabytes per retransmission" "$out/stdout.txt"
# Ranked and compared on goodput (bytes delivered), the sender bitrate only a row.
grep -q "^goodput (receiver) " "$out/stdout.txt" || { echo "FAIL: no goodput row in the summary"; exit 1; }
grep -q "^ranked by goodput: " "$out/stdout.txt" || { echo "FAIL: no goodput ranking"; exit 1; }
grep -Eq "^ndm-lkm: goodput [0-9.]+ [KMG]bits/sec \([0-9.]+× cubic\)" "$out/stdout.txt" \
  || { echo "FAIL: the ratio to cubic is not on goodput"; exit 1; }
xmllint --noout "$out/plot.svg"
# results.json says what produced it.
[ "$("$check" get "$out/results.json" provenance.command_line)" = "$bin --virtual -t 3 --out $out -q" ] \
  || { echo "FAIL: provenance.command_line"; exit 1; }
"$check" get "$out/results.json" provenance.git_commit | grep -Eq '^([0-9a-f]{40}(-dirty)?|unknown)$' \
  || { echo "FAIL: provenance.git_commit"; exit 1; }
[ "$("$check" get "$out/results.json" ranked_by)" = goodput_bps ] || { echo "FAIL: ranked_by"; exit 1; }
grep -q "^- produced by: ndm " "$out/report.md" || { echo "FAIL: report.md without provenance"; exit 1; }

# --repeat: the plot shows the mean and its 95 % band over all runs, each run faint, labelled.
"$bin" --virtual -t 2 --repeat 3 --cc reno,cubic -q --out "$out/r" > /dev/null
xmllint --noout "$out/r/plot.svg"
[ "$(grep -c 'class="run" data-controller="reno"' "$out/r/plot.svg")" -eq 6 ] || { echo "FAIL: runs in the plot"; exit 1; }
grep -q 'class="band" data-controller="cubic"' "$out/r/plot.svg" || { echo "FAIL: no band in the plot"; exit 1; }
grep -q 'reno (mean of 3 runs)' "$out/r/plot.svg" || { echo "FAIL: plot legend"; exit 1; }
# --compete's JSON carries the provenance too.
"$bin" --compete --cc reno,cubic -t 2 --packets realistic -q -J --out "$out/c" > /dev/null
"$check" get "$out/c/compete.json" provenance.start_time | grep -Eq 'T[0-9:.]{12}Z$' \
  || { echo "FAIL: compete.json provenance"; exit 1; }
"$bin" --virtual -t 3 --cc reno -J -q --out "$out/j" > "$out/j.json"
[ "$("$check" get "$out/j.json" controllers.0.name)" = reno ] || { echo "FAIL: -J document"; exit 1; }

# Bad input: one line on stderr, exit code 2.
set +e
err=$("$bin" --virtual --cc nope -t 3 --out "$out/x" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: unknown controller exit code $rc"; exit 1; }
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || { echo "FAIL: error is not one line: $err"; exit 1; }
echo "$err" | grep -q 'unknown congestion controller "nope"'
set +e
err=$("$bin" --virtual --profile "delay=50parsecs" --out "$out/x" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" -eq 2 ] && echo "$err" | grep -q "profile" || { echo "FAIL: bad profile: rc=$rc $err"; exit 1; }
set +e
err=$("$bin" --repeat 0 --out "$out/x" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && echo "$err" | grep -q -- "--repeat" \
  || { echo "FAIL: bad option: rc=$rc $err"; exit 1; }
grep -q -- "--profile" <<<"$("$bin" --help)" || { echo "FAIL: --help"; exit 1; }

# --loss-detection: on urban-lte's reordering the three modes declare different
# losses (so their goodput differs), and each is deterministic.
goodput() {  # MODE
  "$bin" --virtual -t 3 --cc bbr1 --packets realistic --loss-detection "$1" -q --out "$out/ld-$1" > /dev/null
  "$check" get "$out/ld-$1/results.json" controllers.0.summary.goodput_bps.mean
}
a=$(goodput adaptive); r=$(goodput rack); f=$(goodput rfc9002)
[ "$a" != "$r" ] && [ "$a" != "$f" ] && [ "$r" != "$f" ] || { echo "FAIL: loss detection modes alike: $a $r $f"; exit 1; }
[ "$(goodput rack)" = "$r" ] || { echo "FAIL: rack is not deterministic"; exit 1; }
echo "ndm-compare CLI: all checks passed"
