#!/usr/bin/env bash
# The README's main command. For now: a 32 MB Reno transfer over an emulated
# 50 Mbit/s, 50 ms RTT, 1 % loss path in deterministic virtual time.
# Extra arguments go to ndm-sim (see ndm-sim --help).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(bash scripts/build.sh | tail -n 1)
exec "$build_dir/tools/ndm-sim" "$@"
