"""Controllers written in Python: the AIMD of examples/python/aimd.py gives
the C++ reno's trajectory exactly; errors raised inside a controller come
out of the run as themselves; over real sockets (ndm.run_live) a Python
controller is the one that sets the window, and the transfer is byte-exact."""

import threading

import numpy as np
import pytest

import aimd  # noqa: F401  (examples/python: registers py-aimd)
import ndm


def check_identical(**kw):
    reno = ndm.simulate(cc="reno", **kw)
    py = ndm.simulate(cc="py-aimd", **kw)
    assert py["byte_exact"], py["error"]
    for k in ("cwnd", "bytes", "bytes_sent", "retransmits", "bytes_in_flight", "srtt_ms"):
        assert np.array_equal(reno["samples"][k], py["samples"][k]), k
    for k in ("receiver_bytes", "sender_bytes", "retransmits", "packets_lost", "spurious_losses", "steps"):
        assert reno[k] == py[k], k
    assert reno["client_stats"] == py["client_stats"]
    return reno


# The AIMD of examples/python/aimd.py is reno, step for step.

def test_aimd_is_reno_on_urban_lte():
    r = check_identical(profile="urban-lte", duration=10, packet_size=1452, seed=1)
    assert r["packets_lost"] > 10  # losses: the reductions were exercised


def test_aimd_is_reno_on_a_bottleneck_with_queue_losses_and_options():
    r = check_identical(profile="delay=20ms,rate=10mbit,queue=30pkt", duration=8, packet_size=1452, seed=2)
    assert r["path"]["dropped_queue"] > 0
    reno = ndm.simulate(cc="reno:beta=0.7", profile="urban-lte", duration=4, packet_size=1452)
    py = ndm.simulate(cc="py-aimd:beta=0.7", profile="urban-lte", duration=4, packet_size=1452)
    assert np.array_equal(reno["samples"]["cwnd"], py["samples"]["cwnd"])


def test_aimd_is_reno_with_reordering_undo_and_ecn():
    # iid reordering makes spurious losses (the undo); ECN marks make CE events.
    check_identical(profile="delay=20ms,jitter=10ms,order=iid", duration=5, packet_size=1452, seed=4)
    check_identical(profile="delay=10ms,rate=10mbit,queue=60pkt,ecn=red", duration=5, packet_size=1452)


def test_compare_and_compete_take_it():
    r = ndm.compare(cc=["py-aimd", "reno"], duration=2, packet_size=1452)
    assert r["runs"][0]["receiver_bytes"] == r["runs"][1]["receiver_bytes"]
    c = ndm.compete(profile="delay=10ms,rate=20mbit", cc=["py-aimd", "cubic"], duration=3, packet_size=1452)
    assert c["runs"][0]["flows"][0]["byte_exact"]


def test_option_errors():
    with pytest.raises(ValueError, match='unknown option "gain"'):
        ndm.simulate(cc="py-aimd:gain=2", duration=1)


class Boom(Exception):
    pass


class Failing(ndm.Controller):
    """fails after a number of ACKs"""

    def __init__(self, params, options=None):
        super().__init__(params, options)
        self.acks = 0
        self.limit = int(self.options.get("after", 50))

    def on_ack(self, ev):
        self.acks += 1
        if self.acks >= self.limit:
            raise Boom(f"boom after {self.acks} ACKs")

    def on_congestion_event(self, ev):
        pass

    def cwnd(self):
        return 20 * 1452


class BadCwnd(Failing):
    def on_ack(self, ev):
        pass

    def cwnd(self):
        return "lots"


class Recording(ndm.Controller):
    """a fixed window that records what the connection asked of it"""

    def __init__(self, params, options=None):
        super().__init__(params, options)
        self.window = int(self.options.get("window", 30)) * params.max_datagram_size
        self.acked = 0
        self.sent = 0
        Recording.last = self

    def on_packet_sent(self, ev):
        self.sent += 1

    def on_ack(self, ev):
        self.acked += ev.bytes_acked

    def on_congestion_event(self, ev):
        pass

    def cwnd(self):
        return self.window


@pytest.fixture(scope="module", autouse=True)
def registered():
    """The test controllers in the registry (registration is for the process: once per module)."""
    ndm.register_controller("py-failing", Failing)
    ndm.register_controller("py-bad-cwnd", BadCwnd)
    ndm.register_controller("py-recording", Recording)


def test_exception_from_a_callback():
    with pytest.raises(Boom) as e:
        ndm.simulate(cc="py-failing", profile="delay=10ms", duration=2)
    assert str(e.value) == "boom after 50 ACKs"
    # The library is usable again afterwards, and the exception does not linger.
    r = ndm.simulate(cc="py-failing:after=1000000", profile="delay=10ms", duration=1, packet_size=1452)
    assert r["byte_exact"]
    with pytest.raises(Boom):
        ndm.compete(cc=["cubic", "py-failing"], profile="delay=10ms", duration=2, packet_size=1452)


def test_wrong_type():
    with pytest.raises(TypeError, match="cwnd"):
        ndm.simulate(cc="py-bad-cwnd", profile="delay=10ms", duration=1)


def test_registration_checks():
    with pytest.raises(TypeError):
        ndm.register_controller("x", object)
    assert ndm.controllers()["py-failing"] == "fails after a number of ACKs"


def test_threads():
    # Runs in two Python threads at once (the GIL is released around the
    # simulation, taken per controller call) give the single-thread results.
    want = ndm.simulate(cc="py-aimd", profile="urban-lte", duration=3, packet_size=1452)["receiver_bytes"]
    got = []
    ts = [threading.Thread(target=lambda: got.append(
        ndm.simulate(cc="py-aimd", profile="urban-lte", duration=3, packet_size=1452)["receiver_bytes"]))
        for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [want, want]


# Over real UDP sockets on loopback: wall-clock time, so the checks are of
# what must hold on any machine, not of exact numbers.

def test_live_python_aimd_byte_exact_through_a_bottleneck():
    r = ndm.run_live(cc="py-aimd", profile="delay=5ms,rate=20mbit,queue=50pkt", duration=2, seed=3)
    assert r["error"] == ""
    assert r["byte_exact"]
    assert r["receiver_bytes"] > 500_000
    assert r["goodput_bps"] <= 21e6  # the emulated bottleneck holds
    assert r["path"]["sent"] > 0
    assert len(r["intervals"]["cwnd"]) == 2  # one sample per second


def test_live_the_python_window_is_the_window():
    r = ndm.run_live(cc="py-recording:window=7", profile="delay=10ms", duration=1, interval=0.25)
    assert r["byte_exact"], r["error"]
    rec = Recording.last
    assert rec.sent > 0
    assert rec.acked > 0
    # Every sample shows the Python object's window, and with 7 packets a
    # 20 ms round trip, goodput stays near 7 * 1452 B / 20 ms = 4 Mbit/s.
    assert np.all(r["intervals"]["cwnd"] == 7 * 1452), r["intervals"]["cwnd"]
    assert r["goodput_bps"] < 7 * 1452 * 8 / 0.020 * 1.3


def test_live_exception_and_bad_input():
    with pytest.raises(Boom):
        ndm.run_live(cc="py-failing", profile="delay=1ms", duration=2)
    r = ndm.run_live(cc="cubic", profile="delay=1ms", duration=0.5)  # usable again
    assert r["byte_exact"], r["error"]
    with pytest.raises(ValueError, match="unknown I/O backend"):
        ndm.run_live(io="kqueue", duration=1)
    with pytest.raises(ValueError, match="unknown congestion controller"):
        ndm.run_live(cc="nope", duration=1)
