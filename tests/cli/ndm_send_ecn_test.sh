#!/usr/bin/env bash
# ECN on real sockets: ndm-send --emu with a RED queue that marks CE (ecn=red)
# on its egress path, against ndm-recv on loopback. The marks travel in the
# TOS byte through the kernel to the receiver, come back in its ACK_ECN
# counts and slow the sender down: the queue never drops and nothing is
# retransmitted. With --no-ecn the same queue drops instead (RFC 3168 §5),
# and the sender retransmits. Byte-exact both ways.
set -euo pipefail
send="$1"
recv="$2"
check="$3"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

profile="rate=20mbit,delay=10ms,queue=200pkt,ecn=red,red-min=20,red-max=60,red-p=20%"
for mode in ecn no-ecn; do
  flags=()
  [ "$mode" = no-ecn ] && flags=(--no-ecn)
  start_server
  timeout 40 "$send" --insecure -c 127.0.0.1 -p "$port" -t 4 -C cubic "${flags[@]}" --emu "$profile" -J \
    > "$out/$mode.json" 2> "$out/${mode}_err.txt" || fail "ndm-send ($mode): exit $?"
  finish_server
  [ "$(get "$mode.json" end.byte_exact)" = true ] || fail "$mode: not byte-exact"
  retr=$(get "$mode.json" end.sum_sent.retransmits)
  aqm=$(get "$mode.json" end.emulator.up.drops.aqm)
  echo "$mode: $retr retransmissions, $aqm RED drops"
  if [ "$mode" = ecn ]; then
    [ "$aqm" = 0 ] || fail "ECN: the RED queue dropped $aqm datagrams instead of marking them"
    [ "$retr" = 0 ] || fail "ECN: $retr retransmissions"
  else
    [ "$aqm" -gt 0 ] || fail "--no-ecn: the RED queue never dropped (were the datagrams ECT?)"
  fi
done
echo "ok"
