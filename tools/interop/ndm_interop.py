#!/usr/bin/env python3
"""ndm-interop: the QUIC Interop Runner's matrix, run locally between ndm and ngtcp2.

For each case and direction (ndm client -> ngtcp2 server, ngtcp2 client ->
ndm server) it starts the server, an `ndm-emu relay` shaped as the case's
scenario, two loopback captures (dumpcap, one per leg), and the client; then it re-runs the
runner's checks over `tshark -T fields` of the capture, decrypted with the
endpoints' key logs, and compares every file byte for byte (sha256). Output:
a Markdown and a JSON matrix of pass / fail / unsupported per case and
direction, and the goodput measurement beside ngtcp2 against itself.

  python3 tools/interop/ndm_interop.py --build-dir build             # the whole matrix
  python3 tools/interop/ndm_interop.py --quick --cases handshake,retry
  python3 tools/interop/ndm_interop.py --update-doc docs/interop.md  # regenerates its matrix

Deliberate differences from the public runner (docs/interop.md): every case
runs over HTTP/3 (ALPN h3; Debian's ngtcp2 examples speak nothing else), the
network is ndm's emulator on loopback instead of ns-3 in Docker. Needs root (or dumpcap's capture
rights) for the capture. Exit status: 0 when no case failed, 1 when one did,
2 for bad arguments, 77 when a program it needs is missing.
"""

import argparse
import hashlib
import json
import os
import random
import re
import signal
import string
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as C  # noqa: E402
import peers  # noqa: E402
import trace_checks as T  # noqa: E402

BEGIN, END = "<!-- interop-matrix:begin -->", "<!-- interop-matrix:end -->"


def die(msg, code=2):
    print(f"ndm-interop: {msg}", file=sys.stderr)
    sys.exit(code)


def make_files(www, sizes, rng):
    names = []
    for size in sizes:
        name = "".join(rng.choice(string.ascii_lowercase) for _ in range(10))
        with open(os.path.join(www, name), "wb") as f:
            f.write(os.urandom(size))
        names.append(name)
    return names


def make_certs(openssl, directory, length):
    """A chain shaped as quic-interop-runner's certs.sh makes it: an RSA-2048 root, length-1
    intermediates and a leaf; cert.pem holds the leaf and the intermediates, priv.key the leaf's
    key. Unlike certs.sh, every certificate of the chain has the same key: what the cases look at
    is the chain's bytes (amplificationlimit wants 7500 of them), and one RSA key generation
    instead of ten saves seconds on a loaded machine."""
    os.makedirs(directory, exist_ok=True)
    conf = os.path.join(directory, "ext.cnf")
    key = os.path.join(directory, "priv.key")
    with open(conf, "w") as f:
        f.write("[v3_ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign,digitalSignature\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid:always,issuer\n"
                "[leaf]\nsubjectAltName=DNS:localhost,DNS:server,IP:127.0.0.1,IP:::1\n")

    def run(*args):
        subprocess.run([openssl, *args], check=True, capture_output=True)

    run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key)
    run("req", "-x509", "-sha256", "-days", "2", "-key", key, "-out", f"{directory}/cert_0.pem",
        "-subj", "/O=ndm interop root/", "-addext", "basicConstraints=critical,CA:TRUE")
    for i in range(1, length + 1):
        leaf = i == length
        subj = "/O=ndm interop leaf/" if leaf else f"/O=ndm interop intermediate {i}/"
        run("req", "-new", "-key", key, "-out", f"{directory}/c.csr", "-subj", subj)
        run("x509", "-req", "-sha256", "-days", "2", "-in", f"{directory}/c.csr", "-out", f"{directory}/cert_{i}.pem",
            "-CA", f"{directory}/cert_{i - 1}.pem", "-CAkey", key, "-set_serial", str(i),
            "-extfile", conf, "-extensions", "leaf" if leaf else "v3_ca")
    with open(f"{directory}/cert.pem", "w") as out:
        for i in range(length, 0, -1):
            with open(f"{directory}/cert_{i}.pem") as f:
                out.write(f.read())


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_files(www, downloads, names):
    got = set(os.listdir(downloads)) if os.path.isdir(downloads) else set()
    missing = [n for n in names if n not in got]
    extra = sorted(got - set(names))
    if missing or extra:
        return False, f"{len(missing)} of {len(names)} files missing, {len(extra)} unexpected"
    for n in names:
        if sha256(os.path.join(www, n)) != sha256(os.path.join(downloads, n)):
            return False, f"{n} differs"
    return True, f"{len(names)} files, sha256-identical"


