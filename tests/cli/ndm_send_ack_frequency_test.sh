#!/usr/bin/env bash
# --ack-frequency end to end (draft-ietf-quic-ack-frequency-14): forward and
# reverse (-R, where ndm-recv is the data sender) the data sender's qlog shows
# ACK_FREQUENCY frames and the transfer is byte-exact over a lossy path;
# against ndm-recv --no-ack-frequency, or without the flag, no side sends one.
set -euo pipefail
send="$1"
recv="$2"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

# run NAME SERVER_FLAGS SEND_FLAGS...: a 2 MB test with --qlog on both sides.
run() {
  local name=$1 server_flags=$2
  shift 2
  # shellcheck disable=SC2086
  start_server --qlog "$out/$name-srv" $server_flags
  timeout 30 "$send" --insecure -c 127.0.0.1 -p "$port" -n 2M --emu loss=1% --qlog "$out/$name-cli" "$@" \
    > "$out/$name.txt" 2> "$out/${name}_err.txt" || fail "$name: ndm-send exit $?"
  finish_server
  grep -q "receiver  (byte-exact)" "$out/$name.txt" || fail "$name: not byte-exact"
}
frames() { cat "$out/$1"/*.sqlog | grep -o "\"frame_type\":\"$2\"" | wc -l; }

run fwd "" --ack-frequency
[ "$(frames fwd-cli ack_frequency)" -ge 1 ] || fail "forward: the client sent no ACK_FREQUENCY"
[ "$(frames fwd-srv ack_frequency)" -ge 1 ] || fail "forward: the server logged no ACK_FREQUENCY received"
grep -q '"ack_eliciting_threshold":' "$out"/fwd-cli/*.sqlog || fail "forward: no threshold in the qlog"

run rev "" --ack-frequency -R
[ "$(frames rev-srv ack_frequency)" -ge 1 ] || fail "reverse: the server (data sender) asked for nothing"

run off "--no-ack-frequency" --ack-frequency
[ "$(frames off-cli ack_frequency)" -eq 0 ] || fail "the client asked a server that did not advertise min_ack_delay"
run default ""
[ "$(frames default-cli ack_frequency)" -eq 0 ] || fail "ACK_FREQUENCY without --ack-frequency"
[ "$(frames default-srv ack_frequency)" -eq 0 ] || fail "the server asked a client without --ack-frequency"
echo "ok"
