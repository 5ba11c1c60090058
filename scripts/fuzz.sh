#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cpp, libFuzzer + ASan + UBSan, the
# library built with clang into build-fuzz/cmake) and runs one or all of them.
#   scripts/fuzz.sh [TARGET|all|list] [SECONDS]     default: all, 60 s each
# Targets: packet_parser (wire codec), connection (a Connection pair driven by
# the input, invariants after each step), endpoint (a server Endpoint fed from
# many source addresses on loopback), router (the sans-I/O router fed arbitrary
# datagrams from arbitrary addresses, no socket), profile_parser, trace_parser,
# model_parser. Each runs on its seed corpus fuzz/corpus/TARGET/ (kept in the
# repo, small) plus its working corpus build-fuzz/corpus/TARGET/, where new
# inputs go. Crash reproducers: build-fuzz/TARGET-crash-<hash>; replay one with
#   build-fuzz/cmake/fuzz/TARGET_fuzz build-fuzz/TARGET-crash-<hash>
# Exit status: 0 when no target found anything, 1 otherwise (or the build failed).
set -euo pipefail

cd "$(dirname "$0")/.."
TARGETS=(packet_parser connection endpoint router profile_parser trace_parser model_parser)
WHICH="${1:-all}"
SECONDS_TO_RUN="${2:-60}"
if [[ "$WHICH" =~ ^[0-9]+$ ]]; then  # the old form: scripts/fuzz.sh SECONDS
  SECONDS_TO_RUN="$WHICH"
  WHICH=all
fi
if [[ "$WHICH" == list ]]; then
  printf '%s\n' "${TARGETS[@]}"
  exit 0
fi
if [[ "$WHICH" == all ]]; then
  RUN=("${TARGETS[@]}")
elif [[ " ${TARGETS[*]} " == *" $WHICH "* ]]; then
  RUN=("$WHICH")
else
  echo "fuzz.sh: unknown target '$WHICH' (one of: ${TARGETS[*]}, all, list)" >&2
  exit 2
fi
if ! [[ "$SECONDS_TO_RUN" =~ ^[0-9]+$ ]] || ((SECONDS_TO_RUN == 0)); then
  echo "fuzz.sh: SECONDS must be a positive integer, not '$SECONDS_TO_RUN'" >&2
  exit 2
fi

OUT=build-fuzz
CXX_FUZZ="${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++ || true)}"
CC_FUZZ="${CC_FUZZ:-$(command -v clang-14 || command -v clang || true)}"
if [[ -z "$CXX_FUZZ" ]]; then
  echo "fuzz.sh: clang++ not found. On Debian 12: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

mkdir -p "$OUT"
# Several runs may start at once (one per target): one builds, the others wait.
exec 9>"$OUT/.build.lock"
flock 9
echo "fuzz.sh: building the fuzz targets with $CXX_FUZZ into $OUT/cmake" >&2
if ! { CC="$CC_FUZZ" CXX="$CXX_FUZZ" cmake -S . -B "$OUT/cmake" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DNDM_BUILD_FUZZ=ON -DNDM_BUILD_TESTS=OFF -DNDM_BUILD_TOOLS=OFF -DNDM_BUILD_BENCH=OFF \
         -DNDM_BUILD_EXAMPLES=OFF "${launcher[@]}" >/dev/null &&
       cmake --build "$OUT/cmake" -j "$(nproc)" --target "${RUN[@]/%/_fuzz}" >&2; }; then
  cat >&2 <<'EOF'
fuzz.sh: building the fuzzers failed.
  If the linker cannot find libclang_rt.fuzzer (or -fsanitize=fuzzer is
  rejected), install libFuzzer's runtime: on Debian 12 with clang 14,
    sudo apt-get install libclang-rt-14-dev
  (scripts/setup.sh installs it too).
EOF
  exit 1
fi
flock -u 9

# Per-target input bounds. The stateful targets' inputs are operation
# sequences: at full length from the start (-len_control=0), since a few
# dozen inputs a second would take hours to grow them a byte at a time.
len_options() {
  case "$1" in
    connection) echo "-max_len=1024 -len_control=0" ;;
    endpoint) echo "-max_len=2048 -len_control=0" ;;
    router) echo "-max_len=2048 -len_control=0" ;;
    trace_parser) echo "-max_len=8192" ;;
    *) echo "-max_len=2048" ;;
  esac
}

status=0
for t in "${RUN[@]}"; do
  mkdir -p "$OUT/corpus/$t" "fuzz/corpus/$t"
  echo "fuzz.sh: $t for ${SECONDS_TO_RUN}s" >&2
  # -timeout: an input that takes seconds is a hang (each should take ms).
  if ! "$OUT/cmake/fuzz/${t}_fuzz" "$OUT/corpus/$t" "fuzz/corpus/$t" -max_total_time="$SECONDS_TO_RUN" \
      $(len_options "$t") -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$OUT/$t-" 2>"$OUT/$t.log"; then
    echo "fuzz.sh: $t FOUND A PROBLEM; see $OUT/$t.log and the $OUT/$t-* reproducer" >&2
    tail -n 40 "$OUT/$t.log" >&2
    status=1
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$OUT/$t.log" | sed "s/^/fuzz.sh: $t: /" >&2 || true
done
exit "$status"
