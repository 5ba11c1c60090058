#!/usr/bin/env bash
# Handshake-level interoperability with a QUIC stack no one here wrote:
# ngtcp2's GnuTLS examples from Debian (ngtcp2-server's gtlsserver,
# ngtcp2-client's gtlsclient; scripts/setup.sh installs them). Both
# directions with ALPN h3: the TLS 1.3 handshake completes, each side parsed
# the other's transport parameters (ngtcp2 logs ndm's, ndm-handshake prints
# ngtcp2's, and the IDs and values agree with what the other side sent), the
# peer's HTTP/3 control and QPACK streams arrive, and the connection closes
# with H3_NO_ERROR, which the other side receives. Then what must fail fails
# with a line that says why: no common ALPN, a certificate for another name.
# Then Retry both ways (ngtcp2's -V, ndm's --retry always).
set -uo pipefail
hs="$1"
check="$2"
recv=/bin/false  # send_recv_lib's server helpers are not used here
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"
command -v gtlsclient > /dev/null || fail "gtlsclient missing (scripts/setup.sh installs ngtcp2-client)"
gtlsserver=$(command -v gtlsserver || echo /usr/sbin/gtlsserver)
[ -x "$gtlsserver" ] || fail "gtlsserver missing (scripts/setup.sh installs ngtcp2-server)"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$out/key.pem" -out "$out/cert.pem" 2> /dev/null ||
  fail "openssl could not make a certificate"

# gtlsclient against `ndm-handshake listen FLAGS...` on a free port: ndm's
# report in $out/NAME.json, gtlsclient's log in $out/NAME_gtlsclient.log.
gtlsclient_to_ndm() {
  local name=$1
  shift
  port=$(free_port)
  "$hs" -J --alpn h3 listen "$@" -B 127.0.0.1 -p "$port" --cert "$out/cert.pem" --key "$out/key.pem" \
    > "$out/$name.json" 2> "$out/${name}_err.txt" &
  srv_pid=$!
  for _ in $(seq 50); do grep -q "listening" "$out/${name}_err.txt" 2>/dev/null && break; sleep 0.1; done
  timeout 15 gtlsclient --timeout=10s 127.0.0.1 "$port" > "$out/${name}_gtlsclient.log" 2>&1 ||
    fail "gtlsclient against ndm-handshake listen $*: exit $?"
  wait "$srv_pid" || fail "ndm-handshake listen $*: exit $?"
  srv_pid=""
}

# 1. ndm as client, gtlsserver as server; the certificate is verified (--ca).
port=$(free_port)
timeout 20 "$gtlsserver" --timeout=10s 127.0.0.1 "$port" "$out/key.pem" "$out/cert.pem" > "$out/gtlsserver.log" 2>&1 &
srv_pid=$!
for _ in $(seq 50); do ss -Hlun "sport = :$port" 2>/dev/null | grep -q . && break; sleep 0.1; done
timeout 15 "$hs" -J --alpn h3 connect 127.0.0.1 "$port" --ca "$out/cert.pem" > "$out/client.json" 2> "$out/client_err.txt" ||
  fail "ndm-handshake connect: exit $?"
[ "$("$check" get "$out/client.json" ok)" = true ] || fail "ndm client: not ok"
[ "$("$check" get "$out/client.json" alpn)" = h3 ] || fail "ndm client: ALPN is not h3"
[ "$("$check" get "$out/client.json" version)" = 0x00000001 ] || fail "ndm client: not QUIC v1"
[ "$("$check" get "$out/client.json" close.code)" = 256 ] || fail "ndm client: close code is not H3_NO_ERROR"
# ngtcp2's parameters, as ndm decoded them, name the IDs ngtcp2's packets carried.
scid=$("$check" get "$out/client.json" peer_transport_parameters.initial_source_connection_id)
odcid=$("$check" get "$out/client.json" peer_transport_parameters.original_destination_connection_id)
grep -q "pkt tx .* scid=0x$scid " "$out/gtlsserver.log" || fail "gtlsserver sent no packet from the SCID ndm decoded ($scid)"
grep -q "pkt rx .* dcid=0x$odcid .*type=Initial" "$out/gtlsserver.log" || fail "ndm's first DCID ($odcid) not what gtlsserver received"
uni=$("$check" get "$out/client.json" peer_transport_parameters.initial_max_streams_uni)
[ "$uni" -ge 3 ] || fail "ndm decoded initial_max_streams_uni=$uni"
[ "$("$check" get "$out/client.json" peer_transport_parameters.stateless_reset_token)" = true ] ||
  fail "ndm decoded no stateless_reset_token from gtlsserver"
