# Sourced by the CLI tests that cannot run everywhere (root, network namespaces,
# TUN, iproute2). skip REASON ends the test with exit code 77, which CTest reports
# as skipped (SKIP_RETURN_CODE 77, tests/CMakeLists.txt), never as passed. With
# NDM_REQUIRE_PRIVILEGED_TESTS=1 (.ci/run sets it when CI runs as root) a skip is
# a failure instead: on such a machine these tests must run.
skip() {
  if [ "${NDM_REQUIRE_PRIVILEGED_TESTS:-0}" = 1 ]; then
    echo "FAIL: cannot run: $* (NDM_REQUIRE_PRIVILEGED_TESTS=1 does not allow a skip)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# What `ndm-emu shell` needs (root, /dev/net/tun, iproute2's `ip netns`): skips
# without it; fails when a trivial shell does not run although it could.
skip_unless_emu_shell() {
  local emu=$1 out rc
  [ "$(id -u)" = 0 ] || skip "not root (network namespaces and TUN devices need CAP_NET_ADMIN)"
  [ -c /dev/net/tun ] || skip "no /dev/net/tun"
  command -v ip >/dev/null || skip "no ip (iproute2; scripts/setup.sh installs it)"
  ip netns list >/dev/null 2>&1 || skip "ip netns does not work here"
  # Root without the capabilities (e.g. an unprivileged container): the shell says so.
  out=$("$emu" shell --quiet -- true 2>&1); rc=$?
  if [ $rc != 0 ] && echo "$out" | grep -q "needs root"; then skip "$out"; fi
  [ $rc = 0 ] || { echo "FAIL: a trivial shell failed (exit $rc): $out"; exit 1; }
}