def merged_keylog(run_dir, paths):
    out = os.path.join(run_dir, "keys.log")
    with open(out, "w") as o:
        for p in paths:
            if os.path.exists(p):
                with open(p) as f:
                    o.write(f.read())
    return out


def run_checks(case, traces, www, downloads, names, rc_note):
    results = []
    for name in case.checks:
        if name == "files":
            ok, detail = check_files(www, downloads, names)
        elif name == "handshakes":
            want = case.handshakes or len(names)
            n = T.handshakes(traces)
            ok, detail = n == want, f"{n} handshake{'s' if n != 1 else ''} (want {want})"
        elif name == "version":
            v = T.versions(traces)
            ok, detail = v == {1}, "versions " + (", ".join(f"0x{x:08x}" for x in sorted(v)) or "none")
        elif name == "no_retry":
            n = len(T.retries(traces))
            ok, detail = n == 0, f"{n} Retry packets (want none)"
        elif name == "goodput":
            continue  # a measurement, computed by the caller
        else:
            ok, detail = getattr(T, "check_" + name)(traces)
        results.append({"check": name, "ok": bool(ok), "detail": detail})
    if rc_note:
        results.append({"check": "exit", "ok": False, "detail": rc_note})
    return results


def unsupported_or_error(result, stderr):
    """An exit code 127: ndm-h3 interop's "not supported" when its line says so; anything else
    with 127 (a shell's command not found, a loader's missing library) is an error of the run."""
    lines = [line for line in stderr.strip().splitlines() if "is not supported" in line]
    if lines and lines[-1].startswith("ndm-h3: test case "):
        return dict(result, result="unsupported", reason="ndm-h3 interop exits 127: " + lines[-1][len("ndm-h3: "):])
    return dict(result, result="error", reason="exit 127 without ndm-h3's reason: " + stderr.strip()[-300:])


def relay_drops(relay_err, want):
    """The scenario's drops happened: the relay's statistics count the client's datagrams it dropped by number."""
    m = re.search(r"dropped by number \(--drop-up, --drop-down\): up (\d+)", relay_err)
    n = int(m.group(1)) if m else 0
    return {"check": "relay_drops", "ok": n == want, "detail": f"the relay dropped {n} of the client's datagrams "
            f"by number (want {want})"}


