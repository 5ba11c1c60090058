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
mkdir -p include/ndm docs src/transport src/cc src/io src/sim src/util tools/common
put() { printf '%s\n' "${@:2}" > "$1"; }
put include/ndm/connection.hpp '#include <cstdint>' '#include "ndm/time.hpp"' '#include <nlohmann/json.hpp>'
put src/transport/connection.cpp '#include "wire/frame.hpp"' '#include "cc/window.hpp"' '#include "ndm/connection.hpp"' \
    '#include "util/rng.hpp"' '// #include "io/backend.hpp" is not allowed here' '#include <vector>'
put src/cc/reno.cpp '#include "cc/reno.hpp"' '#include "ndm/cc.hpp"'
put src/io/endpoint.cpp '#include "io/backend.hpp"' '#include "wire/frame.hpp"' '#include "ndm/endpoint.hpp"'
put src/sim/simulator.cpp '#include "ndm/sim.hpp"' '#include "ndm/workload.hpp"'
put src/util/clock.cpp '#include "ndm/time.hpp"'
put tools/ndm_send.cpp '#include "common/cli.hpp"' '#include "ndm/endpoint.hpp"' '#include <CLI/CLI.hpp>'
mkdir -p src/wire && put src/wire/frame.cpp '#include "wire/frame.hpp"' '#include "crypto/packet_protection.hpp"' \
    '#include "ndm/connection.hpp"' '#include "util/rng.hpp"'
mkdir -p src/crypto src/tls && put src/crypto/aead.cpp '#include "crypto/aead.hpp"' '#include "ndm/time.hpp"' '#include "util/rng.hpp"'
put src/tls/tls_session.cpp '#include "tls/tls_session.hpp"' '#include "crypto/suite.hpp"' '#include <gnutls/gnutls.h>'
mkdir -p src/train && put src/train/learn.cpp '#include "train/learn.hpp"' '// RFC 9002 §7.8, docs/ndm-lkm.md §1.6'
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
expect_violation src/io/bad.cpp '#include "common/units.hpp"'
expect_violation src/sim/bad.cpp '#include "tools/common/units.hpp"'
expect_violation tools/bad.cpp '#include "wire/frame.hpp"'
expect_violation tools/common/bad.cpp '#include "io/backend.hpp"'
expect_violation tools/common/bad.hpp '#include "cc/ndm/model.hpp"'
expect_violation tools/bad.cpp '#include <util/rng.hpp>'
expect_violation include/ndm/bad.hpp '#include "util/rng.hpp"'
expect_violation include/ndm/bad.hpp '#include "common/cli.hpp"'
expect_violation src/crypto/bad.cpp '#include "wire/packet.hpp"'
expect_violation src/wire/bad.cpp '#include "transport/stream.hpp"'
expect_violation src/wire/bad.hpp '#include "cc/window.hpp"'
expect_violation src/wire/bad.cpp '#include "ndm/endpoint.hpp"'
expect_violation src/tls/bad.cpp '#include "ndm/connection.hpp"'
expect_violation src/crypto/bad.hpp '#include "io/backend.hpp"'
expect_violation src/cc/bad.cpp '// as ndm-spec.md §1.6 says'
expect_violation docs/bad.md 'see ../shared/docs/transport-notes.md'
# A new private directory of src/ is private at once.
mkdir -p src/newlayer && put src/newlayer/x.cpp '#include "ndm/time.hpp"'
expect_violation tools/bad.cpp '#include "newlayer/x.hpp"'
expect_violation src/wire/bad.cpp '#include "newlayer/x.hpp"'
echo "PASS"
