#!/usr/bin/env bash
# ndm-compare --virtual -t 3 runs all controllers and writes every report file;
# the SVG is well-formed XML, the JSON parses, bad input is a one-line error.
set -euo pipefail
bin="$1"
check="$2"
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
xmllint --noout "$out/plot.svg"
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
"$bin" --help | grep -q -- "--profile" || { echo "FAIL: --help"; exit 1; }
echo "ndm-compare CLI: all checks passed"
