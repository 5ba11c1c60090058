#!/usr/bin/env bash
# The README's main command: the seed experiment. Sets up and builds, then runs
# ndm-compare: ndm-lkm (the published NDM-TCP), cubic and reno for 10 s each over
# real UDP sockets on loopback through the urban-LTE emulator profile (50 ms ±20 ms
# jitter, 5 % loss, both directions) with seed-replica 64 KB datagrams.
# Extra arguments go to ndm-compare (see ndm-compare --help); one that sets
# --profile, --cc, -t/--time or --out replaces this script's default for it, e.g.
#   scripts/run.sh --repeat 5             mean and 95 % confidence intervals
#   scripts/run.sh --virtual              the same in deterministic virtual time
#   scripts/run.sh --packets realistic    1452-byte datagrams
#   scripts/run.sh --profile lte-verizon  another profile, the same controllers
# It sets up and builds only what the main job needs (scripts/build.sh --main:
# setup.sh --main's packages, the target ndm-compare), printing progress as it
# goes; scripts/test.sh installs and builds the rest. The first run on a fresh
# Debian 12 downloads ~130 MB and takes minutes (README.md, "The first run").
# NDM_BUILD_DIR=DIR uses the tools already built in DIR instead of setting up and
# building build/ (tests/cli/readme_variants_test.sh runs the README's variants so).
set -euo pipefail
cd "$(dirname "$0")/.."

# ndm-compare's options that take a value (tools/compare/ndm_compare.cpp), short and long.
value_short=tli
value_long=" --profile --cc --time --repeat --io --packets --length --interval --seed --out --stagger "

# given OPTION...: true if the user's arguments (in $user_args) set one of the
# options. Understands "--opt VALUE", "--opt=VALUE", "-tVALUE" and short flag
# clusters such as "-qt 5", and skips option values so that a value is never
# taken for an option.
given() {
  local i=0 a opt c rest
  while ((i < ${#user_args[@]})); do
    a=${user_args[i]}
    i=$((i + 1))
    case "$a" in
      --) return 1 ;;
      --*=*) opt=${a%%=*} ;;
      --*) opt=$a; [[ $value_long == *" $a "* ]] && i=$((i + 1)) ;;
      -?*)  # a cluster of short options; the first one taking a value ends it
        rest=${a#-}
        opt=""
        while [ -n "$rest" ]; do
          c=${rest:0:1}
          rest=${rest:1}
          for want in "$@"; do [ "$want" = "-$c" ] && return 0; done
          if [[ $value_short == *"$c"* ]]; then [ -z "$rest" ] && i=$((i + 1)); break; fi
        done
        continue ;;
      *) continue ;;
    esac
    for want in "$@"; do [ "$want" = "$opt" ] && return 0; done
  done
  return 1
}

user_args=("$@")
defaults=()
given --profile || defaults+=(--profile urban-lte)
given --cc || defaults+=(--cc ndm-lkm,cubic,reno)
given -t --time || defaults+=(-t 10)
given --out || defaults+=(--out out/seed)

if [ -n "${NDM_BUILD_DIR:-}" ]; then
  build_dir=$NDM_BUILD_DIR
else
  echo "run.sh: checking the Debian packages and building ndm-compare into build/ (a first run takes minutes: README.md, \"First run\")" >&2
  build_dir=$(bash scripts/build.sh --main | tail -n 1)
  echo "run.sh: built; running $build_dir/tools/ndm-compare ${defaults[*]} $*" >&2
fi
exec "$build_dir/tools/ndm-compare" "${defaults[@]}" "$@"
