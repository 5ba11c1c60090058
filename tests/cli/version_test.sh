#!/usr/bin/env bash
# Every tool answers --version and -v (iperf3's) with "TOOL VERSION (git
# COMMIT)" and exit 0, the same version and commit for all
# (include/ndm/version.hpp); where a tool has a verbose flag it is -V, and
# ndm-sim's old -v among other arguments still means verbose, with a warning.
set -euo pipefail
first=""
for tool in "$@"; do
  name=$(basename "$tool")
  line=$("$tool" --version) || { echo "FAIL: $name --version exited $?" >&2; exit 1; }
  [[ "$line" =~ ^$name\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [^\)]+\)$ ]] || { echo "FAIL: $name --version printed '$line'" >&2; exit 1; }
  short=$("$tool" -v) || { echo "FAIL: $name -v exited $?" >&2; exit 1; }
  [ "$short" = "$line" ] || { echo "FAIL: $name -v printed '$short', --version '$line'" >&2; exit 1; }
  # Read whole before grep -q stops reading: with pipefail a tool still
  # writing its help when grep quits dies of SIGPIPE and fails the pipeline.
  help=$("$tool" --help)
  if grep -q -- '--verbose' <<<"$help"; then
    grep -qE -- '^ +-V,--verbose' <<<"$help" || { echo "FAIL: $name's verbose flag is not -V" >&2; exit 1; }
  fi
  if [ "$name" = ndm-sim ]; then
    err=$("$tool" -v -n 64K 2>&1 > /dev/null) || { echo "FAIL: ndm-sim -v -n 64K exited $?" >&2; exit 1; }
    [[ "$err" == *"warning: -v among other arguments is read as -V"* ]] ||
      { echo "FAIL: ndm-sim -v among other arguments: '$err'" >&2; exit 1; }
  fi
  rest=${line#"$name "}
  [ -z "$first" ] && first=$rest
  [ "$rest" = "$first" ] || { echo "FAIL: $name says '$rest', others '$first'" >&2; exit 1; }
done
echo "PASS: $# tools, $first"
