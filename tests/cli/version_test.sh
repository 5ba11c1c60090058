#!/usr/bin/env bash
# Every tool answers --version with "TOOL VERSION (git COMMIT)" and exit 0,
# the same version and commit for all (include/ndm/version.hpp).
set -euo pipefail
first=""
for tool in "$@"; do
  name=$(basename "$tool")
  line=$("$tool" --version) || { echo "FAIL: $name --version exited $?" >&2; exit 1; }
  [[ "$line" =~ ^$name\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [^\)]+\)$ ]] || { echo "FAIL: $name --version printed '$line'" >&2; exit 1; }
  rest=${line#"$name "}
  [ -z "$first" ] && first=$rest
  [ "$rest" = "$first" ] || { echo "FAIL: $name says '$rest', others '$first'" >&2; exit 1; }
done
echo "PASS: $# tools, $first"
