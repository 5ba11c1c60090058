#!/usr/bin/env python3
"""Loopback goodput and CPU cost of ndm against its peers, interleaved in one run.

What a user runs (ndm-send -> ndm-recv), the in-process bench (bench/ndm_loopback_bench),
kernel TCP (iperf3), iperf3 UDP and ngtcp2 (Debian's gtlsserver/gtlsclient, HTTP/3 over
QUIC with TLS 1.3) on one machine, ROUNDS interleaved rounds (each round starts one
configuration later than the one before), medians reported, and the ratios taken between
medians of the same run. No impairment, one connection, 127.0.0.1.

    bench/peers.py [BUILD_DIR]     env: ROUNDS (>= 3, default 5), BYTES (ndm, default 1 GiB),
                                   SECONDS_IPERF (default 5), NGTCP2_BYTES (default 256 MiB),
                                   CIPHERS (default aes128-gcm,chacha20),
                                   BACKENDS (packet protection, e.g. gnutls,openssl,auto; default:
                                   the build's own choice, one row),
                                   BEFORE_BUILD (a second build to compare with, e.g. of an
                                   older commit; its rows are "before", BUILD_DIR's "after")

CIPHERS gives one CLI row per cipher suite for each build whose ndm-send and ndm-recv take
--cipher (older builds: one row, whatever they negotiate), the same for the in-process bench if
it takes --cipher, and one ngtcp2 row per suite (gtlsclient --ciphers). CIPHERS= (empty) runs
everything with its default suites. BACKENDS gives the CLI rows once per packet protection backend
(NDM_AEAD_BACKEND for both ndm-send and ndm-recv; docs/packet-protection.md) for builds whose
ndm-send -V names one, and prints each backend's ChaCha20-Poly1305 / AES-128-GCM goodput ratio. The CLI trusts ndm-recv's self-signed certificate with the
--pin it prints.

Installs iperf3, ngtcp2-client and ngtcp2-server from Debian when missing. Prints the machine
(kernel, CPUs, model, load before/after) and a Markdown table for bench/RESULTS.md.
"""
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
BEFORE_BUILD = os.environ.get("BEFORE_BUILD", "")
ROUNDS = int(os.environ.get("ROUNDS", "5"))
BYTES = int(os.environ.get("BYTES", str(1 << 30)))
SECONDS_IPERF = os.environ.get("SECONDS_IPERF", "5")  # iperf3 -t: whole seconds (0 would be "forever")
NGTCP2_BYTES = int(os.environ.get("NGTCP2_BYTES", str(256 << 20)))
CIPHERS = [c.strip() for c in os.environ.get("CIPHERS", "aes128-gcm,chacha20").split(",") if c.strip()]
BACKENDS = [b.strip() for b in os.environ.get("BACKENDS", "").split(",") if b.strip()]

# ndm's --cipher names -> how the table says them, and GnuTLS's name (gtlsclient --ciphers).
CIPHER_NAMES = {"aes128-gcm": "AES-128-GCM", "aes256-gcm": "AES-256-GCM", "chacha20": "ChaCha20-Poly1305"}
GNUTLS_CIPHERS = {"aes128-gcm": "AES-128-GCM", "aes256-gcm": "AES-256-GCM", "chacha20": "CHACHA20-POLY1305"}


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


def run_child(cmd, env=None):
    """Runs cmd to completion; returns (stdout, wall seconds, CPU seconds, exit code). A failure's
    stderr goes to ours."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            sys.stderr.write(f"peers: {os.path.basename(cmd[0])} exit {p.returncode}: "
                             f"{err.read().decode(errors='replace')[-300:]}\n")
    return out, time.monotonic() - t0, ru.ru_utime + ru.ru_stime, p.returncode


def load_average():
    """The 1, 5 and 15 minute load averages, printed with each run's table."""
    return open("/proc/loadavg").read().split()[:3]


def rotations(configs, rounds):
    """(round, order) for interleaved runs: every configuration once a round, each round starting
    one configuration later, so that drift in the machine's load spreads over all of them."""
    for n in range(rounds):
        shift = n % len(configs)
        yield n, configs[shift:] + configs[:shift]


