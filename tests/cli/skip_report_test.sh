#!/usr/bin/env bash
# Skips are reported as skips (tests/support/skip.hpp, tests/cli/skip_lib.sh):
# 1. a doctest case that cannot run (io_uring forced unavailable) exits 77 under
#    CTest's NDM_TEST_SKIP_EXIT_CODE=77 and is listed as skipped when run by hand
#    (exit 0); a case that runs fully exits 0 either way;
# 2. the namespace tests on a machine without iproute2 (ip, tc hidden from PATH)
#    exit 77, and fail (exit 1) under NDM_REQUIRE_PRIVILEGED_TESTS=1, which .ci/run
#    sets when CI runs as root.
# Usage: skip_report_test.sh NDM_TESTS_IO NDM_SEND NDM_RECV JSON_CHECK NDM_EMU UDP_PROBE
set -u
tests_bin=$1
send=$2
recv=$3
check=$4
emu=$5
probe=$6
here=$(dirname "$0")
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. doctest cases.
case_name="io_uring backend: asynchronous sends leave in submission order"
env -u NDM_REQUIRE_PRIVILEGED_TESTS NDM_IO_FORCE_PROBE_FAIL=1 NDM_TEST_SKIP_EXIT_CODE=77 \
  "$tests_bin" --test-case="$case_name" > "$work/ctest.txt" 2>&1
rc=$?
[ $rc = 77 ] || fail "a skipping case under CTest exited $rc, expected 77: $(cat "$work/ctest.txt")"
grep -q "SKIP: io_uring unavailable here (forced by NDM_IO_FORCE_PROBE_FAIL=1)" "$work/ctest.txt" \
  || fail "no SKIP line: $(cat "$work/ctest.txt")"
env -u NDM_TEST_SKIP_EXIT_CODE NDM_IO_FORCE_PROBE_FAIL=1 "$tests_bin" --test-case="$case_name" > "$work/hand.txt" 2>&1
rc=$?
[ $rc = 0 ] || fail "a skipping case run by hand exited $rc, expected 0: $(cat "$work/hand.txt")"
grep -q "^\[ndm\] 1 test case(s) skipped" "$work/hand.txt" && grep -qF "[ndm]   $case_name: io_uring unavailable" "$work/hand.txt" \
  || fail "no list of skipped cases: $(cat "$work/hand.txt")"
NDM_TEST_SKIP_EXIT_CODE=77 "$tests_bin" --test-case="retry gate: never, always, and under load from the threshold of handshakes in progress on" > "$work/ran.txt" 2>&1
rc=$?
[ $rc = 0 ] || fail "a case that ran fully exited $rc: $(cat "$work/ran.txt")"
! grep -q "skipped (not all" "$work/ran.txt" || fail "a case that ran is listed as skipped"

# 2. No iproute2: a PATH with every command of this machine's PATH but ip, tc and ss.
mkdir "$work/bin"
declare -A seen=([ip]=1 [tc]=1 [ss]=1)
links=()
IFS=: read -r -a dirs <<< "$PATH"
for d in "${dirs[@]}"; do
  for f in "$d"/*; do
    name=${f##*/}
    [ -z "${seen[$name]:-}" ] && [ -x "$f" ] && [ -f "$f" ] || continue
    seen[$name]=1
    links+=("$f")
  done
done
ln -s -t "$work/bin" -- "${links[@]}"
noip_path="$work/bin"
PATH=$noip_path command -v ip > /dev/null && fail "ip is still on the reduced PATH"
run() {  # TEST [ENV...]: runs the namespace test TEST with iproute2 hidden
  local t=$1
  shift
  case "$t" in
    tbf) env "$@" PATH="$noip_path" bash "$here/ndm_netns_tbf_test.sh" "$send" "$recv" "$check" ;;
    shell) env "$@" PATH="$noip_path" bash "$here/ndm_emu_shell_test.sh" "$emu" "$probe" ;;
  esac
}
for t in tbf shell; do
  out=$(run "$t" -u NDM_REQUIRE_PRIVILEGED_TESTS 2>&1)
  rc=$?
  [ $rc = 77 ] && echo "$out" | grep -q "^SKIP: " || fail "$t test without iproute2: exit $rc, expected 77: $out"
  echo "$t test without iproute2: exit 77, $out"
  out=$(run "$t" NDM_REQUIRE_PRIVILEGED_TESTS=1 2>&1)
  rc=$?
  [ $rc = 1 ] && echo "$out" | grep -q "^FAIL: cannot run: .*NDM_REQUIRE_PRIVILEGED_TESTS=1" \
    || fail "$t test without iproute2 under NDM_REQUIRE_PRIVILEGED_TESTS=1: exit $rc, expected 1: $out"
  echo "$t test without iproute2, NDM_REQUIRE_PRIVILEGED_TESTS=1: exit 1, $out"
done
echo "ok"
