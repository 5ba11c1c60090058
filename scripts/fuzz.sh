#!/usr/bin/env bash
# Builds the wire-codec fuzzer (libFuzzer + ASan + UBSan) and runs it.
#   scripts/fuzz.sh [SECONDS]      default 60
# Output in build-fuzz/: the fuzzer, its corpus (seeded with valid packets by
# fuzz/make_seed_corpus.cpp) and any crash-* reproducers. Reproduce a crash
# with: build-fuzz/packet_parser_fuzz build-fuzz/crash-<hash>
set -euo pipefail

cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-60}"
OUT=build-fuzz
CXX="${CXX_FUZZ:-$(command -v clang++ || command -v clang++-14 || true)}"
SRCS=(src/transport/{varint,frame,packet,quic_header,transport_params}.cpp src/crypto/*.cpp)
LIBS=$(pkg-config --libs gnutls nettle)

if [[ -z "$CXX" ]]; then
  echo "fuzz.sh: clang++ not found. On Debian 12: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi

mkdir -p "$OUT/corpus"
echo "fuzz.sh: building $OUT/packet_parser_fuzz with $CXX" >&2
if ! "$CXX" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Iinclude -Isrc fuzz/packet_parser_fuzz.cpp "${SRCS[@]}" $LIBS -o "$OUT/packet_parser_fuzz"; then
  cat >&2 <<'EOF'
fuzz.sh: building the fuzzer failed.
  If the linker cannot find libclang_rt.fuzzer (or -fsanitize=fuzzer is
  rejected), install libFuzzer's runtime: on Debian 12 with clang 14,
    sudo apt-get install libclang-rt-14-dev
  (scripts/setup.sh installs it too).
EOF
  exit 1
fi

"$CXX" -std=c++20 -O1 -Iinclude -Isrc fuzz/make_seed_corpus.cpp "${SRCS[@]}" $LIBS -o "$OUT/make_seed_corpus"
"$OUT/make_seed_corpus" "$OUT/corpus"

echo "fuzz.sh: fuzzing for ${SECONDS_TO_RUN}s" >&2
# Crash reproducers go to build-fuzz/ (-artifact_prefix); the corpus grows in place.
exec "$OUT/packet_parser_fuzz" "$OUT/corpus" -max_total_time="$SECONDS_TO_RUN" -max_len=2048 \
  -print_final_stats=1 -artifact_prefix="$OUT/"