[ "$("$check" get "$out/client.json" peer_streams.opened)" -ge 3 ] || fail "gtlsserver's HTTP/3 streams did not arrive"
# ...and ngtcp2 decoded ndm's, and received its close.
grep -q "cry remote transport_parameters initial_max_streams_uni=100$" "$out/gtlsserver.log" ||
  fail "gtlsserver did not decode ndm's initial_max_streams_uni"
grep -q "cry remote transport_parameters max_udp_payload_size=1452$" "$out/gtlsserver.log" ||
  fail "gtlsserver did not decode ndm's max_udp_payload_size"
grep -q "frm rx .* 1RTT CONNECTION_CLOSE(0x1d) error_code=.*(0x100)" "$out/gtlsserver.log" ||
  fail "gtlsserver received no H3_NO_ERROR close"
grep -q "frm rx .* 1RTT RETIRE_CONNECTION_ID\|frm tx .* NEW_CONNECTION_ID" "$out/gtlsserver.log" ||
  fail "gtlsserver issued no NEW_CONNECTION_ID"

# 2. What must fail: no ALPN in common (the server's alert), a certificate
# that names another host (ndm's check), each one line, exit 1.
timeout 15 "$hs" --alpn ndm connect 127.0.0.1 "$port" --ca "$out/cert.pem" > "$out/alpn.txt" 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "no common ALPN: exit $rc"
grep -q "closed by the peer: CRYPTO_ERROR (server accepts none of the ALPN protocols offered (ndm))" "$out/alpn.txt" ||
  fail "no common ALPN: no reason"
timeout 15 "$hs" --alpn h3 connect 127.0.0.1 "$port" --ca "$out/cert.pem" --server-name example.org > "$out/name.txt" 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "wrong server name: exit $rc"
grep -q "TLS alert bad_certificate: certificate for localhost, 127.0.0.1, expected example.org" "$out/name.txt" ||
  fail "wrong server name: no reason"
kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; srv_pid=""

# 3. gtlsclient as client, ndm as server, ChaCha20-Poly1305 only.
gtlsclient_to_ndm server --cipher chacha20
[ "$("$check" get "$out/server.json" ok)" = true ] || fail "ndm server: not ok"
[ "$("$check" get "$out/server.json" alpn)" = h3 ] || fail "ndm server: ALPN is not h3"
[ "$("$check" get "$out/server.json" cipher_suite)" = TLS_CHACHA20_POLY1305_SHA256 ] || fail "ndm server: not ChaCha20"
scid=$("$check" get "$out/server.json" peer_transport_parameters.initial_source_connection_id)
grep -q "pkt tx .* scid=0x$scid .*type=Initial" "$out/server_gtlsclient.log" || fail "gtlsclient sent no Initial from the SCID ndm decoded ($scid)"
[ "$("$check" get "$out/server.json" peer_streams.opened)" -ge 3 ] || fail "gtlsclient's HTTP/3 streams did not arrive"
grep -q "QUIC handshake has completed" "$out/server_gtlsclient.log" || fail "gtlsclient: handshake not completed"
grep -q "QUIC handshake has been confirmed" "$out/server_gtlsclient.log" || fail "gtlsclient: no HANDSHAKE_DONE"
grep -q "cry remote transport_parameters initial_max_streams_uni=100$" "$out/server_gtlsclient.log" ||
  fail "gtlsclient did not decode ndm's transport parameters"
