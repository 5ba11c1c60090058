#!/usr/bin/env python3
"""What many connections on one endpoint cost against one, interleaved in one run (bench/RESULTS.md,
"Connections on one endpoint": at 128, >= 0.8x the goodput at <= 1.3x the CPU per GB).

ndm-send -P N -> ndm-recv on 127.0.0.1 for each N in PARALLEL, SECONDS each, ROUNDS rounds
(each round starts one configuration later than the one before); medians of aggregate goodput
and of CPU seconds per GB (both processes, over the bytes ndm-recv received, handshakes and
closes included), and each N's ratios to the first N.

    bench/connections.py [BUILD_DIR ...]   env: ROUNDS (>= 3, default 3), SECONDS (default 3),
                                           PARALLEL (default 1,128), CIPHER (default aes128-gcm),
                                           SEND_ARGS (variants of extra ndm-send arguments,
                                           separated by ";", e.g. ";--ack-frequency")

With several build directories (e.g. before and after a change), every build runs every N in
each round, and each build's ratios are to its own first N.
"""
import os
import statistics
import sys
import time

from peers import Build, cpu_model, die, load_average, ndm_cli, rotations

ROUNDS = int(os.environ.get("ROUNDS", "3"))
SECONDS = os.environ.get("SECONDS", "3")
PARALLEL = [int(p) for p in os.environ.get("PARALLEL", "1,128").split(",") if p.strip()]
CIPHER = os.environ.get("CIPHER", "aes128-gcm")
SEND_ARGS = [v.split() for v in os.environ.get("SEND_ARGS", "").split(";")]


class Variant:
    """A build and the extra ndm-send arguments it runs with."""

    def __init__(self, build, args):
        self.build, self.args = build, args

    def name(self):
        return " ".join([self.build.name(), *self.args])


def main():
    if ROUNDS < 3:
        die("ROUNDS must be at least 3 (medians of interleaved runs)")
    if not PARALLEL or any(not 1 <= p <= 128 for p in PARALLEL):
        die("PARALLEL must list connection counts from 1 to 128, e.g. 1,128")
    builds = [Build(b, "") for b in (sys.argv[1:] or [os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "build")])]
    variants = [Variant(b, args) for b in builds for args in SEND_ARGS]
    configs = [(v, p) for v in variants for p in PARALLEL]
    runs = {(id(v), p): [] for v, p in configs}
    load_before = load_average()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for n, order in rotations(configs, ROUNDS):
        for v, p in order:
            res = ndm_cli(v.build, CIPHER, ["-P", str(p), "-t", SECONDS, *v.args])
            runs[(id(v), p)].append(res)
            print(f"connections: round {n + 1}/{ROUNDS} {v.name()} -P {p}: {res}", file=sys.stderr)
    load_after = load_average()
    print(f"{started}, kernel {os.uname().release}, {os.cpu_count()} CPUs ({cpu_model()}), "
          f"load average before {' '.join(load_before)}, after {' '.join(load_after)}; "
          f"ndm-send -P N -t {SECONDS} --cipher {CIPHER}, {ROUNDS} interleaved rounds\n")
    print(f"| build, ndm-send arguments | connections | goodput Gbit/s (median of {ROUNDS}) | all runs | CPU s/GB (both sides) | "
          f"all runs | goodput, CPU/GB vs -P {PARALLEL[0]} |")
    print("|---|---:|---:|---|---:|---|---|")
    for v in variants:
        base = None
        for p in PARALLEL:
            ok = [x for x in runs[(id(v), p)] if x]
            if not ok:
                print(f"| {v.name()} | {p} | failed | | | | |")
                continue
            g = statistics.median(x["goodput_gbps"] for x in ok)
            c = statistics.median(x["cpu_s_per_gb"] for x in ok)
            base = base or (g, c)
            fmt = lambda key: ", ".join(f"{x[key]:.2f}" if x else "failed" for x in runs[(id(v), p)])
            print(f"| {v.name()} | {p} | {g:.2f} | {fmt('goodput_gbps')} | {c:.2f} | {fmt('cpu_s_per_gb')} | "
                  f"{g / base[0]:.2f}×, {c / base[1]:.2f}× |")


if __name__ == "__main__":
    main()
