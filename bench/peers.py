#!/usr/bin/env python3
"""Loopback goodput and CPU cost of ndm against its peers, interleaved in one run.

What a user runs (ndm-send -> ndm-recv), the in-process bench (bench/ndm_loopback_bench),
kernel TCP (iperf3), iperf3 UDP and ngtcp2 (Debian's gtlsserver/gtlsclient, HTTP/3 over
QUIC with TLS 1.3) on one machine, ROUNDS interleaved rounds, medians reported, and the
ratios taken between medians of the same run. No impairment, one connection, 127.0.0.1.

    bench/peers.py [BUILD_DIR]     env: ROUNDS (>= 3, default 5), BYTES (ndm, default 1 GiB),
                                   SECONDS_IPERF (default 5), NGTCP2_BYTES (default 256 MiB)

Installs iperf3, ngtcp2-client and ngtcp2-server from Debian when missing. Prints the machine
(kernel, CPUs, model, load before/after) and a Markdown table for bench/RESULTS.md.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
BYTES = int(os.environ.get("BYTES", str(1 << 30)))
SECONDS_IPERF = float(os.environ.get("SECONDS_IPERF", "5"))
NGTCP2_BYTES = int(os.environ.get("NGTCP2_BYTES", str(256 << 20)))


def die(msg):
    print(f"peers: {msg}", file=sys.stderr)
    sys.exit(2)


def ensure_packages():
    need = [p for cmd, p in (("iperf3", "iperf3"), ("gtlsclient", "ngtcp2-client"),
                             ("/usr/sbin/gtlsserver", "ngtcp2-server"), ("openssl", "openssl"))
            if not shutil.which(cmd)]
    if need:
        print(f"peers: installing {' '.join(need)} (Debian packages)", file=sys.stderr)
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run(sudo + ["apt-get", "install", "-y", "-qq"] + need, check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_cpu(pid):
    """User + system CPU seconds of a running process (from /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_child(cmd):
    """Runs cmd to completion; returns (stdout, wall seconds, CPU seconds, exit code)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return out, time.monotonic() - t0, ru.ru_utime + ru.ru_stime, p.returncode


def ndm_cli():
    port = free_port()
    recv = subprocess.Popen([f"{BUILD}/tools/ndm-recv", "-1", "-B", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    recv.stdout.readline()  # the banner: listening
    recv.stdout.readline()
    out, _, send_cpu, rc = run_child([f"{BUILD}/tools/ndm-send", "-c", "127.0.0.1", "-p", str(port),
                                      "-n", str(BYTES), "-J"])
    recv.stdout.read()
    _, _, ru = os.wait4(recv.pid, 0)
    if rc != 0:
        return None
    end = json.loads(out)["end"]
    gbps = end["sum_received"]["bits_per_second"] / 1e9
    return {"goodput_gbps": gbps, "cpu_s_per_gb": (send_cpu + ru.ru_utime + ru.ru_stime) / (BYTES / 1e9)}


def ndm_inproc():
    out, _, _, rc = run_child([f"{BUILD}/bench/ndm_loopback_bench", "--io", "uring", "--gso", "on",
                               "--bytes", str(BYTES)])
    if rc != 0:
        return None
    d = json.loads(out)
    return {"goodput_gbps": d["goodput_gbps"], "cpu_s_per_gb": d["cpu_s_per_gb"]} if d.get("complete") else None


def iperf3(port, *args):
    out, _, _, rc = run_child(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(SECONDS_IPERF), "-J", *args])
    if rc != 0:
        return None
    end = json.loads(out)["end"]
    recv = end["sum_received"] if "sum_received" in end else end["sum"]
    gbytes = recv["bytes"] / 1e9 if "sum_received" in end else recv["bytes"] * (1 - recv["lost_percent"] / 100) / 1e9
    cpu = end["cpu_utilization_percent"]
    cpu_s = (cpu["host_total"] + cpu["remote_total"]) / 100 * recv["seconds"]
    return {"goodput_gbps": gbytes * 8 / recv["seconds"], "cpu_s_per_gb": cpu_s / gbytes}


def ngtcp2(server_pid, port):
    before = proc_cpu(server_pid)
    _, wall, cpu, rc = run_child(["gtlsclient", "-q", "--no-quic-dump", "--no-http-dump",
                                  "--exit-on-all-streams-close", "--max-data=64M",
                                  "--max-stream-data-bidi-local=32M", "127.0.0.1", str(port),
                                  f"https://127.0.0.1:{port}/blob"])
    if rc != 0:
        return None
    cpu += proc_cpu(server_pid) - before
    gb = NGTCP2_BYTES / 1e9
    return {"goodput_gbps": gb * 8 / wall, "cpu_s_per_gb": cpu / gb}


def start_servers(tmp):
    iperf_port = free_port()
    iperf = subprocess.Popen(["iperf3", "-s", "-p", str(iperf_port)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    key, cert = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(tmp, "blob"), "wb") as f:
        f.truncate(NGTCP2_BYTES)
    ng_port = free_port()
    ng = subprocess.Popen(["/usr/sbin/gtlsserver", "-q", "--no-quic-dump", "--no-http-dump", "-d", tmp,
                           "--max-data=64M", "--max-stream-data-bidi-remote=32M",
                           "127.0.0.1", str(ng_port), key, cert],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return iperf, iperf_port, ng, ng_port


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


LABELS = {
    "ndm-cli": "ndm-send → ndm-recv (the CLI, io_uring, GSO/GRO, 1452 B)",
    "ndm-inproc": "ndm in-process bench (ndm_loopback_bench, io_uring, GSO/GRO, 1452 B)",
    "tcp": "kernel TCP (iperf3)",
    "udp": "iperf3 UDP, 1400 B, -b 0 (received)",
    "ngtcp2": "ngtcp2 gtlsserver → gtlsclient (HTTP/3, TLS 1.3)",
}


def main():
    if ROUNDS < 3:
        die("ROUNDS must be at least 3 (medians of interleaved runs)")
    for exe in ("tools/ndm-send", "tools/ndm-recv", "bench/ndm_loopback_bench"):
        if not os.access(os.path.join(BUILD, exe), os.X_OK):
            die(f"{BUILD}/{exe} is missing: build first (scripts/build.sh)")
    ensure_packages()
    runs = {k: [] for k in LABELS}
    with tempfile.TemporaryDirectory() as tmp:
        iperf, iperf_port, ng, ng_port = start_servers(tmp)
        load_before = open("/proc/loadavg").read().split()[:3]
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        try:
            for r in range(ROUNDS):
                print(f"peers: round {r + 1}/{ROUNDS}", file=sys.stderr)
                for name, fn in (("ndm-cli", ndm_cli), ("ndm-inproc", ndm_inproc),
                                 ("tcp", lambda: iperf3(iperf_port)),
                                 ("udp", lambda: iperf3(iperf_port, "-u", "-b", "0", "-l", "1400")),
                                 ("ngtcp2", lambda: ngtcp2(ng.pid, ng_port))):
                    res = fn()
                    runs[name].append(res)
                    print(f"peers:   {name}: {res}", file=sys.stderr)
        finally:
            iperf.kill()
            ng.kill()
        load_after = open("/proc/loadavg").read().split()[:3]
    print(f"{started}, kernel {os.uname().release}, {os.cpu_count()} CPUs ({cpu_model()}), "
          f"load average before {' '.join(load_before)}, after {' '.join(load_after)}; "
          f"ndm {BYTES >> 20} MiB per run, iperf3 {SECONDS_IPERF:g} s, ngtcp2 {NGTCP2_BYTES >> 20} MiB\n")
    med = {}
    print(f"| configuration | goodput Gbit/s (median of {ROUNDS}) | all runs | CPU s/GB (both sides) |")
    print("|---|---|---|---|")
    for name, label in LABELS.items():
        ok = [x for x in runs[name] if x]
        if not ok:
            print(f"| {label} | failed | | |")
            continue
        g = statistics.median(x["goodput_gbps"] for x in ok)
        c = statistics.median(x["cpu_s_per_gb"] for x in ok)
        med[name] = (g, c)
        all_runs = ", ".join(f"{x['goodput_gbps']:.2f}" if x else "failed" for x in runs[name])
        print(f"| {label} | {g:.2f} | {all_runs} | {c:.2f} |")
    print()
    for name in ("ndm-inproc", "tcp", "udp", "ngtcp2"):
        if "ndm-cli" in med and name in med:
            print(f"- ndm CLI / {name}: goodput {med['ndm-cli'][0] / med[name][0]:.2f}×, "
                  f"CPU per GB {med['ndm-cli'][1] / med[name][1]:.2f}×")


if __name__ == "__main__":
    main()
