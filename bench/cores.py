#!/usr/bin/env python3
"""Whether ndm scales with cores, interleaved in one run (bench/RESULTS.md, "Cores": >= 1.6x).

One connection whose two endpoint threads (sender, receiver) share one CPU, against two
connections on two CPUs, each with its own two endpoint threads on its own CPU: the in-process
bench (bench/ndm_loopback_bench --pairs N --cpus LIST) over real UDP sockets on loopback. On a
2-CPU machine this is the only way to give a connection "a free core" to scale into: a second
connection gets the second CPU. The ratio of the aggregate to one connection's goodput is what
a second endpoint thread adds where a core is free (2.0x if nothing is shared); CPU per GB
should stay flat. The --reuse-port variant puts the two receiving endpoints on one port
(SO_REUSEPORT), where the kernel's 4-tuple hash decides which endpoint each connection reaches.

    bench/cores.py [BUILD_DIR]   env: ROUNDS (>= 3, default 5), BYTES (per connection, default 1 GiB),
                                      CPUS (two CPUs, default 0,1), CIPHER (default aes128-gcm)
"""
import json
import os
import statistics
import sys
import time

from peers import Build, cpu_model, die, load_average, rotations, run_child

ROUNDS = int(os.environ.get("ROUNDS", "5"))
BYTES = int(os.environ.get("BYTES", str(1 << 30)))
CPUS = os.environ.get("CPUS", "0,1").split(",")
CIPHER = os.environ.get("CIPHER", "aes128-gcm")


def run(build, args):
    out, _, _, rc = run_child([build.exe("bench/ndm_loopback_bench"), "--io", "uring", "--gso", "on",
                               "--bytes", str(BYTES), "--cipher", CIPHER, *args])
    if rc != 0:
        return None
    d = json.loads(out)
    return d if d.get("complete") else None


def main():
    if ROUNDS < 3:
        die("ROUNDS must be at least 3 (medians of interleaved runs)")
    if len(CPUS) != 2 or not all(c.strip().isdigit() for c in CPUS):
        die("CPUS must name two CPUs, e.g. 0,1")
    build = Build(sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build"), "")
    configs = [
        ("1 connection, both its threads on CPU " + CPUS[0], ["--pairs", "1", "--cpus", CPUS[0]]),
        ("2 connections, each on its own CPU", ["--pairs", "2", "--cpus", ",".join(CPUS)]),
        ("2 connections, each on its own CPU, one port (SO_REUSEPORT)",
         ["--pairs", "2", "--cpus", ",".join(CPUS), "--reuse-port"]),
    ]
    runs = {name: [] for name, _ in configs}
    load_before = load_average()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for n, order in rotations(configs, ROUNDS):
        for name, args in order:
            res = run(build, args)
            runs[name].append(res)
            brief = f"{res['goodput_gbps']:.2f} Gbit/s, receivers {res['receiver_connections']}" if res else "failed"
            print(f"cores: round {n + 1}/{ROUNDS} {name}: {brief}", file=sys.stderr)
    load_after = load_average()
    print(f"{started}, {build.name()}, kernel {os.uname().release}, {os.cpu_count()} CPUs ({cpu_model()}), "
          f"load average before {' '.join(load_before)}, after {' '.join(load_after)}; ndm_loopback_bench "
          f"--bytes {BYTES} per connection --cipher {CIPHER}, {ROUNDS} interleaved rounds\n")
    print(f"| configuration | goodput Gbit/s (median of {ROUNDS}) | all runs | CPU s/GB | "
          "connections per receiving endpoint | vs one connection on one CPU |")
    print("|---|---:|---|---:|---|---|")
    base = None
    for name, _ in configs:
        ok = [x for x in runs[name] if x]
        if not ok:
            print(f"| {name} | failed | | | | |")
            continue
        g = statistics.median(x["goodput_gbps"] for x in ok)
        c = statistics.median(x["cpu_s_per_gb"] for x in ok)
        base = base or (g, c)
        all_runs = ", ".join(f"{x['goodput_gbps']:.2f}" if x else "failed" for x in runs[name])
        placement = " ".join("/".join(str(k) for k in x["receiver_connections"]) for x in ok)
        print(f"| {name} | {g:.2f} | {all_runs} | {c:.2f} | {placement} | {g / base[0]:.2f}×, CPU/GB {c / base[1]:.2f}× |")


if __name__ == "__main__":
    main()
