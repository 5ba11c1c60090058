#!/usr/bin/env bash
# Bad input across every tool: out-of-range, negative, NaN/inf and junk sizes,
# counts, rates and durations; files that are devices, directories, FIFOs or
# huge (models, traces, profiles, datasets, TLS credentials); bad addresses.
# Each must exit 2 within seconds with exactly one stderr line naming the
# problem. Then runtime failures (a busy port, a refused connection, an
# unwritable output) must exit 1.
# usage: bad_input_test.sh DIR   (DIR holds ndm-send ndm-recv ndm-compare ndm-sim ndm-emu ndm-train ndm-handshake)
set -u
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkfifo "$d/fifo.json" "$d/fifo.ndmm"
mkdir "$d/dir.json" "$d/dir.ndmm"
truncate -s 3G "$d/huge.ndmm"
truncate -s 3G "$d/huge.trace"
truncate -s 3G "$d/huge.json"
truncate -s 5G "$d/huge.data"
truncate -s 3G "$d/huge.pem"
printf 'x' > "$d/ok.pem"

S="ndm-send -c 127.0.0.1"
# tool and arguments | text the one stderr line must contain
rows=(
  "$S -n 99999999999G|--bytes"
  "$S --connect-timeout 0|--connect-timeout"
  "$S --ack-ranges 0|--ack-ranges"
  "$S --quic-version 3|--quic-version"
  "ndm-recv --ack-ranges 33|--ack-ranges"
  "ndm-recv --receive-budget 1X|--receive-budget"
  "$S --receive-budget -1M|--receive-budget"
  "$S --connect-timeout 600001|--connect-timeout"
  "$S --connect-timeout 1.5|--connect-timeout"
  "$S -n 2000T|--bytes"
  "$S -n 0|--bytes"
  "$S -n -1M|--bytes"
  "$S -n nanM|--bytes"
  "$S -n 5Mx|--bytes"
  "$S -t nan|--time"
  "$S -t inf|--time"
  "$S -t 1e999|--time"
  "$S -t -1|--time"
  "$S -i nan|--interval"
  "$S -P -1|--parallel"
  "$S -P 0|--parallel"
  "$S -p 70000|--port"
  "$S -p -1|--port"
  "$S -l 99999999999999999999|--length"
  "$S --seed -1|--seed"
  "$S --seed 99999999999999999999999|--seed"
  "ndm-send -c a..b|--client: 'a..b' is neither a host name nor a numeric IPv4/IPv6 address"
  "ndm-send -c 1.2.3.999|--client"
  "ndm-send -c bad_host!|--client"
  "$S -t 5s|ndm-send: -t/--time 5s: expected seconds, a number from 0.1 to 86400"
  "$S -p 0|-p/--port 0: expected a UDP port, a whole number from 1 to 65535"
  "$S --cport 65536|--cport 65536: expected a UDP port"
  "$S -P 1.5|-P/--parallel 1.5: expected a whole number from 1 to 128"
  "$S -l 100|-l/--length 100: expected bytes, a whole number from 1200 to 65507"
  "$S --cipher rot13|--cipher rot13: expected one of: aes128-gcm,"
  "$S -i 0|-i/--interval 0: expected seconds, a number from 0.1 to 60"
  "$S -w 1K|-w/--window 1K: expected a size in bytes"
  "$S --bogus|unexpected argument: --bogus"
  "$S -t|--time: the value is missing"
  "ndm-recv -p 70000|-p/--port 70000: expected a UDP port, a whole number from 0 (any free port) to 65535"
  "ndm-recv --idle-timeout 0.5|--idle-timeout 0.5: expected seconds, a number from 1 to 86400"
  "ndm-compare --virtual -t 10x|-t/--time 10x: expected seconds, a number from 0.5 to 3600"
  "ndm-compare --virtual --repeat 1.5|--repeat 1.5: expected a whole number from 1 to 1000"
  "ndm-compare --virtual --out /dev/null|--out /dev/null: exists and is not a directory"
  "ndm-compare --virtual --out /proc/ndm-no-such/dir|--out /proc/ndm-no-such/dir: cannot create the directory"
  "ndm-sim --seed 1x|--seed 1x: expected a whole number"
  "ndm-sim -n 1Q|-n/--bytes 1Q: expected a size in bytes"
  "ndm-sim --rate 0|--rate 0: expected Mbit/s, a number above 0 and at most 1000000"
  "ndm-sim --loss 101|--loss 101: expected percent, a number from 0 to 100"
  "ndm-sim --queue 0|--queue 0: expected packets, a whole number from 1 to 1000000000"
  "ndm-emu relay --listen 127.0.0.1:0 --to 127.0.0.1:70000|--to 127.0.0.1:70000: port '70000': expected a UDP port, a whole number from 1 to 65535"
  "ndm-emu relay --listen 127.0.0.1:0 --to 127.0.0.1:0|--to 127.0.0.1:0: port '0'"
  "ndm-emu relay --listen 127.0.0.1:65536 --to 127.0.0.1:9|--listen 127.0.0.1:65536: port '65536'"
  "ndm-emu relay --listen 127.0.0.1:0 --to a..b:9|--to a..b:9: 'a..b' is neither a host name"
  "ndm-emu relay --listen 127.0.0.1:0 --to 127.0.0.1:9 --stats-interval 1d|--stats-interval 1d: expected seconds, a number from 0 to 86400"
  "ndm-emu|a subcommand is required: relay, shell, presets, describe"
  "ndm-train train --model lstm|--model lstm: expected one of: logistic, gru"
  "ndm-train generate -n 0 --list|-n/--scenarios 0: expected a whole number from 1 to 100000"
  "ndm-handshake connect 127.0.0.1 0|port 0: expected a UDP port, a whole number from 1 to 65535"
  "ndm-handshake --timeout 0 connect 127.0.0.1 4433|--timeout 0: expected seconds, a number from 0.1 to 3600"
  "ndm-handshake listen -p 65536|-p/--port 65536: expected a UDP port"
  "$S --emu delay=nanms|delay"
  "$S --emu rate=1e300gbit|rate"
  "$S --emu loss=inf%|loss"
  "$S --emu trace=/dev/zero|/dev/zero"
  "$S --emu trace=$d/huge.trace|bytes, more than"
  "$S --profile $d/fifo.json|FIFO"
  "$S --profile $d/dir.json|directory"
  "$S --profile $d/huge.json|bytes, more than"
  "$S -C ndm:model=/dev/zero|/dev/zero"
  "$S -C ndm:model=/dev/urandom|/dev/urandom"
  "$S -C ndm:model=$d/dir.ndmm|directory"
  "$S -C ndm:model=$d/fifo.ndmm|FIFO"
  "$S -C ndm:model=$d/huge.ndmm|bytes, more than"
  "$S --ca /dev/zero|/dev/zero"
  "$S --ca $d/huge.pem|bytes, more than"
  "ndm-recv -p 99999|--port"
  "ndm-recv -p nan|--port"
  "ndm-recv -B not-an-address|--bind"
  "ndm-recv --cert /dev/zero --key $d/ok.pem|/dev/zero"
  "ndm-recv --cert $d/ok.pem --key $d/dir.ndmm|directory"
  "ndm-recv --idle-timeout inf|--idle-timeout"
  "ndm-recv --qlog /proc/ndm-no-such-dir|qlog"
  "ndm-compare --virtual -t nan|--time"
  "ndm-compare --virtual -t 1e999|--time"
  "ndm-compare --virtual --repeat 0|--repeat"
  "ndm-compare --virtual --repeat -1|--repeat"
  "ndm-compare --virtual --stagger inf|--stagger"
  "ndm-compare --virtual --loss-detection dupack|--loss-detection"
  "ndm-recv --loss-detection RACK|--loss-detection"
  "ndm-compare --virtual --seed -1|--seed"
  "ndm-compare --virtual -i nan|--interval"
  "ndm-compare --virtual --cc ndm:model=/dev/zero|/dev/zero"
  "ndm-compare --virtual --profile $d/fifo.json|FIFO"
  "ndm-sim -n 99999999999G|--bytes"
  "ndm-sim -n 0|--bytes"
  "ndm-sim -n 1e30|--bytes"
  "ndm-sim --delay nan|--delay"
  "ndm-sim --rate inf|--rate"
  "ndm-sim --loss -1|--loss"
  "ndm-sim --queue -1|--queue"
  "ndm-sim --deadline 1e999|--deadline"
  "ndm-sim -t nan|--time"
  "ndm-sim --seed -5|--seed"
  "ndm-sim --cc ndm --cc-options model=/dev/zero|/dev/zero"
  "ndm-sim --cc ndm --cc-options model=$d/huge.ndmm|bytes, more than"
  "ndm-emu relay --listen 127.0.0.1:0 --to 127.0.0.1:9 --stats-interval nan|--stats-interval"
  "ndm-emu relay --listen 127.0.0.1:0 --to 127.0.0.1:9 --seed -1|--seed"
  "ndm-emu relay --listen no..host:1 --to 127.0.0.1:9|no..host"
  "ndm-emu describe delay=1e400ms|delay"
  "ndm-emu describe rate=-5mbit|rate"
  "ndm-emu describe trace=/dev/urandom|/dev/urandom"
  "ndm-emu describe $d/dir.json|directory"
  "ndm-emu describe $d/fifo.json|FIFO"
  "ndm-emu shell --seed nan -- true|--seed"
  "ndm-train generate -n 0 --list|--scenarios"
  "ndm-train generate -n 99999999999999999999 --list|--scenarios"
  "ndm-train generate --seconds nan --list|--seconds"
  "ndm-train generate --ndm-options model=/dev/zero --list|/dev/zero"
  "ndm-train train -d /dev/zero|/dev/zero"
  "ndm-train train -d $d/dir.json|directory"
  "ndm-train train -d $d/fifo.json|FIFO"
  "ndm-train train -d $d/huge.data|bytes, more than"
  "ndm-train train --lr nan|--lr"
  "ndm-train train --batch -1|--batch"
  "ndm-train evaluate -m /dev/zero|/dev/zero"
  "ndm-train evaluate -m $d/huge.ndmm|bytes, more than"
  "ndm-train evaluate --simd avx9|--simd"
  "ndm-train export-cpp -m $d/fifo.ndmm|FIFO"
  "ndm-handshake --timeout nan connect 127.0.0.1 4433|--timeout"
  "ndm-handshake --linger inf connect 127.0.0.1 4433|--linger"
  "ndm-handshake connect 127.0.0.1 99999|port"
  "ndm-handshake connect no..such 4433|no..such"
  "ndm-handshake listen -p -1|--port"
  "ndm-handshake listen -n -1|--count"
  "ndm-handshake listen -n nan|--count"
  "ndm-handshake listen -B bogus|--bind"
  "ndm-handshake listen --cert /dev/zero --key $d/ok.pem|/dev/zero"
)
failures=0
for row in "${rows[@]}"; do
  cmd=${row%|*}
  want=${row##*|}
  read -r -a argv <<< "$cmd"
  argv[0]="$bin/${argv[0]}"
  start=$SECONDS
  err=$(timeout 20 "${argv[@]}" 2>&1 >/dev/null < /dev/null); rc=$?
  took=$((SECONDS - start))
  lines=$(printf '%s\n' "$err" | wc -l)
  # CLI11's own wording must not leak (ndm's validators and words, tools/cli/command_line.hpp).
  if printf '%s' "$err" | grep -qE 'Could not convert|not in range|Value .* not|FAILED|At Most|The following argument|\.000000'; then
    echo "FAIL: $cmd: CLI11's own message: $err"
    failures=$((failures + 1))
  fi
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$err" | grep -qF -- "$want" || [ "$took" -gt 5 ]; then
    echo "FAIL: $cmd: exit $rc (want 2), $lines stderr lines (want 1), ${took} s, want \"$want\" in: $err"
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] || fail "$failures of ${#rows[@]} bad invocations misreported"
echo "bad input: ${#rows[@]} invocations exit 2 with one line naming the problem"

