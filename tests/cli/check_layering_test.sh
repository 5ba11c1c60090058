#!/usr/bin/env bash
# scripts/check_layering.sh on a scratch repository: silent and exit 0 on a
# tree that keeps the layers (including allowed includes and commented-out
# ones), and for each rule one violating file makes it print that line and
# exit 1, so the check cannot pass by matching nothing.
set -euo pipefail
check=$1
# shellcheck source=skip_lib.sh
source "$(dirname "$0")/skip_lib.sh"
git --version > /dev/null 2>&1 || skip_lacking "no git (the check and this test's scratch repository need it; scripts/setup.sh installs git)"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
git init -q .
mkdir -p include/ndm docs src/transport src/cc src/io src/sim src/emu src/util tools/cli tools/perf tools/emu
put() { printf '%s\n' "${@:2}" > "$1"; }
put include/ndm/connection.hpp '#include <cstdint>' '#include "ndm/time.hpp"' '#include <nlohmann/json.hpp>'
put src/transport/connection.cpp '#include "wire/frame.hpp"' '#include "cc/window.hpp"' '#include "ndm/connection.hpp"' \
    '#include "util/rng.hpp"' '// #include "io/backend.hpp" is not allowed here' '#include <vector>'
put src/cc/reno.cpp '#include "cc/reno.hpp"' '#include "ndm/cc.hpp"'
put src/io/endpoint.cpp '#include "io/backend.hpp"' '#include "wire/frame.hpp"' '#include "ndm/endpoint.hpp"'
put src/sim/simulator.cpp '#include "ndm/sim.hpp"' '#include "ndm/workload.hpp"'
put src/util/clock.cpp '#include "ndm/time.hpp"'
put src/emu/pipeline.cpp '#include "emu/pipeline.hpp"' '#include "ndm/emu.hpp"'
put tools/perf/ndm_send.cpp '#include "tools/cli/command_line.hpp"' '#include "tools/emu/shared_path.hpp"' \
    '#include "tools/perf/send_client.hpp"' '#include "ndm/endpoint.hpp"' '#include <CLI/CLI.hpp>'
put tools/emu/relay.cpp '#include "tools/emu/relay.hpp"' '#include "tools/cli/printable.hpp"' '#include "ndm/emu.hpp"'
put tools/cli/units.cpp '#include "tools/cli/units.hpp"' '#include <fmt/format.h>'
mkdir -p src/wire && put src/wire/frame.cpp '#include "wire/frame.hpp"' '#include "crypto/packet_protection.hpp"' \
    '#include "ndm/connection.hpp"' '#include "util/rng.hpp"'
mkdir -p src/crypto src/tls && put src/crypto/aead.cpp '#include "crypto/aead.hpp"' '#include "ndm/time.hpp"' '#include "util/rng.hpp"'
put src/tls/tls_session.cpp '#include "tls/tls_session.hpp"' '#include "crypto/suite.hpp"' '#include <gnutls/gnutls.h>'
mkdir -p src/train && put src/train/learn.cpp '#include "train/learn.hpp"' '// RFC 9002 §7.8, docs/ndm-lkm.md §1.6'
put docs/architecture.md 'src/transport, src/cc (src/cc/ndm), src/io, src/sim, src/emu, src/wire, src/util,' 'src/crypto src/tls (src/train/)' \
    'bursts (picoquic issue 1110, quinn issue 1835, ngtcp2'"'"'s issue 12, Picoquic Issue #7); issues 3 and sessions'
git add -A

fail() { echo "FAIL: $*"; exit 1; }
out=$(bash "$check" "$scratch") || fail "a clean tree was reported: $out"
echo "clean tree: ok"

