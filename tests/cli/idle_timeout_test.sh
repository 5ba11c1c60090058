#!/usr/bin/env bash
# --idle-timeout on every tool that runs connections: listed in --help, and a
# bad value is one line on stderr naming the option, exit code 2.
# usage: idle_timeout_test.sh NDM_SEND NDM_RECV NDM_COMPARE NDM_SIM
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
declare -A base=([ndm-send]="-c 127.0.0.1" [ndm-recv]="" [ndm-compare]="--virtual" [ndm-sim]="")
for tool in "$@"; do
  name=$(basename "$tool")
  "$tool" --help | grep -q -- "--idle-timeout" || fail "$name --help does not list --idle-timeout"
  "$tool" --help | grep -A3 -- "--idle-timeout" | grep -q "120" || fail "$name --help does not show the default 120"
  for bad in 0 -1 0.5 86401 nan inf abc 1e400; do
    # shellcheck disable=SC2086
    err=$("$tool" ${base[$name]} --idle-timeout "$bad" 2>&1 >/dev/null); rc=$?
    [ "$rc" -eq 2 ] || fail "$name --idle-timeout $bad: exit $rc, expected 2 ($err)"
    [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$name --idle-timeout $bad: not one line: $err"
    printf '%s' "$err" | grep -q -- "--idle-timeout" || fail "$name --idle-timeout $bad: message does not name the option: $err"
  done
done
# A valid value is accepted: a short virtual run completes.
sim="$4"
"$sim" -n 1M --idle-timeout 45 >/dev/null || fail "ndm-sim --idle-timeout 45 did not complete"
echo "idle-timeout checks passed"
