#!/usr/bin/env bash
# `cmake --install` to a temporary prefix: the tools, libndm.so under its
# SONAME, the traces and models, man pages and completions land there; the
# installed ndm-compare runs from / on a trace profile, looks in the install's
# share/ndm first, and still does after the prefix is moved (relocatable).
set -euo pipefail
cmake="$1"
build="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$cmake" --install "$build" --prefix "$tmp/a" > /dev/null
for f in bin/ndm-send bin/ndm-recv bin/ndm-compare bin/ndm-sim bin/ndm-emu bin/ndm-train bin/ndm-handshake \
         include/ndm/connection.hpp share/ndm/traces/Verizon-LTE-short.down share/ndm/models/ndm-learned.ndmm \
         share/bash-completion/completions/ndm-send; do
  [ -e "$tmp/a/$f" ] || fail "$f is not installed"
done
ls "$tmp"/a/lib*/libndm.so.* > /dev/null 2>&1 || fail "no libndm.so.* installed"
ls "$tmp"/a/lib*/libndm.a > /dev/null 2>&1 || fail "no libndm.a installed"
if command -v help2man > /dev/null; then [ -e "$tmp/a/share/man/man1/ndm-send.1" ] || fail "no man page"; fi
mv "$tmp/a" "$tmp/b"  # relocated: found from the program's own directory
prefix="$tmp/b"
(cd / && env -u NDM_DATA_DIR "$prefix/bin/ndm-compare" --virtual -t 2 --cc cubic --profile lte-verizon \
   --out "$tmp/out" > "$tmp/compare.txt") || fail "installed ndm-compare from /: exit $?"
set +e
(cd / && env -u NDM_DATA_DIR "$prefix/bin/ndm-compare" --virtual -t 1 --cc cubic --profile trace=nosuch.trace \
   > /dev/null 2> "$tmp/err.txt")
set -e
grep -q "(searched $prefix/share/ndm/traces" "$tmp/err.txt" ||
  fail "the install's share/ndm is not searched first: $(cat "$tmp/err.txt")"
echo "PASS: installed, relocated, ran from / with the install's traces"
