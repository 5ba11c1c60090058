#!/bin/sh
# One CTest case of the Python tests (python/CMakeLists.txt): pytest on one
# file of python/tests, run from that folder. Exit 77 (CTest's skip) when every
# test in the file skipped (conftest.py's --skipped-exit-code), or when the
# interpreter has no pytest (Debian's python3-pytest), unless NDM_REQUIRE_PYTEST=1
# (.ci/run: scripts/setup.sh installed it, so a skip is a failure).
py="$1"   # the interpreter the extension is built for
file="$2" # python/tests/test_*.py
if ! "$py" -c "import pytest" 2> /dev/null; then
  [ "${NDM_REQUIRE_PYTEST:-0}" = 1 ] && { echo "FAIL: $py cannot import pytest (NDM_REQUIRE_PYTEST=1)"; exit 1; }
  echo "SKIP: $py cannot import pytest (scripts/setup.sh installs python3-pytest)"
  exit 77
fi
cd "$(dirname "$file")" || exit 1
exec "$py" -m pytest -v --skipped-exit-code=77 "$(basename "$file")"
