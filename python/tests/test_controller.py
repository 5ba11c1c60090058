"""Controllers written in Python: the AIMD of examples/python/aimd.py gives
the C++ reno's trajectory exactly; errors raised inside a controller come
out of the run as themselves; over real sockets (ndm.run_live) a Python
controller is the one that sets the window, and the transfer is byte-exact."""

import threading
import unittest

import numpy as np

import ndm_test_util  # noqa: F401  (paths)
import aimd  # examples/python: registers py-aimd
import ndm


class AimdIsRenoTest(unittest.TestCase):
    def check_identical(self, **kw):
        reno = ndm.simulate(cc="reno", **kw)
        py = ndm.simulate(cc="py-aimd", **kw)
        self.assertTrue(py["byte_exact"], py["error"])
        for k in ("cwnd", "bytes", "bytes_sent", "retransmits", "bytes_in_flight", "srtt_ms"):
            self.assertTrue(np.array_equal(reno["samples"][k], py["samples"][k]), k)
        for k in ("receiver_bytes", "sender_bytes", "retransmits", "packets_lost", "spurious_losses", "steps"):
            self.assertEqual(reno[k], py[k], k)
        self.assertEqual(reno["client_stats"], py["client_stats"])
        return reno

    def test_urban_lte(self):
        r = self.check_identical(profile="urban-lte", duration=10, packet_size=1452, seed=1)
        self.assertGreater(r["packets_lost"], 10)  # losses: the reductions were exercised

    def test_bottleneck_with_queue_losses_and_options(self):
        r = self.check_identical(profile="delay=20ms,rate=10mbit,queue=30pkt", duration=8, packet_size=1452, seed=2)
        self.assertGreater(r["path"]["dropped_queue"], 0)
        reno = ndm.simulate(cc="reno:beta=0.7", profile="urban-lte", duration=4, packet_size=1452)
        py = ndm.simulate(cc="py-aimd:beta=0.7", profile="urban-lte", duration=4, packet_size=1452)
        self.assertTrue(np.array_equal(reno["samples"]["cwnd"], py["samples"]["cwnd"]))

    def test_reordering_undo_and_ecn(self):
        # iid reordering makes spurious losses (the undo); ECN marks make CE events.
        self.check_identical(profile="delay=20ms,jitter=10ms,order=iid", duration=5, packet_size=1452, seed=4)
        self.check_identical(profile="delay=10ms,rate=10mbit,queue=60pkt,ecn=red", duration=5, packet_size=1452)

    def test_compare_and_compete_take_it(self):
        r = ndm.compare(cc=["py-aimd", "reno"], duration=2, packet_size=1452)
        self.assertEqual(r["runs"][0]["receiver_bytes"], r["runs"][1]["receiver_bytes"])
        c = ndm.compete(profile="delay=10ms,rate=20mbit", cc=["py-aimd", "cubic"], duration=3, packet_size=1452)
        self.assertTrue(c["runs"][0]["flows"][0]["byte_exact"])

    def test_option_errors(self):
        with self.assertRaisesRegex(ValueError, 'unknown option "gain"'):
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


class ErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ndm.register_controller("py-failing", Failing)
        ndm.register_controller("py-bad-cwnd", BadCwnd)

    def test_exception_from_a_callback(self):
        with self.assertRaises(Boom) as cm:
            ndm.simulate(cc="py-failing", profile="delay=10ms", duration=2)
        self.assertEqual(str(cm.exception), "boom after 50 ACKs")
        # The library is usable again afterwards, and the exception does not linger.
        r = ndm.simulate(cc="py-failing:after=1000000", profile="delay=10ms", duration=1, packet_size=1452)
        self.assertTrue(r["byte_exact"])
        with self.assertRaises(Boom):
            ndm.compete(cc=["cubic", "py-failing"], profile="delay=10ms", duration=2, packet_size=1452)

    def test_wrong_type(self):
        with self.assertRaisesRegex(TypeError, "cwnd"):
            ndm.simulate(cc="py-bad-cwnd", profile="delay=10ms", duration=1)

    def test_registration_checks(self):
        with self.assertRaises(TypeError):
            ndm.register_controller("x", object)
        self.assertEqual(ndm.controllers()["py-failing"], "fails after a number of ACKs")

    def test_threads(self):
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
        self.assertEqual(got, [want, want])


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


class RealSocketsTest(unittest.TestCase):
    """Over real UDP sockets on loopback: wall-clock time, so the checks are
    of what must hold on any machine, not of exact numbers."""

    @classmethod
    def setUpClass(cls):
        ndm.register_controller("py-recording", Recording)
        ndm.register_controller("py-failing-live", Failing)

    def test_python_aimd_byte_exact_through_a_bottleneck(self):
        r = ndm.run_live(cc="py-aimd", profile="delay=5ms,rate=20mbit,queue=50pkt", duration=2, seed=3)
        self.assertEqual(r["error"], "")
        self.assertTrue(r["byte_exact"])
        self.assertGreater(r["receiver_bytes"], 500_000)
        self.assertLessEqual(r["goodput_bps"], 21e6)  # the emulated bottleneck holds
        self.assertGreater(r["path"]["sent"], 0)
        self.assertEqual(len(r["intervals"]["cwnd"]), 2)  # one sample per second

    def test_the_python_window_is_the_window(self):
        r = ndm.run_live(cc="py-recording:window=7", profile="delay=10ms", duration=1, interval=0.25)
        self.assertTrue(r["byte_exact"], r["error"])
        rec = Recording.last
        self.assertGreater(rec.sent, 0)
        self.assertGreater(rec.acked, 0)
        # Every sample shows the Python object's window, and with 7 packets a
        # 20 ms round trip, goodput stays near 7 * 1452 B / 20 ms = 4 Mbit/s.
        self.assertTrue(np.all(r["intervals"]["cwnd"] == 7 * 1452), r["intervals"]["cwnd"])
        self.assertLess(r["goodput_bps"], 7 * 1452 * 8 / 0.020 * 1.3)

    def test_exception_and_bad_input(self):
        with self.assertRaises(Boom):
            ndm.run_live(cc="py-failing-live", profile="delay=1ms", duration=2)
        r = ndm.run_live(cc="cubic", profile="delay=1ms", duration=0.5)  # usable again
        self.assertTrue(r["byte_exact"], r["error"])
        with self.assertRaisesRegex(ValueError, "unknown I/O backend"):
            ndm.run_live(io="kqueue", duration=1)
        with self.assertRaisesRegex(ValueError, "unknown congestion controller"):
            ndm.run_live(cc="nope", duration=1)


if __name__ == "__main__":
    unittest.main()