def run_one(args, tools, case, client, server, out_root, certs_cache, rep=0):
    tag = f"{case.name}-{client}-{server}" + (f"-{rep}" if rep else "")
    run_dir = os.path.join(out_root, tag)
    os.makedirs(run_dir, exist_ok=True)
    www, downloads, qlog = (os.path.join(run_dir, d) for d in ("www", "downloads", "qlog"))
    for d in (www, downloads, os.path.join(qlog, "client"), os.path.join(qlog, "server")):
        os.makedirs(d, exist_ok=True)
    rng = random.Random(f"{args.seed}-{tag}")
    names = make_files(www, case.sizes(args.quick), rng)
    if case.cert_chain not in certs_cache:
        certs_cache[case.cert_chain] = os.path.join(out_root, f"certs{case.cert_chain}")
        make_certs(tools.openssl, certs_cache[case.cert_chain], case.cert_chain)
    certs = certs_cache[case.cert_chain]
    addr = "::1" if case.ipv6 else "127.0.0.1"
    host = f"[{addr}]" if case.ipv6 else addr
    sport, rport = peers.free_udp_port(case.ipv6), peers.free_udp_port(case.ipv6)
    # One capture per leg: client <-> relay (the runner's client-side trace) and relay <-> server.
    legs = [os.path.join(run_dir, f"{leg}.pcapng") for leg in ("client-side", "server-side")]
    started = []
    result = {"case": case.name, "client": client, "server": server, "dir": run_dir}
    try:
        caps = [peers.Proc(f"dumpcap-{leg}", [tools.dumpcap, "-i", "lo", "-f", f"udp port {port}", "-w", path],
                           run_dir) for leg, port, path in zip(("client", "server"), (rport, sport), legs)]
        started += [(cap, signal.SIGINT) for cap in caps]
        for cap in caps:
            if not cap.wait_for("Capturing on"):
                return dict(result, result="error",
                            reason="dumpcap cannot capture on lo: " + cap.stderr().strip()[-200:])
        skeys, ckeys = os.path.join(run_dir, "server.keys"), os.path.join(run_dir, "client.keys")
        srv, ok = peers.start_server(tools, server, case.test_name(False), run_dir, addr, sport, www, certs, skeys,
                                     os.path.join(qlog, "server"))
        started.append((srv, signal.SIGTERM))
        if not ok:
            rc = srv.p.poll()
            if rc == 127:
                return unsupported_or_error(result, srv.stderr())
            return dict(result, result="fail", reason=f"the {server} server did not start: {srv.stderr()[-300:]}")
        relay_cmd = [tools.ndm_emu, "relay", "--listen", f"{host}:{rport}", "--to", f"{host}:{sport}", "--profile",
                     case.scenario, "--seed", str(args.seed), "--no-gso"]
        if case.drop_up:
            relay_cmd += ["--drop-up", case.drop_up]
        relay = peers.Proc("relay", relay_cmd, run_dir)
        started.append((relay, signal.SIGINT))
        if not relay.wait_for("ndm-emu relay:"):
            return dict(result, result="error", reason="ndm-emu relay did not start: " + relay.stderr()[-300:])
        urls = [f"https://{host}:{rport}/{n}" for n in names]
        codes, seconds = peers.run_client(tools, client, case.test_name(True), run_dir, urls, downloads, ckeys,
                                          os.path.join(qlog, "client"), case.timeout)
        result["seconds"] = round(seconds, 2)
        if client == "ndm" and codes == [127]:
            with open(os.path.join(run_dir, "client.err")) as f:
                return unsupported_or_error(result, f.read())
        time.sleep(0.1)  # the last ACKs and CONNECTION_CLOSE into the capture
    finally:
        for p, sig in reversed(started):
            p.stop(sig)
    bad = [c for c in codes if c != 0]
    rc_note = f"client exit codes {sorted(set(bad), key=str)}" if bad else ""
    keylog = merged_keylog(run_dir, [ckeys, skeys])
    traces = T.Traces(*T.read_legs(legs, keylog), rport, sport)
    checks = run_checks(case, traces, www, downloads, names, rc_note)
    if case.drop_up:
        checks.append(relay_drops(relay.stderr(), len(case.drop_up.split(","))))
    result["checks"] = checks
    result["result"] = "pass" if all(c["ok"] for c in checks) else "fail"
    if result["result"] == "fail":
        result["reason"] = "; ".join(f"{c['check']}: {c['detail']}" for c in checks if not c["ok"])
    if "goodput" in case.checks and result["result"] == "pass":
        result["goodput_mbps"] = T.goodput(traces, sum(case.sizes(args.quick)))
    if not args.keep and result["result"] == "pass":
        for d in (www, downloads):
            subprocess.run(["rm", "-rf", d], check=False)
        for f in legs:
            os.remove(f)
    return result


def ndm_probe_127(tools, case, out_root):
    """An unsupported case: ndm-h3 interop must exit 127 in each role, naming what it lacks."""
    reasons = []
    for role in ("client", "server"):
        env = dict(os.environ, ROLE=role, TESTCASE=case.test_name(role == "client"), REQUESTS="https://[::1]:1/x")
        r = subprocess.run([tools.ndm_h3, "interop", "--downloads", os.path.join(out_root, "none"), "--www", out_root,
                            "--certs", out_root], env=env, capture_output=True, text=True, timeout=20)
        reasons.append((role, r.returncode, r.stderr.strip()))
    return reasons


