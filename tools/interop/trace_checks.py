"""The runner's trace checks over `tshark -T fields` (quic-interop-runner's trace.py and
testcases_quic.py's check() methods, re-implemented on Wireshark's field output).

Two captures, one per leg of the relay: client <-> relay (the runner's
client-side trace, "trace_node_left") and relay <-> server (its server-side
trace, "trace_node_right"). Each datagram is one row; a datagram that
coalesces several QUIC packets gives each long-header field once per packet,
in order, so the long header fields of one row line up with each other.
"""

import os
import subprocess
from dataclasses import dataclass, field

FIELDS = [
    "frame.time_epoch", "udp.srcport", "udp.dstport", "udp.length", "ip.src", "ip.dsfield.ecn",
    "ipv6.tclass.ecn", "quic.long.packet_type", "quic.version", "quic.scid", "quic.token_length", "quic.token",
    "quic.retry_token", "quic.short", "quic.key_phase", "tls.handshake.type", "tls.handshake.ciphersuite",
    "quic.ack.ect0_count", "quic.ack.ect1_count", "quic.crypto.offset", "quic.crypto.length",
    "tls.quic.parameter.initial_max_streams_bidi",
]
INITIAL, ZERO_RTT, HANDSHAKE, RETRY = 0, 1, 2, 3


@dataclass
class Datagram:
    time: float
    src: int
    dst: int
    size: int            # UDP payload bytes
    ipv4: bool
    ecn: int             # the IP header's two ECN bits
    long: list           # one dict per long-header packet: type, version, scid, token_length, token
    short: bool
    key_phases: list
    tls_types: list
    ciphersuites: list
    ack_ecn: bool
    crypto_end: int      # largest CRYPTO offset + length
    crypto_offsets: list
    max_streams_bidi: list
    retry_tokens: list


def _ints(text):
    out = []
    for v in text.split(","):
        v = v.strip()
        if not v:
            continue
        if v in ("True", "False"):
            out.append(1 if v == "True" else 0)
        else:
            out.append(int(v, 0))
    return out


def _strs(text):
    return [v for v in text.split(",") if v]


def read_legs(pcaps, keylog):
    """The datagrams of each leg's capture, decrypted with `keylog`; the tshark processes run at
    once, each into a file beside its capture (most of a tshark run is its start-up).

    Each leg is captured into a file of its own: a capture of both legs
    holds every packet twice, with the same connection IDs, and Wireshark's
    QUIC dissector then ties the two legs into one connection and fails to
    decrypt their 1-RTT packets ("Missing TLS handshake")."""
    procs = []
    for pcap in pcaps:
        with open(pcap + ".tsv", "w") as out:
            procs.append(subprocess.Popen(tshark_command(pcap, keylog), stdout=out, stderr=subprocess.DEVNULL))
    rows = []
    for p, pcap in zip(procs, pcaps):
        if p.wait() != 0:
            raise RuntimeError(f"tshark could not read {pcap} (exit {p.returncode})")
        with open(pcap + ".tsv") as f:
            rows.append(parse(f.read()))
        os.remove(pcap + ".tsv")
    return rows


def tshark_command(pcap, keylog):
    """tshark printing FIELDS, one datagram a line."""
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    if keylog:
        cmd += ["-o", f"tls.keylog_file:{keylog}"]
    for f in FIELDS:
        cmd += ["-e", f]
    return cmd


def parse(out):
    rows = []
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("\t") + [""] * len(FIELDS)))
        types, versions, scids = _ints(v["quic.long.packet_type"]), _strs(v["quic.version"]), _strs(v["quic.scid"])
        token_lengths = _ints(v["quic.token_length"])
        longs = []
        ti = 0
        for i, t in enumerate(types):
            p = {"type": t, "version": versions[i] if i < len(versions) else "",
                 "scid": scids[i] if i < len(scids) else ""}
            if t == INITIAL:  # only Initial packets carry a token length
                p["token_length"] = token_lengths[ti] if ti < len(token_lengths) else 0
                ti += 1
            longs.append(p)
        tokens = _strs(v["quic.token"])
        for p in longs:
            if p.get("token_length"):
                p["token"] = tokens.pop(0) if tokens else ""
        offsets, lengths = _ints(v["quic.crypto.offset"]), _ints(v["quic.crypto.length"])
        ecn = _ints(v["ip.dsfield.ecn"] or v["ipv6.tclass.ecn"])
        rows.append(Datagram(
            time=float(v["frame.time_epoch"]), src=int(v["udp.srcport"]), dst=int(v["udp.dstport"]),
            size=int(v["udp.length"]) - 8, ipv4=v["ip.src"] != "", ecn=ecn[0] if ecn else 0, long=longs,
            short=v["quic.short"] != "", key_phases=_ints(v["quic.key_phase"]), tls_types=_ints(v["tls.handshake.type"]),
            ciphersuites=_ints(v["tls.handshake.ciphersuite"]),
            ack_ecn=v["quic.ack.ect0_count"] != "" or v["quic.ack.ect1_count"] != "",
            crypto_end=max((o + n for o, n in zip(offsets, lengths)), default=0), crypto_offsets=offsets,
            max_streams_bidi=_ints(v["tls.quic.parameter.initial_max_streams_bidi"]),
            retry_tokens=_strs(v["quic.retry_token"])))
    return rows


