#!/bin/sh
# python/ as pip installs it (python/setup.py, docs/python.md "Installing with
# pip"): `pip install --no-build-isolation --no-index` into a fresh venv made
# with --system-site-packages (Debian's numpy, setuptools and wheel; no
# network), the extension this build's own (NDM_PYTHON_EXTENSION: no second
# CMake build). Then, from / with no PYTHONPATH: `import ndm` is the venv's
# and runs a simulation on a shipped trace that it finds in the package, not
# in the checkout; pip knows the package at the CMake project's version,
# the console scripts ndm-train-torch, ndm-sweep and ndm-plot answer --help,
# and pip refuses a missing NDM_PYTHON_EXTENSION, naming it. The build runs in a copy
# of python/ and data/, since setuptools writes build/ and *.egg-info/ where it builds.
# Skips (77) without Debian's venv module (python3-venv).
set -eu
py="$1"   # the interpreter the extension is built for (Debian's python3)
src="$2"  # the source tree
ext="$3"  # <build>/python/ndm/_ndm*.so
"$py" -c "import ensurepip, venv" 2> /dev/null || { echo "SKIP: $py has no venv/ensurepip (python3-venv)"; exit 77; }
unset PYTHONPATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
cp "$src/CMakeLists.txt" "$tmp/src/"  # setup.py reads the project's version there
tar -C "$src" --exclude=./python/build --exclude='*.egg-info' --exclude=__pycache__ -cf - ./python ./data/traces \
  ./data/models | tar -C "$tmp/src" -xf -

t0=$(date +%s)
"$py" -m venv --system-site-packages "$tmp/venv"
t1=$(date +%s)
NDM_PYTHON_EXTENSION="$ext" "$tmp/venv/bin/pip" install -q --no-build-isolation --no-index "$tmp/src/python" \
  > "$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; echo "FAIL: pip install"; exit 1; }
t2=$(date +%s)
echo "venv $((t1 - t0)) s, pip install $((t2 - t1)) s"

cd /
version=$(sed -n 's/^project(ndm VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
"$tmp/venv/bin/python" - "$tmp/venv" "$version" <<'PY'
import importlib.metadata, sys
import ndm
venv, version = sys.argv[1], sys.argv[2]
assert ndm.__file__.startswith(venv + "/"), f"ndm imported from {ndm.__file__}, not the venv"
assert importlib.metadata.version("ndm") == version, (importlib.metadata.version("ndm"), version)
trace = {t.name: t for t in ndm.traces()}["Verizon-LTE-short"]
assert trace.up.startswith(venv + "/"), f"the trace is {trace.up}, not the package's"
r = ndm.simulate(profile=trace.profile("delay=10ms"), cc="cubic", duration=1, packet_size=1452)
assert r["byte_exact"] and r["error"] == "", r["error"]
print(f"import ndm: {ndm.__file__}, version {version}; simulate on {trace.up}: "
      f"{r['goodput_bps'] / 1e6:.2f} Mbit/s, byte-exact")
PY
for cmd in ndm-train-torch ndm-sweep ndm-plot; do
  out=$("$tmp/venv/bin/$cmd" --help) || { echo "FAIL: $cmd --help exits $?"; exit 1; }
  printf '%s\n' "$out" | grep -q "^usage: $cmd " || { echo "FAIL: $cmd --help: $out"; exit 1; }
done
echo "ndm-train-torch, ndm-sweep, ndm-plot: --help"

# A missing extension file: pip fails, saying so.
rc=0
NDM_PYTHON_EXTENSION="$tmp/none.so" "$tmp/venv/bin/pip" install -q --no-build-isolation --no-index \
  --force-reinstall --no-deps "$tmp/src/python" > "$tmp/bad.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || { echo "FAIL: pip install with a missing NDM_PYTHON_EXTENSION succeeded"; exit 1; }
grep -q "NDM_PYTHON_EXTENSION=$tmp/none.so: no such file" "$tmp/bad.log" || { cat "$tmp/bad.log"; echo "FAIL: no message"; exit 1; }
echo "PASS"
