#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole suite.
#   scripts/test.sh              release build with -Werror
#   scripts/test.sh --sanitize   the same suite under AddressSanitizer + UBSan
# The suite includes the layering check (scripts/check_layering.sh, CTest "layering: ...").
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(bash scripts/build.sh "$@" | tail -n 1)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 600
