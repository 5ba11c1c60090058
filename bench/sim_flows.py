#!/usr/bin/env python3
"""The simulator's CPU per delivered packet at 1 and 100 competing flows, interleaved (bench/RESULTS.md,
"Virtual-time simulation speed": 100 flows <= 1.3x one).

bench_sim's SharedPathFlows (N Reno flows through one 100 Mbit/s, 25 ms bottleneck) for 5 s and
20 s of virtual time, ROUNDS rounds, every build once a round. Prints each build's median CPU per
packet of every run, and the marginal cost of a packet: (CPU of the 20 s run - CPU of the 5 s
run) / (packets of the 20 s run - packets of the 5 s run), taken within each round. Both runs
make the same 100 TLS handshakes and set-ups, so the marginal cost is a packet's own, without
them; the 20 s run's per-packet figure includes them.

    bench/sim_flows.py [BUILD_DIR ...]   env: ROUNDS (>= 3, default 5)
"""
import os
import re
import statistics
import subprocess
import sys

from peers import die, load_average, rotations, source_commit

ROUNDS = int(os.environ.get("ROUNDS", "5"))
FLOWS = ("1", "100")
RUN = re.compile(r"flows:(\d+)/seconds:(\d+)/\S+.*\bcpu_s=([0-9.e+-]+)(k?) .*\bpkts=([0-9.e+-]+)(k?)")


def scaled(value, suffix):
    return float(value) * (1000 if suffix == "k" else 1)


def run(build):
    """{(flows, seconds): (cpu seconds, packets)} of one bench_sim process."""
    exe = os.path.join(build, "bench", "bench_sim")
    out = subprocess.run([exe, "--benchmark_filter=SharedPathFlows/flows:(1|100)/"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        die(f"{exe} failed: {out.stderr.strip()[-200:]}")
    got = {}
    for line in out.stdout.splitlines():
        m = RUN.search(line)
        if m:
            got[(m.group(1), m.group(2))] = (scaled(m.group(3), m.group(4)), scaled(m.group(5), m.group(6)))
    return got


def main():
    if ROUNDS < 3:
        die("ROUNDS must be at least 3")
    builds = [os.path.abspath(b) for b in (sys.argv[1:] or [os.path.join(os.path.dirname(__file__), "..", "build")])]
    for b in builds:
        if not os.access(os.path.join(b, "bench", "bench_sim"), os.X_OK):
            die(f"{b}/bench/bench_sim is missing: build first (scripts/build.sh)")
    before = load_average()
    runs = {b: [] for b in builds}
    for n, order in rotations(builds, ROUNDS):
        for b in order:
            runs[b].append(run(b))
            print(f"sim_flows: round {n + 1}/{ROUNDS} @{source_commit(b)}", file=sys.stderr)
    print(f"load average before {' '.join(before)}, after {' '.join(load_average())}; {ROUNDS} interleaved rounds")
    print("| build | flows | µs a packet, 5 s run | 20 s run | marginal (20 s - 5 s) | all marginal runs |")
    print("|---|---:|---:|---:|---:|---|")
    for b in builds:
        marginal = {}
        for flows in FLOWS:
            per = {s: statistics.median(r[(flows, s)][0] / r[(flows, s)][1] * 1e6 for r in runs[b]) for s in ("5", "20")}
            m = sorted((r[(flows, "20")][0] - r[(flows, "5")][0]) / (r[(flows, "20")][1] - r[(flows, "5")][1]) * 1e6
                       for r in runs[b])
            marginal[flows] = statistics.median(m)
            print(f"| @{source_commit(b)} | {flows} | {per['5']:.2f} | {per['20']:.2f} | {marginal[flows]:.2f} | "
                  f"{', '.join(f'{x:.2f}' for x in m)} |")
        print(f"| @{source_commit(b)} | 100 / 1 | | | **{marginal['100'] / marginal['1']:.2f}×** | |")


if __name__ == "__main__":
    main()
