#!/usr/bin/env python3
"""The simulator's CPU per delivered packet and memory per flow at 1, 100 and 1000 competing flows,
interleaved (bench/RESULTS.md, "Virtual-time simulation speed": 100 flows <= 1.3x one, 1000 flows <= 2x).

bench_sim's SharedPathFlows (N Reno flows through one 25 ms bottleneck of 100 Mbit/s, 1 Gbit/s for
1000 flows: at least 1 Mbit/s a flow) for 5 s and 20 s of virtual time, ROUNDS rounds, every build
once a round, one process per build and flow count. Prints each build's median CPU per packet of
every run, and the marginal cost of a packet: (CPU of the 20 s run - CPU of the 5 s run) / (packets
of the 20 s run - packets of the 5 s run), taken within each round. Both runs make the same N TLS
handshakes and set-ups, so the marginal cost is a packet's own, without them; the 20 s run's
per-packet figure includes them. Memory per flow: (max RSS of the N-flow process - that of the
1-flow process) / (N - 1), medians over the rounds.

    bench/sim_flows.py [BUILD_DIR ...]   env: ROUNDS (>= 3, default 5), FLOWS (default "1 100 1000";
                                         must include 1)
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

from peers import die, load_average, rotations, source_commit

ROUNDS = int(os.environ.get("ROUNDS", "5"))
FLOWS = tuple(os.environ.get("FLOWS", "1 100 1000").split())
RUN = re.compile(r"flows:(\d+)/seconds:(\d+)/\S+.*\bcpu_s=([0-9.e+-]+)(k?) .*\bpkts=([0-9.e+-]+)([kM]?)")


def scaled(value, suffix):
    return float(value) * {"": 1, "k": 1e3, "M": 1e6}[suffix]


def run(build, flows):
    """({seconds: (cpu seconds, packets)}, max RSS in KiB) of one bench_sim process of `flows` flows."""
    exe = os.path.join(build, "bench", "bench_sim")
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        # Popen would reap the child with waitpid; wait4 also returns its resource use.
        pid = os.posix_spawn(exe, [exe, f"--benchmark_filter=SharedPathFlows/flows:{flows}/"], os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                                           (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        _, status, usage = os.wait4(pid, 0)
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        die(f"{exe} failed: {errors.strip()[-200:]}")
    got = {}
    for line in text.splitlines():
        m = RUN.search(line)
        if m and "ERROR" not in line:
            got[m.group(2)] = (scaled(m.group(3), m.group(4)), scaled(m.group(5), m.group(6)))
    if set(got) != {"5", "20"}:
        die(f"{exe}: no 5 s and 20 s results for {flows} flows: {(text + errors).strip()[-300:]}")
    return got, usage.ru_maxrss  # KiB on Linux


def main():
    if ROUNDS < 3:
        die("ROUNDS must be at least 3")
    if "1" not in FLOWS or any(not f.isdigit() or int(f) < 1 for f in FLOWS):
        die(f"FLOWS must be flow counts including 1, got {' '.join(FLOWS)!r}")
    builds = [os.path.abspath(b) for b in (sys.argv[1:] or [os.path.join(os.path.dirname(__file__), "..", "build")])]
    for b in builds:
        if not os.access(os.path.join(b, "bench", "bench_sim"), os.X_OK):
            die(f"{b}/bench/bench_sim is missing: build first (scripts/build.sh)")
    before = load_average()
    runs = {b: {f: [] for f in FLOWS} for b in builds}
    rss = {b: {f: [] for f in FLOWS} for b in builds}
    for n, order in rotations(builds, ROUNDS):
        for b in order:
            for f in FLOWS:
                got, maxrss = run(b, f)
                runs[b][f].append(got)
                rss[b][f].append(maxrss)
            print(f"sim_flows: round {n + 1}/{ROUNDS} @{source_commit(b)}", file=sys.stderr)
    print(f"load average before {' '.join(before)}, after {' '.join(load_average())}; {ROUNDS} interleaved rounds")
    print("| build | flows | µs a packet, 5 s run | 20 s run | marginal (20 s - 5 s) | all marginal runs | "
          "max RSS | KiB a flow |")
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    for b in builds:
        marginal = {}
        one_rss = statistics.median(rss[b]["1"])
        for flows in FLOWS:
            rs = runs[b][flows]
            per = {s: statistics.median(r[s][0] / r[s][1] * 1e6 for r in rs) for s in ("5", "20")}
            m = sorted((r["20"][0] - r["5"][0]) / (r["20"][1] - r["5"][1]) * 1e6 for r in rs)
            marginal[flows] = statistics.median(m)
            mem = statistics.median(rss[b][flows])
            per_flow = f"{(mem - one_rss) / (int(flows) - 1):.0f}" if flows != "1" else ""
            print(f"| @{source_commit(b)} | {flows} | {per['5']:.2f} | {per['20']:.2f} | {marginal[flows]:.2f} | "
                  f"{', '.join(f'{x:.2f}' for x in m)} | {mem / 1024:.0f} MiB | {per_flow} |")
        for flows in FLOWS:
            if flows != "1":
                print(f"| @{source_commit(b)} | {flows} / 1 | | | **{marginal[flows] / marginal['1']:.2f}×** | | | |")


if __name__ == "__main__":
    main()
