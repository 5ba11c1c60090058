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