# Runtime failures exit 1.
port=$((20000 + RANDOM % 20000))
"$bin/ndm-recv" -B 127.0.0.1 -p "$port" > /dev/null 2>&1 &
srv=$!
sleep 0.5
err=$(timeout 20 "$bin/ndm-recv" -B 127.0.0.1 -p "$port" 2>&1 >/dev/null); rc=$?
kill "$srv"; wait "$srv" 2>/dev/null
[ "$rc" -eq 1 ] || fail "ndm-recv on a busy port: exit $rc, want 1 ($err)"
err=$(timeout 20 "$bin/ndm-send" --insecure -c 127.0.0.1 -p "$port" -t 1 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 1 ] || fail "ndm-send to a refused port: exit $rc, want 1 ($err)"
err=$(timeout 60 "$bin/ndm-train" generate -q -n 1 --seconds 1 -o "$d/no/such/dir/x.data" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 1 ] || fail "ndm-train generate into a missing directory: exit $rc, want 1 ($err)"
# A well-formed host name that does not resolve (.invalid, RFC 6761 §6.4) is
# a runtime failure, as iperf3's and curl's: exit 1, one line naming it.
for cmd in "ndm-send -c nohost.invalid --insecure" "ndm-handshake connect nohost.invalid 4433" \
           "ndm-emu relay --listen 127.0.0.1:0 --to nohost.invalid:9"; do
  read -r -a argv <<< "$cmd"
  argv[0]="$bin/${argv[0]}"
  err=$(timeout 30 "${argv[@]}" 2>&1 >/dev/null < /dev/null); rc=$?
  [ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && printf '%s' "$err" | grep -qF "cannot resolve host name 'nohost.invalid'" ||
    fail "$cmd: exit $rc (want 1), want one line naming the host: $err"
done
# ndm-handshake's failure goes to standard error, nothing to standard output.
port2=$((20000 + RANDOM % 20000))
timeout 20 "$bin/ndm-handshake" --timeout 1 connect 127.0.0.1 "$port2" > "$d/hs.out" 2> "$d/hs.err"; rc=$?
[ "$rc" -eq 1 ] && [ ! -s "$d/hs.out" ] && [ "$(wc -l < "$d/hs.err")" -eq 1 ] && grep -q "no handshake with 127.0.0.1:$port2" "$d/hs.err" ||
  fail "ndm-handshake without a server: exit $rc (want 1), stdout '$(cat "$d/hs.out")', stderr '$(cat "$d/hs.err")'"
echo "runtime failures exit 1"
