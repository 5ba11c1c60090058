#!/usr/bin/env bash
# Every doctest case must run as exactly one CTest test. doctest_discover_tests
# turns each name into a --test-case filter inside a CMake list: a ';' splits
# the list (the truncated filter matches nothing and the "test" passes without
# running anything), and '*' or '?' make the filter a wildcard. This runs each
# name through the same filter CTest uses and requires it to match once.
set -euo pipefail
# Usage: doctest_names_test.sh TEST_BINARY... (every unit-test binary; a name
# must also be unique across them, since ctest names each test by its case).
(($# > 0)) || { echo "usage: $0 TEST_BINARY..."; exit 2; }
# One start of the binary per name: under ASan, LeakSanitizer's scan at each
# exit would be half of the time, and counting allocates nothing worth it.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
bad=0 total=0
declare -A owner=()
for tests in "$@"; do
    names=$("$tests" --list-test-cases --no-version 2>/dev/null | sed -n '/^====/,/^====/p' | sed '1d;$d')
    [ -n "$names" ] || { echo "FAIL: $tests listed no test cases"; exit 1; }
    while IFS= read -r name; do
        total=$((total + 1))
        if [[ -n ${owner[$name]:-} ]]; then
            echo "FAIL: two binaries have a case of this name (${owner[$name]##*/}, ${tests##*/}): $name"; bad=1; continue
        fi
        owner[$name]=$tests
        if [[ $name == *";"* ]]; then
            echo "FAIL: test name contains ';' (CTest splits it there): $name"; bad=1; continue
        fi
        count=$("$tests" "--test-case=${name//,/\\,}" --count --no-version 2>/dev/null | sed -n 's/.*passing the current filters: \([0-9]*\).*/\1/p')
        if [ "$count" != 1 ]; then
            echo "FAIL: the CTest filter for this name matches ${count:-?} cases, not 1: $name"; bad=1
        fi
    done <<< "$names"
done
[ "$bad" = 0 ] || exit 1
echo "ok: all $total doctest cases of $# binaries match their CTest filter exactly once"
