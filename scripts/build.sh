#!/usr/bin/env bash
# Configures and builds ndm into a build directory (default: build/).
#   scripts/build.sh [--sanitize] [--main] [--target T]... [--build-dir DIR] [extra cmake -D options...]
# Installs missing Debian packages first (scripts/setup.sh).
#   --main       only what the main job needs (scripts/run.sh): setup.sh --main's
#                packages and the target ndm-compare (the library and the tool),
#                not the tests, benchmarks and examples (a third of the build)
#   --target T   build T only (repeatable); everything when none is given
# Prints the build directory as its last line on stdout; progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=build
cmake_args=(-DNDM_WERROR=ON)
setup_args=()
targets=()
while (($#)); do
  case "$1" in
    --sanitize) build_dir=build-asan; cmake_args+=(-DNDM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DNDM_BUILD_BENCH=OFF) ;;
    --main) setup_args=(--main); targets+=(ndm-compare) ;;
    --target) targets+=("$2"); shift ;;
    --build-dir) build_dir="$2"; shift ;;
    *) cmake_args+=("$1") ;;
  esac
  shift
done

bash scripts/setup.sh ${setup_args[@]+"${setup_args[@]}"} >&2
echo "ndm build: configuring $build_dir (cmake)" >&2
cmake -S . -B "$build_dir" -G Ninja "${cmake_args[@]}" >&2
echo "ndm build: building ${targets[*]:-everything} in $build_dir with $(nproc) jobs (ninja: [done/total] per step)" >&2
build_cmd=(cmake --build "$build_dir" -j "$(nproc)")
((${#targets[@]} == 0)) || build_cmd+=(--target "${targets[@]}")
"${build_cmd[@]}" >&2
# The Python package of the default build becomes importable by Debian's
# python3 (docs/python.md): a .pth file in its site directory names
# build/python. Skipped where that directory is not writable (not root).
# A python3 first on PATH that is another interpreter of the same version
# (pyenv, conda) gets one too, naming Debian's dist-packages after build/python
# (after its own site directory, so its own packages win) for NumPy and the rest.
write_pth() {  # SITE_DIR LINE...
  local site=$1
  shift
  if mkdir -p "$site" 2> /dev/null && [[ -w $site ]]; then
    printf '%s\n' "$@" > "$site/ndm-build.pth"
  else
    echo "ndm build: $site is not writable; use PYTHONPATH=$(pwd)/$build_dir/python for import ndm" >&2
  fi
}
if [[ $build_dir == build ]] && compgen -G "$build_dir/python/ndm/_ndm*.so" > /dev/null; then
  version='import sys; print("%d.%d" % sys.version_info[:2])'
  write_pth "$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')" "$(pwd)/$build_dir/python"
  other=$(command -v python3 || true)
  if [[ -n $other && $(readlink -f "$other") != $(readlink -f /usr/bin/python3) ]] &&
     [[ $("$other" -c "$version" 2> /dev/null) == $(/usr/bin/python3 -c "$version") ]]; then
    write_pth "$("$other" -c 'import site; print(site.getsitepackages()[0])')" "$(pwd)/$build_dir/python" \
      /usr/lib/python3/dist-packages
  fi
fi
echo "$build_dir"