grep -q "cry remote transport_parameters original_destination_connection_id=" "$out/server_gtlsclient.log" ||
  fail "gtlsclient did not decode ndm's original_destination_connection_id"
grep -q "frm rx .* 1RTT CONNECTION_CLOSE(0x1d) error_code=.*(0x100)" "$out/server_gtlsclient.log" ||
  fail "gtlsclient received no H3_NO_ERROR close"
# 4. Retry (RFC 9000 §8.1.2) both ways: gtlsserver -V validates every
# client's address with a Retry, which ndm takes; ndm-handshake listen
# --retry always sends one, which gtlsclient takes. Each side's
# retry_source_connection_id is the SCID of the Retry the other sent.
port=$(free_port)
timeout 20 "$gtlsserver" -V --timeout=10s 127.0.0.1 "$port" "$out/key.pem" "$out/cert.pem" > "$out/gtlsserver_retry.log" 2>&1 &
srv_pid=$!
for _ in $(seq 50); do ss -Hlun "sport = :$port" 2>/dev/null | grep -q . && break; sleep 0.1; done
timeout 15 "$hs" -J --alpn h3 connect 127.0.0.1 "$port" --ca "$out/cert.pem" > "$out/client_retry.json" 2>&1 ||
  fail "ndm-handshake connect to gtlsserver -V: exit $?"
kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; srv_pid=""
[ "$("$check" get "$out/client_retry.json" ok)" = true ] || fail "ndm client after gtlsserver's Retry: not ok"
[ "$("$check" get "$out/client_retry.json" retry)" = true ] || fail "ndm client: the handshake went through no Retry"
grep -q "Sending Retry packet" "$out/gtlsserver_retry.log" || fail "gtlsserver -V sent no Retry"
rscid=$("$check" get "$out/client_retry.json" peer_transport_parameters.retry_source_connection_id)
grep -q "pkt rx .* dcid=0x$rscid .*type=Initial" "$out/gtlsserver_retry.log" ||
  fail "ndm's Initial after the Retry did not go to the Retry's SCID ($rscid)"

gtlsclient_to_ndm server_retry --retry always
[ "$("$check" get "$out/server_retry.json" ok)" = true ] || fail "ndm server with --retry always: not ok"
[ "$("$check" get "$out/server_retry.json" retry)" = true ] || fail "ndm server: no Retry in the handshake"
rscid=$(sed -n 's/.*pkt rx .* scid=0x\([0-9a-f]*\) .*type=Retry.*/\1/p' "$out/server_retry_gtlsclient.log" | head -1)
[ -n "$rscid" ] || fail "gtlsclient received no Retry"
grep -q "cry remote transport_parameters retry_source_connection_id=0x$rscid$" "$out/server_retry_gtlsclient.log" ||
  fail "gtlsclient did not decode ndm's retry_source_connection_id ($rscid)"
grep -q "QUIC handshake has completed" "$out/server_retry_gtlsclient.log" || fail "gtlsclient: no handshake after the Retry"

# 5. The tool's own errors: a bad command line or file exits 2 with one line; nobody listening, 1.
err=$("$hs" connect 127.0.0.1 "$port" --insecure --cipher rot13 2>&1); rc=$?
[ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && grep -q -- "--cipher rot13: expected one of" <<<"$err" ||
  fail "bad --cipher: exit $rc: $err"
err=$("$hs" connect 127.0.0.1 "$port" --ca "$out/missing.pem" 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -q "missing.pem" <<<"$err" || fail "missing --ca file: exit $rc: $err"
"$hs" --timeout 2 connect 127.0.0.1 "$port" --insecure > "$out/nobody.txt" 2>&1; rc=$?
[ "$rc" -eq 1 ] && grep -q "the peer is unreachable" "$out/nobody.txt" || fail "nobody listening: exit $rc"
echo "PASS: ndm-handshake and ngtcp2's gtlsserver/gtlsclient interoperate both ways (h3)"
