#!/usr/bin/env bash
# ndm-emu shell end to end: a UDP probe inside the shell against an echo server
# on the host side, profile "delay=30ms,loss=10%" in BOTH directions.
# Expectations: RTT median = 2 x 30 ms (+-10 ms); a probe survives with
# probability 0.9^2 = 0.81, so the round-trip loss 0.19 is checked within a
# 4-sigma binomial bound for N = 400 (+-0.078). Also: CMD's exit status is the
# shell's, a bad command is a clear error, and nothing is left behind
# (ip netns list / ip link) after a normal exit, a failing CMD, SIGTERM and SIGINT.
# Usage: ndm_emu_shell_test.sh NDM_EMU UDP_PROBE     (skips with 77 when it cannot run, skip_lib.sh)
set -u
EMU=$1
PROBE=$2
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=skip_lib.sh
source "$(dirname "$0")/skip_lib.sh"

if [ "$(id -u)" != 0 ]; then
    # What an unprivileged user gets is part of the contract: one line, exit 1.
    out=$("$EMU" shell --profile none -- true 2>&1); rc=$?
    [ $rc = 1 ] || fail "unprivileged shell: exit $rc, expected 1"
    echo "$out" | grep -q "needs root (CAP_NET_ADMIN)" || fail "unprivileged shell message: $out"
    skip "not root (network namespaces and TUN devices need CAP_NET_ADMIN)"
fi
skip_unless_emu_shell "$EMU"

leftovers() {  # namespaces/devices of shells that are no longer running
    local pid=$1
    ip netns list | grep -q "ndm-emu-$pid\b" && echo "namespace ndm-emu-$pid"
    ip -o link | grep -qE "ndm[hs]$pid[:@]" && echo "device of $pid"
    true
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The probe. The echo server binds the host-side address, which exists only
#    once the shell is up, so the shell's command starts it through the host
#    namespace's view: we run it from here after reading the address the shell
#    exports. The wrapper script inside the shell waits for the server.
cat > "$work/inside.sh" <<EOF
#!/usr/bin/env bash
echo "\$NDM_EMU_HOST_ADDR \$NDM_EMU_SHELL_ADDR \$\$" > "$work/addr"
for i in \$(seq 100); do [ -e "$work/echo-ready" ] && break; sleep 0.05; done
exec "$PROBE" probe --to "\$NDM_EMU_HOST_ADDR:7707" --count 400 --interval-ms 5 --size 64 --linger-ms 800
EOF
chmod +x "$work/inside.sh"
"$EMU" shell --profile "delay=30ms,loss=10%" --seed 7 -- "$work/inside.sh" > "$work/probe.out" 2> "$work/shell.err" &
shell_pid=$!
for i in $(seq 100); do [ -s "$work/addr" ] && break; sleep 0.05; done
[ -s "$work/addr" ] || { cat "$work/shell.err"; fail "the shell's command did not start"; }
read -r host_addr shell_addr _ < "$work/addr"
ip netns list | grep -q "ndm-emu-$shell_pid" || fail "namespace ndm-emu-$shell_pid not listed while running"
"$PROBE" echo --bind "$host_addr:7707" --idle-exit 3 &
echo_pid=$!
sleep 0.2
touch "$work/echo-ready"
wait $shell_pid; rc=$?
kill $echo_pid 2>/dev/null; wait $echo_pid 2>/dev/null
cat "$work/shell.err"
[ $rc = 0 ] || fail "shell exited $rc"
line=$(cat "$work/probe.out")
echo "probe: $line (host $host_addr, shell $shell_addr)"
val() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
sent=$(val sent); loss=$(val loss); median=$(val rtt_median_ms); rmin=$(val rtt_min_ms)
[ "$sent" = 400 ] || fail "sent $sent"
awk -v m="$median" 'BEGIN { exit !(m >= 50 && m <= 70) }' || fail "median RTT $median ms, expected 60 +- 10"
awk -v m="$rmin" 'BEGIN { exit !(m >= 60) }' || fail "min RTT $rmin ms is below the configured 2 x 30 ms"
awk -v l="$loss" 'BEGIN { p = 0.19; s = sqrt(p * (1 - p) / 400); exit !(l >= p - 4 * s && l <= p + 4 * s) }' ||
    fail "loss $loss, expected 0.19 +- 0.078"
grep -q "^uplink" "$work/shell.err" || fail "no statistics printed"
[ -z "$(leftovers $shell_pid)" ] || fail "left behind: $(leftovers $shell_pid)"

# 2. CMD's exit status is the shell's; --quiet prints nothing.
"$EMU" shell --quiet --profile none -- sh -c 'exit 42' > "$work/q.out" 2>&1; rc=$?
[ $rc = 42 ] || fail "exit status $rc, expected 42"
[ ! -s "$work/q.out" ] || fail "--quiet printed: $(cat "$work/q.out")"

# 3. A command that cannot run: a clear line, 127, nothing left behind.
out=$("$EMU" shell --quiet -- /nonexistent/cmd 2>&1); rc=$?
[ $rc = 127 ] || fail "missing command: exit $rc, expected 127"
echo "$out" | grep -q "cannot run '/nonexistent/cmd'" || fail "missing command message: $out"

# 4. SIGTERM to the shell: CMD is stopped, everything removed.
"$EMU" shell --quiet --profile delay=5ms -- sleep 30 &
term_pid=$!
for i in $(seq 100); do ip netns list | grep -q "ndm-emu-$term_pid" && break; sleep 0.05; done
ip netns list | grep -q "ndm-emu-$term_pid" || fail "namespace for SIGTERM case never appeared"
kill -TERM $term_pid
wait $term_pid; rc=$?
[ $rc = 143 ] || fail "SIGTERM: exit $rc, expected 143 (CMD killed by SIGTERM)"
[ -z "$(leftovers $term_pid)" ] || fail "after SIGTERM, left behind: $(leftovers $term_pid)"

# 5. SIGINT sent to the shell alone (not from a terminal) is passed on to CMD.
#    Job control on, so the background job does not start with SIGINT ignored.
set -m
"$EMU" shell --quiet --profile none -- sleep 30 &
int_pid=$!
set +m
for i in $(seq 100); do ip netns list | grep -q "ndm-emu-$int_pid" && break; sleep 0.05; done
sleep 0.2
kill -INT $int_pid
wait $int_pid; rc=$?
[ $rc = 130 ] || fail "SIGINT: exit $rc, expected 130 (CMD ended by SIGINT)"
[ -z "$(leftovers $int_pid)" ] || fail "after SIGINT, left behind: $(leftovers $int_pid)"

# 6. Bad command lines.
out=$("$EMU" shell --profile delay=5parsecs -- true 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "delay" || fail "bad profile: exit $rc: $out"
"$EMU" shell --profile none > /dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "no command: exit $rc, expected 2"
echo "ok"
