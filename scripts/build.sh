#!/usr/bin/env bash
# Configures and builds ndm into a build directory (default: build/).
#   scripts/build.sh [--sanitize] [--build-dir DIR] [extra cmake -D options...]
# Installs missing Debian packages first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=build
cmake_args=(-DNDM_WERROR=ON)
while (($#)); do
  case "$1" in
    --sanitize) build_dir=build-asan; cmake_args+=(-DNDM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DNDM_BUILD_BENCH=OFF) ;;
    --build-dir) build_dir="$2"; shift ;;
    *) cmake_args+=("$1") ;;
  esac
  shift
done

bash scripts/setup.sh >&2
cmake -S . -B "$build_dir" -G Ninja "${cmake_args[@]}" >&2
cmake --build "$build_dir" -j "$(nproc)" >&2
# The Python package of the default build becomes importable by Debian's
# python3 (docs/python.md): a .pth file in its site directory names
# build/python. Skipped where that directory is not writable (not root).
if [[ $build_dir == build ]] && compgen -G "$build_dir/python/ndm/_ndm*.so" > /dev/null; then
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  if mkdir -p "$site" 2> /dev/null && [[ -w $site ]]; then
    echo "$(pwd)/$build_dir/python" > "$site/ndm-build.pth"
  else
    echo "ndm build: $site is not writable; use PYTHONPATH=$(pwd)/$build_dir/python for import ndm" >&2
  fi
fi
echo "$build_dir"
