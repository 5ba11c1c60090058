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

# skip_lacking REASON: a skip (exit 77) for what this copy of the tree or the
# machine's software lacks (no git, a source tarball without .git), which
# NDM_REQUIRE_PRIVILEGED_TESTS does not turn into a failure: it is about
# privileges, and setup.sh installs the software CI needs.
skip_lacking() {
  echo "SKIP: $*"
  exit 77
}

# `ip netns exec NS CMD` works here: it enters a new mount namespace and
# remounts / and /sys, which a chroot (where / is no mount point) and some
# containers refuse although `ip netns add` works. Probes by running `true` in
# a namespace of its own; skips (skip, above) when it cannot.
skip_unless_netns_exec() {
  local ns="ndm_probe_$$" out
  out=$(ip netns add "$ns" 2>&1) || skip "cannot create network namespaces here: $out"
  if ! out=$(ip netns exec "$ns" true 2>&1); then
    ip netns del "$ns" 2> /dev/null
    skip "ip netns exec does not work here (ip netns add does): $out"
  fi
  ip netns del "$ns"
}

# What `ndm-emu shell` needs (root, /dev/net/tun, iproute2's `ip netns`): skips
# without it; fails when a trivial shell does not run although it could.
skip_unless_emu_shell() {
  local emu=$1 out rc
  [ "$(id -u)" = 0 ] || skip "not root (network namespaces and TUN devices need CAP_NET_ADMIN)"
  [ -c /dev/net/tun ] || skip "no /dev/net/tun"
  command -v ip >/dev/null || skip "no ip (iproute2; scripts/setup.sh installs it)"
  ip netns list >/dev/null 2>&1 || skip "ip netns does not work here"
  # The shell configures its namespace with `ip -n NS ...`, which switches
  # namespaces as `ip netns exec` does.
  skip_unless_netns_exec
  # Root without the capabilities (e.g. an unprivileged container): the shell says so.
  out=$("$emu" shell --quiet -- true 2>&1); rc=$?
  if [ $rc != 0 ] && echo "$out" | grep -q "needs root"; then skip "$out"; fi
  [ $rc = 0 ] || { echo "FAIL: a trivial shell failed (exit $rc): $out"; exit 1; }
}
