#!/usr/bin/env bash
# The README's main command: the seed experiment. Sets up and builds, then runs
# ndm-compare: ndm-lkm (the published NDM-TCP), cubic and reno for 10 s each over
# real UDP sockets on loopback through the urban-LTE emulator profile (50 ms ±20 ms
# jitter, 5 % loss, both directions) with seed-replica 64 KB datagrams.
# Extra arguments go to ndm-compare (see ndm-compare --help), e.g.
#   scripts/run.sh --repeat 5            mean and 95 % confidence intervals
#   scripts/run.sh --virtual             the same in deterministic virtual time
#   scripts/run.sh --packets realistic   1452-byte datagrams
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(bash scripts/build.sh | tail -n 1)
exec "$build_dir/tools/ndm-compare" --profile urban-lte --cc ndm-lkm,cubic,reno -t 10 --out out/seed "$@"