def help_text(cmd):
    """What cmd prints for --help (stdout and stderr), to see which flags a build has."""
    p = subprocess.run(cmd + ["--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout


class Build:
    """One build directory: its tools, the commit it was built from, the flags it has."""

    def __init__(self, path, tag):
        self.path, self.tag = os.path.abspath(path), tag
        for exe in ("tools/ndm-send", "tools/ndm-recv", "bench/ndm_loopback_bench"):
            if not os.access(os.path.join(self.path, exe), os.X_OK):
                die(f"{self.path}/{exe} is missing: build first (scripts/build.sh)")
        send_help = help_text([self.exe("tools/ndm-send")])
        self.has_pin = "--pin" in send_help  # TLS: ndm-recv prints a self-signed certificate's --pin
        self.has_cipher = "--cipher" in send_help
        self.ciphers = (CIPHERS or [None]) if self.has_cipher else [None]
        # NDM_AEAD_BACKEND: builds whose -V says which library protects the packets.
        self.backends = (BACKENDS or [None]) if "library" in send_help and "protects" in send_help else [None]
        bench_help = help_text([self.exe("bench/ndm_loopback_bench")])
        self.bench_ciphers = (CIPHERS or [None]) if "--cipher" in bench_help else [None]
        # Its best path, as the CLI's: the sender's stream generated into the packets
        # (ndm-send's payload since 60ea620), the receiver's bytes taken in place.
        self.bench_api = ["--api", "generated"] if "generated" in bench_help else []
        self.commit = source_commit(self.path)

    def exe(self, name):
        return os.path.join(self.path, name)

    def name(self):
        return " ".join(x for x in (self.tag, f"@{self.commit}") if x)


def source_commit(build):
    """The short commit of the source tree a CMake build directory was configured from
    ("+changes" if that tree has uncommitted changes), or "?"."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            src = next(l.split("=", 1)[1].strip() for l in f if l.startswith("CMAKE_HOME_DIRECTORY:"))
        git = ["git", "-C", src]
        commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "-uno"], capture_output=True, text=True).stdout
        return commit + ("+changes" if dirty.strip() else "")
    except (OSError, StopIteration, subprocess.CalledProcessError):
        return "?"


def ndm_cli(build, cipher, amount=None, backend=None):
    """One ndm-send -> ndm-recv test; amount: ndm-send's arguments for how much to send and how
    (default -n BYTES); backend: NDM_AEAD_BACKEND for both. CPU per GB counts both processes over
    the bytes ndm-recv received."""
    port = free_port()
    suite = ["--cipher", cipher] if cipher else []
    env = dict(os.environ, NDM_AEAD_BACKEND=backend) if backend else None
    recv = subprocess.Popen([build.exe("tools/ndm-recv"), "-1", "-B", "127.0.0.1", "-p", str(port), *suite],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for _ in range(3):  # the banner: listening on ...
        recv.stdout.readline()
    trust = []
    if build.has_pin:  # then "TLS: self-signed certificate ..." and "clients trust it with: ndm-send --pin HEX ..."
        for line in recv.stdout:
            if "--pin" in line:
                trust = ["--pin", line.split("--pin", 1)[1].split()[0]]
                break
    out, _, send_cpu, rc = run_child([build.exe("tools/ndm-send"), "-c", "127.0.0.1", "-p", str(port),
                                      *(amount or ["-n", str(BYTES)]), "-J", *trust, *suite], env=env)
    if rc != 0:
        os.kill(recv.pid, signal.SIGKILL)  # not recv.kill(): its poll() would reap the pid wait4 needs
    recv.stdout.read()
    _, _, ru = os.wait4(recv.pid, 0)
    if rc != 0:
        return None
    doc = json.loads(out)
    received = doc["end"]["sum_received"]
    gbps = received["bits_per_second"] / 1e9
    return {"goodput_gbps": gbps, "cpu_s_per_gb": (send_cpu + ru.ru_utime + ru.ru_stime) / (received["bytes"] / 1e9),
            "io": doc["start"].get("io", "?")}


def ndm_inproc(build, cipher):
    suite = ["--cipher", cipher] if cipher else []
    out, _, _, rc = run_child([build.exe("bench/ndm_loopback_bench"), "--io", "uring", "--gso", "on",
                               "--bytes", str(BYTES), *build.bench_api, *suite])
    if rc != 0:
        return None
    d = json.loads(out)
    return {"goodput_gbps": d["goodput_gbps"], "cpu_s_per_gb": d["cpu_s_per_gb"]} if d.get("complete") else None


def iperf3(port, *args):
    out, _, _, rc = run_child(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", SECONDS_IPERF, "-J", *args])
    if rc != 0:
        return None
    end = json.loads(out)["end"]
    recv = end["sum_received"] if "sum_received" in end else end["sum"]
    gbytes = recv["bytes"] / 1e9 if "sum_received" in end else recv["bytes"] * (1 - recv["lost_percent"] / 100) / 1e9
    cpu = end["cpu_utilization_percent"]
    cpu_s = (cpu["host_total"] + cpu["remote_total"]) / 100 * recv["seconds"]
    return {"goodput_gbps": gbytes * 8 / recv["seconds"], "cpu_s_per_gb": cpu_s / gbytes}


def ngtcp2(server_pid, port, cipher):
    # The client offers only this suite; the server (default list) has all of them.
    suite = ([f"--ciphers=NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+{GNUTLS_CIPHERS[cipher]}"]
             if cipher else [])
    before = proc_cpu(server_pid)
    _, wall, cpu, rc = run_child(["gtlsclient", "-q", "--no-quic-dump", "--no-http-dump",
                                  "--exit-on-all-streams-close", "--max-data=64M",
                                  "--max-stream-data-bidi-local=32M", *suite, "127.0.0.1", str(port),
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


@dataclass
class Row:
    kind: str  # cli, inproc, tcp, udp, ngtcp2
    label: str
    run: Callable[[], Optional[dict]]
    build: Optional[Build] = None
    cipher: Optional[str] = None
    backend: Optional[str] = None


def suite_text(cipher, build=None):
    """How a row names its cipher suite: its own, or what a build without one negotiates."""
    if cipher:
        return CIPHER_NAMES.get(cipher, cipher)
    if build and not build.has_cipher:
        return ""  # a build without --cipher: whatever it does (before packet protection: nothing)
    return "default suites (ndm prefers AES-128-GCM)" if build else "default suites"


def rows_for(builds, iperf_port, ng):
    ng_proc, ng_port = ng

    def suite(b, c):
        text = suite_text(c, b) if len(builds) > 1 or c else ""
        return f", {text}" if text else ""

    rows = []
    for b in builds:
        for c in b.ciphers:
            for k in b.backends:
                via = f", NDM_AEAD_BACKEND={k}" if k else ""
                rows.append(Row("cli", f"ndm-send → ndm-recv {b.name()}{suite(b, c)}{via} (the CLI, GSO/GRO, 1452 B)",
                                lambda b=b, c=c, k=k: ndm_cli(b, c, backend=k), b, c, k))
    for b in builds:
        for c in b.bench_ciphers:
            rows.append(Row("inproc", f"ndm in-process bench {b.name()}{suite(b, c)} (ndm_loopback_bench{' --api generated' if b.bench_api else ''}, "
                            "io_uring, GSO/GRO, 1452 B)", lambda b=b, c=c: ndm_inproc(b, c), b, c))
    rows.append(Row("tcp", "kernel TCP (iperf3)", lambda: iperf3(iperf_port)))
    rows.append(Row("udp", "iperf3 UDP, 1400 B, -b 0 (received)",
                    lambda: iperf3(iperf_port, "-u", "-b", "0", "-l", "1400")))
    for c in CIPHERS or [None]:
        rows.append(Row("ngtcp2", f"ngtcp2 gtlsserver → gtlsclient (HTTP/3, TLS 1.3, {suite_text(c)})",
                        lambda c=c: ngtcp2(ng_proc.pid, ng_port, c), cipher=c))
    return rows


def ratio(a, b, what):
    """"what: goodput 0.50×, CPU per GB 2.00× (+1.23 s/GB)" between two (goodput, CPU/GB) medians."""
    return (f"- {what}: goodput {a[0] / b[0]:.2f}×, CPU per GB {a[1] / b[1]:.2f}× "
            f"({a[1] - b[1]:+.2f} s/GB)")


def print_ratios(rows, med):
    def find(kind, build=None, cipher=None, any_cipher=False):
        for r in rows:
            if r.kind == kind and r.build is build and (any_cipher or r.cipher == cipher) and id(r) in med:
                return r
        return None

    before = next((r.build for r in rows if r.build and r.build.tag == "before"), None)
    after = next((r.build for r in rows if r.build and r.build.tag == "after"), None)
    if before and after:
        for kind, what in (("cli", "ndm CLI"), ("inproc", "ndm in-process bench")):
            b = find(kind, before, any_cipher=True)
            for a in (r for r in rows if r.kind == kind and r.build is after and id(r) in med):
                if b:
                    print(ratio(med[id(a)], med[id(b)], f"{what} after / before, {suite_text(a.cipher, a.build)}"))
    ngtcp2_default = find("ngtcp2", cipher=CIPHERS[0] if CIPHERS else None)
    for cli in (r for r in rows if r.kind == "cli" and id(r) in med):
        name = f"ndm CLI {cli.build.name()}" + (f", {suite_text(cli.cipher)}" if cli.cipher else "")
        peers = [(find("inproc", cli.build, cli.cipher) or find("inproc", cli.build, any_cipher=True),
                  "its in-process bench"),
                 (find("tcp"), "kernel TCP"), (find("udp"), "iperf3 UDP"),
                 (find("ngtcp2", cipher=cli.cipher) or ngtcp2_default, "ngtcp2")]
        for peer, peer_name in peers:
            if peer:
                suite = f" ({suite_text(peer.cipher)})" if peer.kind == "ngtcp2" else ""
                print(ratio(med[id(cli)], med[id(peer)], f"{name} / {peer_name}{suite}"))


def print_backend_ratios(rows, med):
    """Per build and backend: ChaCha20-Poly1305 against AES-128-GCM, and against ngtcp2's ChaCha20."""
    def cli(build, cipher, backend):
        return next((r for r in rows if r.kind == "cli" and r.build is build and r.cipher == cipher
                     and r.backend == backend and id(r) in med), None)

    ng = next((r for r in rows if r.kind == "ngtcp2" and r.cipher == "chacha20" and id(r) in med), None)
    for build in {id(r.build): r.build for r in rows if r.kind == "cli"}.values():
        for backend in build.backends:
            chacha, aes = cli(build, "chacha20", backend), cli(build, "aes128-gcm", backend)
            name = f"ndm CLI {build.name()}" + (f", NDM_AEAD_BACKEND={backend}" if backend else "")
            if chacha and aes:
                print(ratio(med[id(chacha)], med[id(aes)], f"{name}: ChaCha20-Poly1305 / AES-128-GCM"))
            if chacha and ng:
                print(ratio(med[id(chacha)], med[id(ng)], f"{name}: ChaCha20-Poly1305 / ngtcp2's ChaCha20-Poly1305"))


def print_summary(rows, med):
    """The table of bench/RESULTS.md's "Loopback goodput": each metric of the current build against the peers."""
    def find(kind, cipher=None, any_cipher=False):
        for r in rows:
            if (r.kind == kind and (r.build is None or r.build.tag != "before")
                    and (any_cipher or r.cipher == cipher) and id(r) in med):
                return r
        return None

    def cell(r, i):
        return f"{med[id(r)][i]:.2f}" if r else "—"

    print("| metric | ndm | kernel TCP | ngtcp2 | iperf3 UDP | ratio |")
    print("|---|---|---|---|---|---|")
    tcp, udp = find("tcp"), find("udp")
    for cli in (r for r in rows if r.kind == "cli" and id(r) in med and r.build.tag != "before"):
        suite = suite_text(cli.cipher) or "default suites"
        ng = find("ngtcp2", cli.cipher) or find("ngtcp2", any_cipher=True)
        inproc = find("inproc", cli.cipher) or find("inproc", any_cipher=True)
        for i, metric, better in ((0, "goodput Gbit/s", "higher"), (1, "CPU s/GB (both sides)", "lower")):
            parts = [f"{med[id(cli)][i] / med[id(p)][i]:.2f}× {name}" for p, name in
                     ((tcp, "TCP"), (ng, "ngtcp2"), (udp, "UDP"), (inproc, "in-process")) if p]
            print(f"| {metric}, ndm-send → ndm-recv, {suite} ({better} is better) | {cell(cli, i)} | "
                  f"{cell(tcp, i)} | {cell(ng, i)} | {cell(udp, i)} | {', '.join(parts)} |")
    print()


def main():
    if ROUNDS < 3:
        die("ROUNDS must be at least 3 (medians of interleaved runs)")
    if not SECONDS_IPERF.isdigit() or int(SECONDS_IPERF) < 1:
        die("SECONDS_IPERF must be a whole number of seconds, at least 1")
    for c in CIPHERS:
        if c not in CIPHER_NAMES:
            die(f"CIPHERS: unknown suite {c!r} (known: {', '.join(CIPHER_NAMES)})")
    for k in BACKENDS:
        if k not in ("gnutls", "openssl", "auto"):
            die(f"BACKENDS: unknown backend {k!r} (known: gnutls, openssl, auto)")
    builds = [Build(BUILD, "after" if BEFORE_BUILD else "")]
    if BEFORE_BUILD:
        builds.insert(0, Build(BEFORE_BUILD, "before"))
    ensure_packages()
    with tempfile.TemporaryDirectory() as tmp:
        iperf, iperf_port, ng, ng_port = start_servers(tmp)
        rows = rows_for(builds, iperf_port, (ng, ng_port))
        runs = {id(r): [] for r in rows}
        load_before = load_average()
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        try:
            for n, order in rotations(rows, ROUNDS):
                print(f"peers: round {n + 1}/{ROUNDS}", file=sys.stderr)
                for r in order:
                    res = r.run()
                    runs[id(r)].append(res)
                    print(f"peers:   {r.label}: {res}", file=sys.stderr)
        finally:
            iperf.kill()
            ng.kill()
        load_after = load_average()
    cli_io = sorted({x["io"] for r in rows if r.kind == "cli" for x in runs[id(r)] if x})
    print(f"{started}, kernel {os.uname().release}, {os.cpu_count()} CPUs ({cpu_model()}), "
          f"load average before {' '.join(load_before)}, after {' '.join(load_after)}; "
          f"ndm {BYTES >> 20} MiB per run (CLI I/O: {', '.join(cli_io) or '?'}), iperf3 {SECONDS_IPERF} s, "
          f"ngtcp2 {NGTCP2_BYTES >> 20} MiB; {ROUNDS} interleaved rounds\n")
    med = {}
    print(f"| configuration | goodput Gbit/s (median of {ROUNDS}) | all runs | CPU s/GB (both sides) |")
    print("|---|---|---|---|")
    for r in rows:
        ok = [x for x in runs[id(r)] if x]
        if not ok:
            print(f"| {r.label} | failed | | |")
            continue
        g = statistics.median(x["goodput_gbps"] for x in ok)
        c = statistics.median(x["cpu_s_per_gb"] for x in ok)
        med[id(r)] = (g, c)
        all_runs = ", ".join(f"{x['goodput_gbps']:.2f}" if x else "failed" for x in runs[id(r)])
        print(f"| {r.label} | {g:.2f} | {all_runs} | {c:.2f} |")
    print()
    print_summary(rows, med)
    print_ratios(rows, med)
    print_backend_ratios(rows, med)


if __name__ == "__main__":
    main()
