#!/usr/bin/env bash
# The tools' TLS (docs/tls.md): ndm-recv's self-signed certificate and the
# fingerprint it prints; ndm-send refusing it by default with one line that
# names why (exit 1), accepting it with --pin or --insecure, refusing a wrong
# pin; a certificate made by openssl, served with --cert/--key and trusted
# with --ca, refused for another --server-name; SSLKEYLOGFILE written; bad
# TLS flags and files are one-line errors with exit 2.
set -uo pipefail
send="$1"
recv="$2"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

one_line() {  # one_line <text> <what>
  [ "$(printf '%s\n' "$1" | wc -l)" -eq 1 ] || fail "$2: not one line: $1"
}

# 1. The self-signed certificate: refused, then pinned.
start_server
fp=$(sed -n 's/.*SHA-256 fingerprint \([0-9a-f]\{64\}\).*/\1/p' "$out/recv.txt")
[ -n "$fp" ] || fail "ndm-recv printed no fingerprint"
grep -qF "ndm-send --pin $fp" "$out/recv.txt" || fail "ndm-recv does not say how to pin"
err=$(timeout 15 "$send" -c 127.0.0.1 -p "$port" -t 1 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 1 ] || fail "untrusted certificate: exit $rc"
one_line "$err" "untrusted certificate"
grep -qF "TLS alert unknown_ca: certificate not trusted (self-signed); pass --ca, --pin or --insecure" <<<"$err" ||
  fail "untrusted certificate: $err"
wrong=$(printf '%s' "$fp" | tr '0-9a-f' '1-9a-f0')
err=$(timeout 15 "$send" -c 127.0.0.1 -p "$port" -t 1 --pin "$wrong" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 1 ] || fail "wrong pin: exit $rc"
grep -qF "pinned fingerprint mismatch: got $fp" <<<"$err" || fail "wrong pin: $err"
SSLKEYLOGFILE="$out/keys.log" timeout 20 "$send" -c 127.0.0.1 -p "$port" -t 1 --pin "$fp" > "$out/send.txt" 2> "$out/send_err.txt" ||
  fail "ndm-send --pin: exit $?"
grep -q "receiver  (byte-exact)" "$out/send.txt" || fail "--pin test not byte-exact"
finish_server
for label in CLIENT_HANDSHAKE_TRAFFIC_SECRET SERVER_HANDSHAKE_TRAFFIC_SECRET CLIENT_TRAFFIC_SECRET_0 SERVER_TRAFFIC_SECRET_0; do
  grep -qE "^$label [0-9a-f]{64} [0-9a-f]{64}$" "$out/keys.log" || fail "SSLKEYLOGFILE has no $label line"
done

# 2. A certificate openssl made, served with --cert/--key, trusted with --ca.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$out/key.pem" -out "$out/cert.pem" 2> "$out/openssl.txt" ||
  fail "openssl req: $(cat "$out/openssl.txt")"
start_server --cert "$out/cert.pem" --key "$out/key.pem"
if grep -q "self-signed certificate" "$out/recv.txt"; then fail "ndm-recv made a certificate despite --cert"; fi
err=$(timeout 15 "$send" -c 127.0.0.1 -p "$port" -t 1 --ca "$out/cert.pem" --server-name example.org 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 1 ] || fail "--server-name example.org: exit $rc"
grep -qF "expected example.org" <<<"$err" || fail "--server-name example.org: $err"
timeout 20 "$send" -c 127.0.0.1 -p "$port" -t 1 --ca "$out/cert.pem" > "$out/send.txt" 2> "$out/send_err.txt" ||
  fail "ndm-send --ca: exit $?"
grep -q "receiver  (byte-exact)" "$out/send.txt" || fail "--ca test not byte-exact"
finish_server

# 3. Bad TLS input: one line, exit 2, before any packet.
bad() {  # bad <what> <expected text> <command...>
  local what=$1 want=$2
  shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc ($err)"
  one_line "$err" "$what"
  grep -qF -- "$want" <<<"$err" || fail "$what: $err"
}
bad "--cert of a missing file" "$out/none.pem" "$recv" -1 -p 9 --cert "$out/none.pem" --key "$out/key.pem"
bad "--cert without --key" "--key" "$recv" -1 -p 9 --cert "$out/cert.pem"
bad "--key that is not the certificate's" "key" "$recv" -1 -p 9 --cert "$out/cert.pem" --key "$out/cert.pem"
bad "--pin that is not a fingerprint" "--pin: expected a SHA-256 fingerprint" "$send" -c 127.0.0.1 -p 9 --pin xyz
bad "--pin with --insecure" "--insecure" "$send" -c 127.0.0.1 -p 9 --pin "$fp" --insecure
bad "--ca of a missing file" "$out/none.pem" "$send" -c 127.0.0.1 -p 9 --ca "$out/none.pem"
SSLKEYLOGFILE=/proc/ndm-no-such-dir/keys bad "an unwritable SSLKEYLOGFILE" "/proc/ndm-no-such-dir/keys" "$send" -c 127.0.0.1 -p 9 --insecure
echo "ok: tls"
