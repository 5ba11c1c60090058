#!/usr/bin/env bash
# `cmake --install` to a temporary prefix: the tools, libndm.so under its
# SONAME, the traces and models, man pages and completions land there; the
# installed ndm-compare runs from / on a trace profile, looks in the install's
# share/ndm first, and still does after the prefix is moved (relocatable); the
# Python package lands in lib/python3.X/dist-packages (where Debian's python3
# looks under /usr/local and /usr) and imports from the moved prefix; the
# static link of docs/library.md works with the install's pkg-config file.
set -euo pipefail
cmake="$1"
build="$2"
link_flags="${3:-}"  # the build's own link flags (a sanitizer build's -fsanitize=...): libndm.a needs them
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
if [ -d "$build/python/ndm" ]; then
  minor=$(/usr/bin/python3 -c 'import sys; print(sys.version_info[1])')
  site="$prefix/lib/python3.$minor/dist-packages"
  [ -f "$site/ndm/__init__.py" ] || fail "the Python package is not in lib/python3.$minor/dist-packages"
  (cd / && PYTHONPATH="$site" /usr/bin/python3 -c "
import ndm
assert ndm.__file__.startswith('$site/'), ndm.__file__
assert ndm.simulate(duration=1)['byte_exact']") || fail "the installed Python package does not import from $site"
fi
if command -v pkg-config > /dev/null && command -v g++ > /dev/null; then
  printf '#include <iostream>\n#include "ndm/version.hpp"\nint main() { std::cout << ndm::version() << "\\n"; }\n' > "$tmp/app.cpp"
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  # shellcheck disable=SC2046
  # shellcheck disable=SC2086
  g++ -std=c++20 -static-libstdc++ $link_flags "$tmp/app.cpp" $(pkg-config --cflags ndm) "$(pkg-config --variable=libdir ndm)/libndm.a" \
      $(pkg-config --static --libs-only-l ndm | sed 's/-lndm//') -o "$tmp/app" || fail "docs/library.md's static link failed"
  ldd "$tmp/app" | grep -q libndm && fail "the static link still needs libndm.so"
  "$tmp/app" > /dev/null || fail "the statically linked program does not run"
fi
echo "PASS: installed, relocated, ran from / with the install's traces"