def cell(r):
    if r is None:
        return "—"
    if r["result"] == "pass":
        g = f", {r['goodput_mbps']:.2f} Mbit/s" if r.get("goodput_mbps") else ""
        return f"pass ({r.get('seconds', 0):.1f} s{g})"
    if r["result"] == "unsupported":
        return "unsupported"
    if r["result"] == "not run":
        return "not run"
    return f"**{r['result'].upper()}**"


GENERIC = ("handshakes", "version", "files", "no_retry")


def note(r):
    """A run's line in the matrix: why it failed or was not run, or what its own checks saw."""
    if r.get("reason"):
        return r["reason"]
    checks = r.get("checks") or []
    own = [c["detail"] for c in checks if c["check"] not in GENERIC]
    if own:
        return "; ".join(own)
    return "; ".join(c["detail"] for c in checks if c["check"] in ("handshakes", "files"))


def markdown(report):
    lines = [f"Run {report['date']} UTC, ndm at {report['ndm']}, ngtcp2 {report['ngtcp2']}"
             + (" (quick sizes)" if report["quick"] else "") + ".", "",
             "| case | ndm client → ngtcp2 server | ngtcp2 client → ndm server | what was checked, or why not |",
             "|---|---|---|---|"]
    by = {(r["case"], r["client"], r["server"]): r for r in report["results"]}
    for case in report["cases"]:
        a, b = by.get((case, "ndm", "ngtcp2")), by.get((case, "ngtcp2", "ndm"))
        notes = [(f"{r['client']} → {r['server']}", note(r)) for r in (a, b) if r is not None]
        if len({n for _, n in notes}) == 1:
            text = notes[0][1]
        else:
            text = " / ".join(f"{who}: {n}" for who, n in notes)
        lines.append(f"| {case} | {cell(a)} | {cell(b)} | {text.replace('|', '/')} |")
    if report.get("goodput"):
        lines += ["", "Goodput (the runner's measurement: a file over the 10 Mbit/s, 15 ms link; "
                  "8 × size / time from the server's first to its last 1-RTT packet, client side):", "",
                  "| client → server | runs | Mbit/s (mean) | min | max |", "|---|---|---|---|---|"]
        for g in report["goodput"]:
            v = g["mbps"]
            if v:
                lines.append(f"| {g['client']} → {g['server']} | {len(v)} | {sum(v) / len(v):.2f} | {min(v):.2f} | "
                             f"{max(v):.2f} |")
            else:
                lines.append(f"| {g['client']} → {g['server']} | 0 | — | — | — |")
    return "\n".join(lines) + "\n"


def source_commit():
    """The commit of the tree this script is in (git describe), as the matrix names ndm."""
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty", "--abbrev=12"], capture_output=True,
                       text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown commit"


