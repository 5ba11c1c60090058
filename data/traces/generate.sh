#!/bin/sh
# Regenerates the project's synthetic Mahimahi traces (see README.md). Deterministic:
# the same script always writes byte-identical files.
set -eu
cd "$(dirname "$0")"
# 12 Mbit/s: one 1500-byte opportunity per ms; Mahimahi's own example is a file holding just "1".
echo 1 > const-12mbit.trace
# Square wave: 1 s at 12 Mbit/s (one opportunity per ms), then 1 s at 3 Mbit/s (one per 4 ms).
awk 'BEGIN { for (t = 1; t <= 1000; t++) print t; for (t = 1004; t <= 2000; t += 4) print t }' > square-12-3mbit.trace
# Outage: 2 s at 12 Mbit/s, then 500 ms with no opportunity; the last line (2500) sets the loop period.
awk 'BEGIN { for (t = 1; t <= 2000; t++) print t; print 2500 }' > outage-500ms.trace
