#!/usr/bin/env bash
# ndm-emu shell killed outright (SIGKILL): its command dies with it
# (PR_SET_PDEATHSIG), and the next shell to start deletes the namespace it
# left (ndm-emu-PID whose PID is gone), killing what still ran inside, while
# the namespace of a shell that is still running is left alone.
# Usage: ndm_emu_shell_kill_test.sh NDM_EMU     (skips with 77 when it cannot run, skip_lib.sh)
set -u
EMU=$1
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=skip_lib.sh
source "$(dirname "$0")/skip_lib.sh"
skip_unless_emu_shell "$EMU"  # also probes ip netns exec, which the stray process below needs

# Running and not a zombie (a container's init may not reap at once).
alive() { [ -r "/proc/$1/stat" ] && ! awk '{ exit !($3 == "Z") }' "/proc/$1/stat"; }
has_ns() { ip netns list | grep -qw "ndm-emu-$1"; }
pids=()
cleanup() {  # on any way out: nothing of ours left running or listed
  local p
  for p in "${pids[@]}"; do
    kill -9 "$p" 2>/dev/null
    ip netns list | grep -qw "ndm-emu-$p" && ip netns del "ndm-emu-$p"
  done
  true
}
trap cleanup EXIT

# A shell that stays: its namespace must survive the cleanup below.
"$EMU" shell --quiet -- sleep 60 &
live=$!
pids+=("$live")
# The shell to kill, running sleep 60.
"$EMU" shell --quiet -- sleep 60 &
victim=$!
pids+=("$victim")
child=""
for _ in $(seq 100); do
  child=$(pgrep -P "$victim" sleep)
  [ -n "$child" ] && has_ns "$victim" && has_ns "$live" && break
  sleep 0.05
done
[ -n "$child" ] || fail "the shell's command never started"
has_ns "$victim" || fail "namespace ndm-emu-$victim never appeared"
pids+=("$child")
# Something else running in the victim's namespace that PDEATHSIG does not
# reach (a grandchild of the shell would be such a process).
ip netns exec "ndm-emu-$victim" sleep 60 &
stray=$!
disown "$stray"  # no job notice when the cleanup kills it
pids+=("$stray")
sleep 0.2
alive "$stray" || fail "the stray process did not start"

kill -9 "$victim"
wait "$victim" 2>/dev/null
for _ in $(seq 40); do alive "$child" || break; sleep 0.05; done
alive "$child" && fail "the command (pid $child) outlived its SIGKILLed ndm-emu"
has_ns "$victim" || fail "namespace ndm-emu-$victim vanished by itself (nothing to clean up: test broken)"

# The next start cleans up what the dead shell owned, and only that.
out=$("$EMU" shell --quiet -- true 2>&1); rc=$?
[ $rc = 0 ] || fail "the next shell failed (exit $rc): $out"
echo "$out" | grep -q "removed stale namespace ndm-emu-$victim" || fail "no note of the cleanup: $out"
has_ns "$victim" && fail "stale namespace ndm-emu-$victim still listed after the next start"
for _ in $(seq 40); do alive "$stray" || break; sleep 0.05; done
alive "$stray" && fail "a process left in the stale namespace (pid $stray) still runs"
has_ns "$live" || fail "the running shell's namespace ndm-emu-$live was removed"
alive "$live" || fail "the running shell died"

kill -TERM "$live"
wait "$live"; rc=$?
[ $rc = 143 ] || fail "SIGTERM to the running shell: exit $rc, expected 143"
has_ns "$live" && fail "namespace ndm-emu-$live left after SIGTERM"
echo "ok"