def ngtcp2_version():
    """The installed ngtcp2-client package's version (gtlsclient has no --version)."""
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "ngtcp2-client"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line naming the problem, exit 2 (argparse would print the usage first)."""

    def error(self, message):
        die(message)


def parse_args(argv):
    ap = OneLineParser(prog="ndm-interop", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--build-dir", default="build", help="ndm's build directory (its tools/ndm-h3, tools/ndm-emu)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all); --list shows them")
    ap.add_argument("--directions", default="both", choices=["both", "ndm-client", "ndm-server"],
                    help="ndm-client: ndm client -> ngtcp2 server only; ndm-server: the other way")
    ap.add_argument("--quick", action="store_true", help="the CTest sizes: fewer and smaller files")
    ap.add_argument("--repetitions", type=int, default=0,
                    help="goodput runs per pair (default 3, 1 with --quick; the public runner does 5)")
    ap.add_argument("--seed", type=int, default=1, help="the relay's emulator seed and the file names' seed")
    ap.add_argument("--out", default="", help="directory for the runs (default: a new one under /tmp)")
    ap.add_argument("--json", default="", help="write the matrix as JSON into this file")
    ap.add_argument("--markdown", default="", help="write the matrix as Markdown into this file")
    ap.add_argument("--update-doc", default="", help=f"replace the matrix between {BEGIN} and {END} in this file")
    ap.add_argument("--keep", action="store_true", help="keep the files and captures of passing runs too")
    ap.add_argument("--from-json", default="", help="run nothing: write the matrix of an earlier run's --json file "
                    "(to --markdown, --update-doc)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    a = ap.parse_args(argv)
    if a.repetitions < 0 or a.repetitions > 20:
        ap.error(f"--repetitions {a.repetitions}: expected 0..20")
    return a


def main(argv):
    args = parse_args(argv)
    if args.list:
        for c in C.CASES:
            print(f"{c.name:20} {'unsupported: ' + c.unsupported if c.unsupported else c.scenario}")
        return 0
    if args.from_json:
        try:
            with open(args.from_json) as f:
                return write_outputs(args, json.load(f))
        except (OSError, ValueError, KeyError) as e:
            die(f"--from-json {args.from_json}: {e}")
    names = [n for n in args.cases.split(",") if n] or [c.name for c in C.CASES]
    unknown = [n for n in names if n not in C.BY_NAME]
    if unknown:
        die(f"--cases: unknown case {unknown[0]} (--list shows them)")
    tools = peers.Tools(os.path.abspath(args.build_dir))
    missing = tools.missing()
    if missing:
        print(f"ndm-interop: missing: {', '.join(missing)} (scripts/setup.sh installs them; --build-dir names ndm's)",
              file=sys.stderr)
        return 77
    out_root = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="ndm-interop-")
    os.makedirs(out_root, exist_ok=True)
    directions = C.DIRECTIONS if args.directions == "both" else (
        [C.DIRECTIONS[0]] if args.directions == "ndm-client" else [C.DIRECTIONS[1]])
    reps = args.repetitions or (1 if args.quick else 3)
    report = {"date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "quick": args.quick, "cases": names,
              "ndm": source_commit(), "ngtcp2": ngtcp2_version(),
              "results": [], "goodput": [], "out": out_root}
    certs = {}
    for name in names:
        case = C.BY_NAME[name]
        if case.unsupported:
            probe = ndm_probe_127(tools, case, out_root) if not case.measurement else []
            wrong = [f"{role}: exit {rc}" for role, rc, err in probe if rc != 127 or "is not supported" not in err]
            for client, server in directions:
                res = "fail" if wrong else ("not run" if case.measurement else "unsupported")
                reason = ("ndm-h3 interop did not exit 127: " + ", ".join(wrong)) if wrong else case.unsupported
                report["results"].append({"case": name, "client": client, "server": server, "result": res,
                                          "reason": reason})
            print(f"{name:20} {'unsupported' if not wrong else 'FAIL'}: {case.unsupported[:100]}", flush=True)
            continue
        pairs = list(directions) + ([C.BASELINE] if case.measurement else [])
        for client, server in pairs:
            runs = []
            for rep in range(reps if case.measurement else 1):
                r = run_one(args, tools, case, client, server, out_root, certs, rep)
                runs.append(r)
                print(f"{name:20} {client} -> {server}: {r['result']} {r.get('seconds', '')}"
                      f"{'  ' + r['reason'] if r.get('reason') else ''}", flush=True)
            if case.measurement:
                report["goodput"].append({"client": client, "server": server,
                                          "mbps": [r["goodput_mbps"] for r in runs if r.get("goodput_mbps")]})
            worst = next((r for r in runs if r["result"] != "pass"), runs[-1])
            if (client, server) != C.BASELINE:
                report["results"].append(worst)
    return write_outputs(args, report)


def write_outputs(args, report):
    """Prints the matrix, writes the files asked for; the exit status: 1 when a case failed."""
    md = markdown(report)
    print("\n" + md)
    if args.json and not args.from_json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    if args.update_doc:
        with open(args.update_doc) as f:
            doc = f.read()
        if BEGIN not in doc or END not in doc:
            die(f"--update-doc {args.update_doc}: no {BEGIN} ... {END} markers")
        head, rest = doc.split(BEGIN, 1)
        with open(args.update_doc, "w") as f:
            f.write(head + BEGIN + "\n" + md + END + rest.split(END, 1)[1])
    failed = [r for r in report["results"] if r["result"] in ("fail", "error")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
