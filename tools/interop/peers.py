"""Processes of one run: the capture (dumpcap), the relay (ndm-emu relay), and the two endpoints
(ndm-h3 interop, or ngtcp2's gtlsserver / gtlsclient with the flags ngtcp2's own
interop/run_endpoint.sh gives them per case). Each process writes its output
into the run's directory; only processes started here are ever signalled, by pid."""

import os
import shutil
import signal
import socket
import subprocess
import time

GNUTLS_CHACHA20 = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305"


class Proc:
    def __init__(self, name, cmd, run_dir, env=None):
        self.name = name
        self.cmd = cmd
        self.out_path = os.path.join(run_dir, f"{name}.out")
        self.err_path = os.path.join(run_dir, f"{name}.err")
        full_env = dict(os.environ)
        full_env.update(env or {})
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.p = subprocess.Popen(cmd, stdout=out, stderr=err, env=full_env, stdin=subprocess.DEVNULL)

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def wait_for(self, text, timeout=10.0):
        """True once `text` appears on its standard error (False if it exits or the time runs out)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.stderr():
                return True
            if self.p.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def wait(self, timeout):
        """Its exit code; None when it ran out of time (then it is killed). Interrupted (Ctrl-C), it is
        stopped before the interruption goes on."""
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(signal.SIGKILL)
            return None
        except KeyboardInterrupt:
            self.stop(signal.SIGKILL)
            raise

    def stop(self, sig=signal.SIGTERM, grace=5.0):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def free_udp_port(ipv6=False):
    fam = socket.AF_INET6 if ipv6 else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.bind(("::1" if ipv6 else "127.0.0.1", 0))
        return s.getsockname()[1]


def udp_bound(port, ipv6=False):
    """True when something listens on this UDP port (our bind fails)."""
    fam = socket.AF_INET6 if ipv6 else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("::1" if ipv6 else "127.0.0.1", port))
        except OSError:
            return True
    return False


def wait_udp(port, ipv6, proc, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.p.poll() is None:
        if udp_bound(port, ipv6):
            return True
        time.sleep(0.02)
    return False


class Tools:
    """Where the programs are: ndm's from the build directory, the rest from PATH."""

    def __init__(self, build_dir):
        self.ndm_h3 = os.path.join(build_dir, "tools", "ndm-h3")
        self.ndm_emu = os.path.join(build_dir, "tools", "ndm-emu")
        self.gtlsclient = shutil.which("gtlsclient")
        self.gtlsserver = shutil.which("gtlsserver") or ("/usr/sbin/gtlsserver" if os.access(
            "/usr/sbin/gtlsserver", os.X_OK) else None)
        self.dumpcap = shutil.which("dumpcap")
        self.tshark = shutil.which("tshark")
        self.openssl = shutil.which("openssl")

    def missing(self):
        need = {"ndm-h3": self.ndm_h3 if os.access(self.ndm_h3, os.X_OK) else None,
                "ndm-emu": self.ndm_emu if os.access(self.ndm_emu, os.X_OK) else None,
                "gtlsclient (ngtcp2-client)": self.gtlsclient, "gtlsserver (ngtcp2-server)": self.gtlsserver,
                "dumpcap (Wireshark's)": self.dumpcap, "tshark": self.tshark, "openssl": self.openssl}
        return [k for k, v in need.items() if not v]


def handshake_timeout(case_test):
    """The runner bounds each case (60 s; 300 s for multiconnect's 50 handshakes), so ngtcp2's 10 s
    handshake timeout must not end one first: amplificationlimit's dropped datagrams leave the
    handshake to the client's PTO backoff, and 30 % loss each way can hold one past 10 s."""
    return "--handshake-timeout=180s" if case_test == "multiconnect" else "--handshake-timeout=60s"


def start_server(tools, who, case_test, run_dir, addr, port, www, certs, keylog, qlog_dir):
    env = {"SSLKEYLOGFILE": keylog}
    if who == "ndm":
        env.update({"ROLE": "server", "TESTCASE": case_test, "QLOGDIR": qlog_dir})
        cmd = [tools.ndm_h3, "interop", "--www", www, "--certs", certs, "-B", addr, "-p", str(port), "--no-gso"]
        p = Proc("server", cmd, run_dir, env)
        ok = p.wait_for("serving")
    else:
        cmd = [tools.gtlsserver, "-q", "--max-gso-dgrams=1", "--timeout=60s", "-d", www, f"--qlog-dir={qlog_dir}"]
        if case_test == "retry":
            cmd.append("-V")
        if case_test == "ecn":  # its PMTUD probes leave not-ECT (ngtcp2's interop/run_endpoint.sh does the same)
            cmd.append("--no-pmtud")
        cmd.append(handshake_timeout(case_test))
        cmd += [addr, str(port), os.path.join(certs, "priv.key"), os.path.join(certs, "cert.pem")]
        p = Proc("server", cmd, run_dir, env)
        ok = wait_udp(port, ":" in addr, p)
    return p, ok


def run_client(tools, who, case_test, run_dir, urls, downloads, keylog, qlog_dir, timeout):
    """Runs the client to its end; returns (exit codes, seconds)."""
    env = {"SSLKEYLOGFILE": keylog}
    start = time.monotonic()
    codes = []
    if who == "ndm":
        env.update({"ROLE": "client", "TESTCASE": case_test, "REQUESTS": " ".join(urls), "QLOGDIR": qlog_dir})
        p = Proc("client", [tools.ndm_h3, "interop", "--downloads", downloads, "--no-gso"], run_dir, env)
        codes.append(p.wait(timeout))
        return codes, time.monotonic() - start
    host = urls[0].split("//", 1)[1].split("/", 1)[0]
    addr, port = host.rsplit(":", 1)
    addr = addr.strip("[]")
    base = [tools.gtlsclient, "-q", "--exit-on-all-streams-close", f"--download={downloads}", "--timeout=60s",
            f"--qlog-dir={qlog_dir}"]
    if case_test == "chacha20":
        base.append(f"--ciphers={GNUTLS_CHACHA20}")
    if case_test == "ecn":
        base.append("--no-pmtud")
    if case_test == "keyupdate":
        base += ["--delay-stream=10ms", "--key-update=1ms"]
    base.append(handshake_timeout(case_test))
    if case_test == "multiconnect":
        for i, url in enumerate(urls):
            left = timeout - (time.monotonic() - start)
            p = Proc(f"client{i}", base + [addr, port, url], run_dir, env)
            codes.append(p.wait(max(left, 1)))
        return codes, time.monotonic() - start
    p = Proc("client", base + [addr, port] + urls, run_dir, env)
    codes.append(p.wait(timeout))
    return codes, time.monotonic() - start