@dataclass
class Traces:
    """The client-side and server-side traces of one run: datagrams of each leg."""
    client_leg: list     # client <-> relay
    server_leg: list     # relay <-> server
    relay_port: int      # the relay's listen port (the client's peer)
    server_port: int
    notes: list = field(default_factory=list)

    def client_sent(self):
        return [d for d in self.client_leg if d.dst == self.relay_port]

    def server_sent_client_side(self):
        return [d for d in self.client_leg if d.src == self.relay_port]

    def server_sent(self):
        return [d for d in self.server_leg if d.src == self.server_port]


def handshakes(t: Traces) -> int:
    """Distinct source connection IDs of the server's Initial packets (testcase.py _count_handshakes)."""
    return len({p["scid"] for d in t.server_sent() for p in d.long if p["type"] == INITIAL})


def versions(t: Traces) -> set:
    return {int(p["version"], 0) for d in t.server_sent() for p in d.long if p["type"] == INITIAL and p["version"]}


def retries(t: Traces) -> list:
    return [tok for d in t.server_sent_client_side() for p in d.long if p["type"] == RETRY
            for tok in (d.retry_tokens or [""])]


def check_retry(t: Traces):
    tokens = [x.replace(":", "") for x in retries(t)]
    if not tokens:
        return False, "no Retry packet"
    if "" in tokens:
        return False, "a Retry packet without a token"
    for d in t.client_sent():
        for p in d.long:
            if p["type"] == INITIAL and p.get("token", "").replace(":", "") in tokens:
                return True, f"{len(tokens)} Retry, the client's next Initial carries its token"
    return False, "no client Initial carries the Retry's token"


def check_client_hellos(t: Traces):
    """The runner counts Initial packets whose CRYPTO frames tshark shows as a ClientHello; tshark 4.0
    dissects a retransmitted CRYPTO range once only, so count the client's Initial-only datagrams
    carrying CRYPTO data from offset 0 (the ClientHello's first bytes) instead."""
    n = sum(1 for d in t.client_sent() if d.long and all(p["type"] == INITIAL for p in d.long)
            and 0 in d.crypto_offsets)
    return n >= 2, f"{n} Initials with the ClientHello (at least 2: sent again before the answer)"


def check_chacha20(t: Traces):
    offered = {c for d in t.client_sent() if 1 in d.tls_types for c in d.ciphersuites}
    return offered == {0x1303}, "cipher suites offered: " + (", ".join(f"0x{c:04x}" for c in sorted(offered)) or "none")


def check_stream_limit(t: Traces):
    limits = {v for d in t.server_sent_client_side() for v in d.max_streams_bidi}
    if not limits:
        return False, "the server's initial_max_streams_bidi was not seen (not decrypted?)"
    return max(limits) <= 1000, f"the server's initial_max_streams_bidi {max(limits)} (at most 1000)"


def check_key_phases(t: Traces):
    client = {0: 0, 1: 0}
    server = {0: 0, 1: 0}
    for d in t.client_sent():
        for k in d.key_phases:
            client[k] += 1
    for d in t.server_sent():
        for k in d.key_phases:
            server[k] += 1
    ok = client[1] > 0 and server[1] > 0
    return ok, (f"key phase 0/1: client {client[0]}/{client[1]}, server {server[0]}/{server[1]} "
                "(both must send phase 1)")


def _ecn_side(sent):
    counts = [0, 0, 0, 0]  # not-ECT, ECT(1), ECT(0), CE
    for d in sent:
        counts[d.ecn] += 1
    all_ok = counts[0] == 0 and counts[3] == 0 and ((counts[2] == 0) != (counts[1] == 0))
    return counts, all_ok


def check_ecn(t: Traces):
    c_counts, c_ok = _ecn_side(t.client_sent())
    s_counts, s_ok = _ecn_side(t.server_sent())
    c_acks = any(d.ack_ecn for d in t.client_sent())
    s_acks = any(d.ack_ecn for d in t.server_sent())
    detail = (f"client not-ECT/ECT(1)/ECT(0)/CE {'/'.join(map(str, c_counts))}, ACK-ECN {'yes' if c_acks else 'no'}; "
              f"server {'/'.join(map(str, s_counts))}, ACK-ECN {'yes' if s_acks else 'no'}")
    return c_ok and s_ok and c_acks and s_acks, detail


def check_amplification(t: Traces):
    crypto = max((d.crypto_end for d in t.server_sent()), default=0)
    if crypto < 7500:
        return False, f"the server sent only {crypto} bytes of CRYPTO data (not the 9-certificate chain?)"
    allowed = tolerated = 0
    client_sent = server_sent = 0
    for d in t.server_leg:
        if d.src != t.server_port:
            if any(p["type"] == HANDSHAKE for p in d.long):
                return True, (f"before the client's first Handshake packet: client {client_sent} bytes, server "
                              f"{server_sent} ({server_sent / max(client_sent, 1):.2f}x); CRYPTO {crypto} bytes")
            if any(p["type"] == INITIAL for p in d.long):
                client_sent += d.size
                allowed += 3 * d.size
                tolerated += 4 * d.size
        else:
            server_sent += d.size
            if d.size >= tolerated:
                return False, f"the server sent {server_sent} bytes for the client's {client_sent}: over 3-4x"
            allowed -= d.size
            tolerated -= d.size
    return False, "the client never sent a Handshake packet"


def check_ipv6_only(t: Traces):
    v4 = sum(1 for d in t.server_sent() if d.ipv4)
    return v4 == 0 and bool(t.server_sent()), f"{v4} IPv4 datagrams from the server"


def goodput(t: Traces, size: int):
    """Mbit/s: the file's bits over the time between the server's first and last 1-RTT packets, client side."""
    times = [d.time for d in t.server_sent_client_side() if d.short]
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    return 8 * size / (times[-1] - times[0]) / 1e6
