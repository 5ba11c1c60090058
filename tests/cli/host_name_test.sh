#!/usr/bin/env bash
# Host names wherever a tool takes a server address (ndm-send -c,
# ndm-handshake connect, ndm-emu relay --to), resolved by the system's
# resolver (getaddrinfo: /etc/hosts here), and IPv6 literals with and without
# brackets. Names that do not resolve and malformed ones are bad_input_test.sh's.
# usage: host_name_test.sh DIR   (DIR holds ndm-send ndm-recv ndm-handshake ndm-emu)
set -u
bin=$1
recv="$bin/ndm-recv"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"
# shellcheck source=skip_lib.sh
source "$(dirname "$0")/skip_lib.sh"

# A name other than "localhost" (which ndm reads as 127.0.0.1 without a
# lookup) that the resolver maps to 127.0.0.1: the host's own name, or
# another of /etc/hosts' loopback names.
name=""
for n in "$(hostname 2>/dev/null)" $(awk '$1 == "127.0.0.1" || $1 == "127.0.1.1" { for (i = 2; i <= NF; i++) print $i }' /etc/hosts 2>/dev/null); do
  [ -n "$n" ] && [ "$n" != localhost ] || continue
  if getent ahostsv4 "$n" 2>/dev/null | awk '{ print $1 }' | grep -qx '127.0.0.1'; then name=$n; break; fi
done
[ -n "$name" ] || skip "no name other than localhost resolves to 127.0.0.1 here (/etc/hosts)"

# ndm-send -c NAME (-4: the v4 answer, as ndm-recv listens on 127.0.0.1).
start_server
timeout 30 "$bin/ndm-send" --insecure -c "$name" -4 -p "$port" -t 0.5 > "$out/send_name.txt" 2>&1 || fail "ndm-send -c $name"
grep -q "Connecting to host $name, port $port" "$out/send_name.txt" || fail "ndm-send does not name the host it was given"
finish_server
start_server
timeout 30 "$bin/ndm-send" --insecure -c localhost -p "$port" -t 0.5 > "$out/send_localhost.txt" 2>&1 || fail "ndm-send -c localhost"
finish_server

# ndm-handshake connect NAME PORT.
hport=$(free_port)
"$bin/ndm-handshake" listen -B 127.0.0.1 -p "$hport" -n 1 > "$out/hs_server.txt" 2>&1 &
hs_pid=$!
sleep 0.5
timeout 30 "$bin/ndm-handshake" connect "$name" "$hport" --insecure > "$out/hs_client.txt" 2>&1 || fail "ndm-handshake connect $name"
grep -q "handshake with $name:$hport complete" "$out/hs_client.txt" || fail "ndm-handshake: no handshake with $name"
wait "$hs_pid" || fail "ndm-handshake listen exit code"

# ndm-emu relay --to NAME:PORT, with a test through it.
start_server
rport=$(free_port)
"$bin/ndm-emu" relay --listen "127.0.0.1:$rport" --to "$name:$port" > "$out/relay.txt" 2>&1 &
relay_pid=$!
sleep 0.5
timeout 30 "$bin/ndm-send" --insecure -c 127.0.0.1 -p "$rport" -t 0.5 > "$out/send_relay.txt" 2>&1 || fail "ndm-send through ndm-emu relay --to $name:$port"
kill "$relay_pid"; wait "$relay_pid" 2>/dev/null
finish_server

# IPv6 literals, bare and in brackets, where the loopback has IPv6.
if ip -6 addr show lo 2>/dev/null | grep -q '::1'; then
  for host in ::1 '[::1]'; do
    port=$(free_port)
    "$recv" -1 -B ::1 -p "$port" > "$out/recv6.txt" 2>&1 &
    srv_pid=$!
    sleep 0.5
    timeout 30 "$bin/ndm-send" --insecure -c "$host" -p "$port" -t 0.5 > "$out/send6.txt" 2>&1 || fail "ndm-send -c $host"
    finish_server
  done
  echo "IPv6 literals: ::1 and [::1]"
else
  echo "no IPv6 on the loopback: literals not tried"
fi
echo "host names: ndm-send -c $name, -c localhost, ndm-handshake connect $name, ndm-emu relay --to $name"
