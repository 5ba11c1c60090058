"""ndm.simulate, profiles, presets, traces, scenarios and the errors."""

import unittest

import numpy as np

import ndm_test_util  # noqa: F401  (paths)
import ndm


class SimulateTest(unittest.TestCase):
    def test_acceptance_command(self):
        r = ndm.simulate(profile="urban-lte", cc="cubic", duration=10)
        self.assertEqual(r["controller"], "cubic")
        self.assertEqual(r["profile"], "urban-lte")
        self.assertTrue(r["byte_exact"], r["error"])
        self.assertEqual(r["error"], "")
        self.assertGreater(r["goodput_bps"], 0)
        s = r["samples"]
        self.assertIsInstance(s["cwnd"], np.ndarray)
        self.assertGreaterEqual(len(s["cwnd"]), 10)  # ten send intervals, then the drain
        for k in ("begin_s", "end_s", "bytes", "bytes_sent", "retransmits", "packets_lost", "bytes_in_flight",
                  "srtt_ms"):
            self.assertEqual(len(s[k]), len(s["cwnd"]), k)
        # The samples add up to the totals.
        self.assertEqual(int(s["bytes"].sum()), r["receiver_bytes"])
        self.assertEqual(int(s["bytes_sent"].sum()), r["sender_bytes"])
        self.assertEqual(r["receiver_bytes"], r["sender_bytes"])
        self.assertIn("urban-lte", repr(r["profile"]))
        self.assertIn("goodput_bps", str(r))

    def test_deterministic_and_seeded(self):
        a = ndm.simulate(profile="urban-lte", cc="reno", duration=3, seed=7, packet_size=1452)
        b = ndm.simulate(profile="urban-lte", cc="reno", duration=3, seed=7, packet_size=1452)
        c = ndm.simulate(profile="urban-lte", cc="reno", duration=3, seed=8, packet_size=1452)
        self.assertTrue(np.array_equal(a["samples"]["cwnd"], b["samples"]["cwnd"]))
        self.assertEqual(a["receiver_bytes"], b["receiver_bytes"])
        self.assertNotEqual(a["receiver_bytes"], c["receiver_bytes"])

    def test_rate_limited_path(self):
        r = ndm.simulate(profile="delay=10ms,rate=20mbit,queue=50pkt", cc="cubic", duration=4, packet_size=1452)
        self.assertTrue(r["byte_exact"])
        self.assertLess(r["goodput_bps"], 20e6)
        self.assertGreater(r["goodput_bps"], 10e6)
        self.assertTrue(r["path"]["measured"])
        self.assertGreater(r["path"]["queue_delay_p95_ms"], 0)
        self.assertEqual(r["packet_size"], 1452)
        self.assertEqual(ndm.simulate(profile="delay=10ms", duration=1, packet_size="seed")["packet_size"], 65507)

    def test_profile_objects(self):
        p = ndm.Profile("urban-lte,loss=1%")
        self.assertIn("1", p.up)
        self.assertTrue(p.description.startswith("up: "))
        r1 = ndm.simulate(profile=p, duration=2, packet_size=1452)
        r2 = ndm.simulate(profile="urban-lte,loss=1%", duration=2, packet_size=1452)
        self.assertEqual(r1["receiver_bytes"], r2["receiver_bytes"])
        names = [x.name for x in ndm.presets()]
        self.assertIn("urban-lte", names)
        preset = next(x for x in ndm.presets() if x.name == "urban-lte")
        self.assertIn("delay=50ms", preset.spec)
        self.assertEqual(preset.profile().up, ndm.Profile("urban-lte").up)

    def test_traces(self):
        t = {x.name: x for x in ndm.traces()}
        self.assertIn("Verizon-LTE-short", t)
        v = t["Verizon-LTE-short"]
        ops = v.opportunities("up")
        self.assertGreater(len(ops), 100)
        self.assertEqual(ops, sorted(ops))
        r = ndm.simulate(profile=v.profile("delay=20ms"), duration=2, packet_size=1452)
        self.assertTrue(r["byte_exact"])

    def test_controllers_and_scenarios(self):
        cs = ndm.controllers()
        for name in ("reno", "cubic", "bbr", "ndm", "ndm-lkm"):
            self.assertIn(name, cs)
        a = ndm.scenarios(seed=3, count=20)
        self.assertEqual(a, ndm.scenarios(seed=3, count=20))
        self.assertNotEqual(a, ndm.scenarios(seed=4, count=20))
        self.assertEqual(len(a), 20)
        self.assertTrue({s["split"] for s in a} <= {"train", "val", "test"})
        ndm.Profile(a[0]["profile"])  # the generator's profiles parse


class ErrorTest(unittest.TestCase):
    """Bad input raises ValueError with the tools' one-line message."""

    def check(self, fn, fragment, **kw):
        with self.assertRaises(ValueError) as cm:
            fn(**kw)
        msg = str(cm.exception)
        self.assertIn(fragment, msg)
        self.assertNotIn("\n", msg)

    def test_messages(self):
        self.check(ndm.simulate, 'unknown congestion controller "nope"', cc="nope")
        self.check(ndm.simulate, "unknown", profile="no-such-preset")
        self.check(ndm.simulate, "delay", profile="delay=5parsecs")
        self.check(ndm.simulate, "packet_size 100 is outside 1200..65507", packet_size=100)
        self.check(ndm.simulate, 'unknown packet preset "huge"', packet_size="huge")
        self.check(ndm.simulate, "duration nan is outside", duration=float("nan"))
        self.check(ndm.simulate, "beta", cc="reno:beta=7")
        self.check(ndm.compare, "duration 0.1 is outside 0.5..3600", duration=0.1)
        self.check(ndm.compare, 'unknown congestion controller "x"', cc=["cubic", "x"])
        self.check(ndm.compete, "--stagger 5 s starts the last flow after the 10 s run ends",
                   cc="cubic,reno,reno", stagger=5)
        self.check(ndm.Profile, "unknown", spec="no-such-preset")
        with self.assertRaises(TypeError):
            ndm.simulate(profile=42)

    def test_same_message_as_the_library(self):
        # The message is the one ndm-compare prints after "ndm-compare: ".
        with self.assertRaises(ValueError) as cm:
            ndm.simulate(cc="nope")
        self.assertRegex(str(cm.exception), r'^unknown congestion controller "nope" \(known: .*reno.*\)$')


if __name__ == "__main__":
    unittest.main()
