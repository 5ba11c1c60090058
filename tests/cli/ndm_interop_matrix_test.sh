#!/usr/bin/env bash
# The QUIC Interop Runner's matrix against ngtcp2 (tools/interop/ndm_interop.py,
# docs/interop.md), its quick subset: the cases that pass today with small
# files, both directions (ndm client -> gtlsserver, gtlsclient -> ndm server),
# through ndm-emu relay's 15 ms / 10 Mbit/s / 25-packet link, captured on
# loopback and checked with tshark as the runner checks them (handshakes,
# version, Retry and its token, cipher suites offered, key phases, ECN marks
# and ACK-ECN counts, the amplification limit, IPv6 only), every file
# sha256-identical. Also: a case ndm does not support is "unsupported" (ndm-h3
# interop exits 127 naming what it lacks), never passed; the JSON and Markdown
# matrices are written. Skipped where ngtcp2's examples, Wireshark's tools,
# openssl or python3 are missing, or without root (a capture on lo).
set -uo pipefail
h3="$1"
runner="$(dirname "$0")/../../tools/interop/ndm_interop.py"
# shellcheck source=skip_lib.sh
source "$(dirname "$0")/skip_lib.sh"
for tool in python3 gtlsclient tshark dumpcap openssl; do
  command -v "$tool" > /dev/null || skip_lacking "$tool missing (scripts/setup.sh installs it)"
done
[ -x "$(command -v gtlsserver || echo /usr/sbin/gtlsserver)" ] || skip_lacking "gtlsserver missing (ngtcp2-server)"
[ "$(id -u)" -eq 0 ] || skip "capturing on loopback needs root"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() {
  echo "FAIL: $*"
  cat "$out/runner.txt"
  exit 1
}

build_dir=$(dirname "$(dirname "$h3")")
cases=retry,chacha20,keyupdate,ecn,amplificationlimit,ipv6,resumption
python3 "$runner" --build-dir "$build_dir" --quick --cases "$cases" --out "$out/runs" --json "$out/matrix.json" \
  --markdown "$out/matrix.md" > "$out/runner.txt" 2>&1; rc=$?
[ "$rc" = 77 ] && skip_lacking "$(tail -n 1 "$out/runner.txt")"
grep -q "dumpcap cannot capture" "$out/runner.txt" && skip "$(grep -m1 "dumpcap cannot capture" "$out/runner.txt")"
[ "$rc" = 0 ] || fail "the runner exited $rc"

# Every case both ways: pass, but for those ndm lacks (unsupported, never pass).
python3 - "$out/matrix.json" "$cases" <<'PY' > "$out/verdict.txt" 2>&1 || fail "$(cat "$out/verdict.txt")"
import json, sys
report = json.load(open(sys.argv[1]))
want_unsupported = {("resumption", "ndm"), ("resumption", "ngtcp2")}
seen = set()
for r in report["results"]:
    key = (r["case"], r["client"])
    seen.add(key)
    want = "unsupported" if key in want_unsupported else "pass"
    if r["result"] != want:
        sys.exit(f"{r['case']} {r['client']} -> {r['server']}: {r['result']}, not {want}: {r.get('reason', '')}")
    if want == "pass" and not r.get("checks"):
        sys.exit(f"{r['case']} {r['client']} -> {r['server']}: passed without a check")
for case in sys.argv[2].split(","):
    for client in ("ndm", "ngtcp2"):
        if (case, client) not in seen:
            sys.exit(f"{case} with {client} as the client: no result")
PY
grep -q "^| amplificationlimit | pass" "$out/matrix.md" || fail "the Markdown matrix has no amplificationlimit row"
grep -q "exit 127\|not supported\|no session resumption" "$out/matrix.md" || fail "the matrix does not say why resumption is unsupported"
echo "PASS: $(grep -c '^| ' "$out/matrix.md") matrix rows; the quick cases pass both ways against ngtcp2 $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ngtcp2"])' "$out/matrix.json")"
