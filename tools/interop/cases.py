"""The QUIC Interop Runner's test cases and measurements as ndm's local matrix runs them.

Each case follows quic-interop-runner's testcases_quic.py: the files the
client fetches, the network scenario (the runner's ns-3 "simple-p2p" link of
15 ms one way, 10 Mbit/s and a 25-packet drop-tail queue, here an ndm-emu
relay profile, docs/emulator.md), the test name each endpoint is given
(testname()) and the checks run over the captured traces (trace.py).
Sizes are the runner's; `quick` sizes are the CTest subset's
(tests/cli/ndm_interop_matrix_test.sh). docs/interop.md says what differs.
"""

from dataclasses import dataclass

KB = 1 << 10
MB = 1 << 20

# simple-p2p --delay=15ms --bandwidth=10Mbps --queue=25
LINK = "delay=15ms,rate=10mbit,queue=25pkt"
# blackhole --on=5s --off=2s: the link is up 5 s, then dark 2 s, again and
# again; ndm-emu's outage phases count from each direction's first datagram.
BLACKHOLE = LINK + "".join(f",outage=2s@{5 + 7 * k}s" for k in range(12))


@dataclass
class Case:
    name: str
    files: list            # sizes of the files the client fetches (full run)
    quick: list = None     # sizes in the quick (CTest) run; None: as `files`
    scenario: str = LINK
    client_test: str = ""  # TESTCASE for the client; "" = name
    server_test: str = ""  # TESTCASE for the server; "" = name
    checks: tuple = ("handshakes", "version", "files", "no_retry")
    handshakes: int = 1    # expected handshakes; 0: one per file
    drop_up: str = ""      # ndm-emu relay --drop-up
    cert_chain: int = 1    # certificates in the server's chain
    timeout: int = 60      # seconds the client may take
    measurement: bool = False
    unsupported: str = ""  # why the case is not run: what ndm lacks
    ipv6: bool = False

    def test_name(self, client: bool) -> str:
        t = self.client_test if client else self.server_test
        return t or self.name

    def sizes(self, quick: bool) -> list:
        return self.quick if quick and self.quick is not None else self.files


CASES = [
    Case("handshake", [1 * KB]),
    Case("transfer", [2 * MB, 3 * MB, 5 * MB], quick=[100 * KB, 200 * KB, 300 * KB],
         checks=("handshakes", "version", "files")),
    Case("longrtt", [1 * KB], scenario="delay=750ms,rate=10mbit,queue=25pkt", client_test="handshake",
         server_test="handshake", checks=("handshakes", "version", "files", "client_hellos")),
    Case("chacha20", [3 * MB], quick=[200 * KB], checks=("handshakes", "version", "files", "chacha20")),
    Case("multiplexing", [32] * 1999, quick=[32] * 150, client_test="transfer", server_test="transfer",
         checks=("handshakes", "version", "files", "stream_limit")),
    Case("retry", [10 * KB], checks=("handshakes", "version", "files", "retry")),
    Case("resumption", [5 * KB, 10 * KB],
         unsupported="no session resumption: ndm's server sends no session ticket and its client resumes none "
                     "(GNUTLS_NO_TICKETS, docs/tls.md)"),
    Case("zerortt", [32] * 40,
         unsupported="no 0-RTT: no session tickets, early secrets ignored, 0-RTT CRYPTO refused (docs/tls.md)"),
    Case("http3", [5 * KB, 10 * KB, 500 * KB], checks=("handshakes", "version", "files")),
    Case("blackhole", [10 * MB], scenario=BLACKHOLE, client_test="transfer", server_test="transfer",
         checks=("handshakes", "version", "files"), timeout=120),
    Case("keyupdate", [3 * MB], quick=[300 * KB], server_test="transfer",
         checks=("handshakes", "version", "files", "key_phases")),
    Case("ecn", [1 * KB], checks=("handshakes", "version", "files", "no_retry", "ecn")),
    Case("amplificationlimit", [5 * KB], drop_up="2,3,4,5,6,7", cert_chain=9, client_test="transfer",
         server_test="transfer", checks=("handshakes", "version", "files", "amplification")),
    Case("handshakeloss", [1 * KB] * 50, quick=[1 * KB] * 5, scenario=LINK + ",loss=30%",
         client_test="multiconnect", server_test="multiconnect", handshakes=0, timeout=300,
         checks=("handshakes", "version", "files")),
    Case("transferloss", [2 * MB], quick=[300 * KB], scenario=LINK + ",loss=2%", client_test="transfer",
         server_test="transfer", checks=("handshakes", "version", "files")),
    Case("handshakecorruption", [1 * KB] * 50, quick=[1 * KB] * 5, scenario=LINK + ",corrupt=30%",
         client_test="multiconnect", server_test="multiconnect", handshakes=0, timeout=300,
         checks=("handshakes", "version", "files")),
    Case("transfercorruption", [2 * MB], quick=[300 * KB], scenario=LINK + ",corrupt=2%",
         client_test="transfer", server_test="transfer", checks=("handshakes", "version", "files")),
    Case("ipv6", [5 * KB, 10 * KB], ipv6=True, client_test="transfer", server_test="transfer",
         checks=("handshakes", "version", "files", "ipv6_only")),
    Case("v2", [1 * KB],
         unsupported="ndm speaks QUIC v2 (RFC 9369) when a client starts in it, but not compatible version "
                     "negotiation (RFC 9368 §2.3), the switch from v1 this case checks; ngtcp2 0.12.1 knows only "
                     "v2's draft (0x709a50c4), so the case cannot be checked against it"),
    Case("rebind-port", [10 * MB],
         unsupported="no path validation on a peer address change (RFC 9000 §9.3); ndm-emu relay has no "
                     "rebinding yet"),
    Case("rebind-addr", [10 * MB],
         unsupported="no path validation on a peer address change (RFC 9000 §9.3); ndm-emu relay has no "
                     "rebinding yet"),
    Case("connectionmigration", [2 * MB],
         unsupported="no preferred_address transport parameter and no active client migration (RFC 9000 §9)"),
    Case("goodput", [10 * MB], quick=[1 * MB], client_test="transfer", server_test="transfer",
         checks=("handshakes", "version", "files", "goodput"), measurement=True, timeout=120),
    Case("crosstraffic", [25 * MB], measurement=True,
         unsupported="needs a kernel Cubic TCP flow (iperf3) through the same 10 Mbit/s bottleneck: ndm-emu relay "
                     "forwards UDP only, and ndm-emu shell (root, TUN) would carry both but puts the client in "
                     "its own namespace, which the runner does not script yet"),
]

BY_NAME = {c.name: c for c in CASES}

# The directions of a run: (client, server).
DIRECTIONS = [("ndm", "ngtcp2"), ("ngtcp2", "ndm")]
BASELINE = ("ngtcp2", "ngtcp2")  # goodput only: the reference pair in the same run