# expect_violation <file> <line>: the line alone in <file> (untracked, so new
# files count before they are added) breaks the check and is named.
expect_violation() {
  printf '%s\n' "$2" > "$1"
  local rc=0
  out=$(bash "$check" "$scratch" 2>&1) || rc=$?
  rm -f "$1"
  [ "$rc" = 1 ] || fail "$1 with '$2': exit $rc, want 1: $out"
  grep -qF "$1:1:$2" <<<"$out" || fail "$1 with '$2' not printed: $out"
  echo "caught $1: $2"
}
expect_violation src/transport/bad.cpp '#include "io/backend.hpp"'
expect_violation src/transport/bad.cpp '#include "sim/bulk_flow.hpp"'
expect_violation src/transport/bad.hpp '  #  include "emu/pipeline.hpp"'
expect_violation src/cc/bad.cpp '#include "qlog/qlog_writer.hpp"'
expect_violation src/cc/bad.cpp '#include "ndm/endpoint.hpp"'
expect_violation src/transport/bad.cpp '#include "ndm/sim.hpp"'
expect_violation src/transport/bad.cpp '#include "../io/backend.hpp"'
expect_violation src/io/bad.cpp '#include "tools/cli/units.hpp"'
expect_violation src/sim/bad.cpp '#include "../../tools/cli/units.hpp"'
expect_violation src/transport/bad.cpp '#include "tools/perf/perf_session.hpp"'
expect_violation tools/bad.cpp '#include "wire/frame.hpp"'
expect_violation tools/perf/bad.cpp '#include "io/backend.hpp"'
expect_violation tools/cli/bad.hpp '#include "cc/ndm/model.hpp"'
expect_violation tools/emu/bad.cpp '#include "emu/pipeline.hpp"'
expect_violation tools/cli/bad.cpp '#include "tools/perf/perf_session.hpp"'
expect_violation tools/cli/bad.hpp '#include "tools/emu/relay.hpp"'
expect_violation tools/bad.cpp '#include <util/rng.hpp>'
expect_violation include/ndm/bad.hpp '#include "util/rng.hpp"'
expect_violation include/ndm/bad.hpp '#include "tools/cli/command_line.hpp"'
expect_violation src/crypto/bad.cpp '#include "wire/packet.hpp"'
expect_violation src/wire/bad.cpp '#include "transport/stream.hpp"'
expect_violation src/wire/bad.hpp '#include "cc/window.hpp"'
expect_violation src/wire/bad.cpp '#include "ndm/endpoint.hpp"'
expect_violation src/tls/bad.cpp '#include "ndm/connection.hpp"'
expect_violation src/crypto/bad.hpp '#include "io/backend.hpp"'
expect_violation src/cc/bad.cpp '// as ndm-spec.md §1.6 says'
expect_violation docs/bad.md 'see ../shared/docs/transport-notes.md'
# Rule 6: this project's tracker and work sessions, in any case, also beside an
# upstream tracker's number; README.md, tests/ and python/ count.
mkdir -p tests python bench
expect_violation src/cc/bad.cpp '// the pacing limit of issue 18'
expect_violation README.md 'measured in Session 4'
expect_violation tests/bad.cpp '// see issue #7'
expect_violation python/bad.py '# session 12: more per turn'
expect_violation docs/bad.md 'as picoquic issue 1110 and issue 18 found'
expect_violation bench/bad.md 'the ISSUE 5 targets'
# Rule 7: a src/ folder that docs/architecture.md does not name is printed.
mkdir -p src/simd && put src/simd/x.cpp '#include "ndm/time.hpp"'
rc=0
out=$(bash "$check" "$scratch" 2>&1) || rc=$?
rm -rf src/simd
[ "$rc" = 1 ] || fail "src/simd, not in docs/architecture.md: exit $rc, want 1: $out"
grep -qx '  src/simd' <<<"$out" || fail "src/simd not printed: $out"
echo "caught src/simd: not named in docs/architecture.md (src/sim is)"
# A new private directory of src/ is private at once (and named in docs/architecture.md
# here, so that only the include is the violation).
mkdir -p src/newlayer && put src/newlayer/x.cpp '#include "ndm/time.hpp"'
echo 'src/newlayer' >> docs/architecture.md
expect_violation tools/bad.cpp '#include "newlayer/x.hpp"'
expect_violation src/wire/bad.cpp '#include "newlayer/x.hpp"'
echo "PASS"
