"""ndm.compare and ndm.compete: the numbers of ndm-compare --virtual and --compete."""

import json
import os
import subprocess
import unittest

import numpy as np

import ndm_test_util  # noqa: F401  (paths)
import ndm


class CompareTest(unittest.TestCase):
    def test_compare_runs(self):
        r = ndm.compare(profile="urban-lte", cc="cubic,reno", duration=3, repeat=2, packet_size="realistic")
        self.assertEqual(r["controllers"], ["cubic", "reno"])
        self.assertEqual(r["packet_size"], 1452)
        self.assertEqual([(x["controller"], x["repeat"], x["seed"]) for x in r["runs"]],
                         [("cubic", 0, 1), ("reno", 0, 1), ("cubic", 1, 2), ("reno", 1, 2)])
        for run in r["runs"]:
            self.assertTrue(run["byte_exact"], run["error"])
            self.assertEqual(len(run["intervals"]["cwnd"]), 3)  # the send phase only
            self.assertIsInstance(run["intervals"]["bytes_received"], np.ndarray)
        # Each run is simulate()'s run with the same seed.
        s = ndm.simulate(profile="urban-lte", cc="reno", duration=3, seed=2, packet_size=1452)
        self.assertEqual(r["runs"][3]["receiver_bytes"], s["receiver_bytes"])
        self.assertEqual(r["runs"][3]["goodput_bps"], s["goodput_bps"])

    @unittest.skipUnless(os.environ.get("NDM_COMPARE"), "NDM_COMPARE (the ndm-compare binary) not set")
    def test_same_numbers_as_ndm_compare(self):
        out = subprocess.run([os.environ["NDM_COMPARE"], "--virtual", "-J", "-q", "--cc", "cubic,ndm-cubic", "-t", "3",
                              "--packets", "realistic", "--seed", "5", "--out", os.environ.get("TMPDIR", "/tmp") +
                              f"/ndm-py-compare-{os.getpid()}"], check=True, capture_output=True, text=True).stdout
        tool = json.loads(out)
        py = ndm.compare(cc=["cubic", "ndm-cubic"], duration=3, packet_size="realistic", seed=5)
        for c, run in zip(tool["controllers"], py["runs"]):
            t = c["runs"][0]
            self.assertEqual(c["name"], run["controller"])
            self.assertEqual(t["receiver"]["bytes"], run["receiver_bytes"])
            self.assertEqual(t["sender"]["bytes"], run["sender_bytes"])
            self.assertEqual(t["sender"]["retransmits"], run["retransmits"])
            self.assertAlmostEqual(t["receiver"]["goodput_bps"], run["goodput_bps"], delta=1e-6 * run["goodput_bps"])
            self.assertEqual(t["path"]["sent"], run["path"]["sent"])
            self.assertEqual([i["bytes_received"] for i in t["intervals"]], list(run["intervals"]["bytes_received"]))


class CompeteTest(unittest.TestCase):
    def test_compete(self):
        r = ndm.compete(profile="delay=10ms,rate=20mbit,queue=40pkt", cc=["cubic", "reno"], duration=6,
                        stagger=1, packet_size=1452, seed=3)
        self.assertEqual(r["mode"], "compete")
        (run,) = r["runs"]
        self.assertEqual(run["seed"], 3)
        self.assertEqual([f["start_s"] for f in run["flows"]], [0.0, 1.0])
        for f in run["flows"]:
            self.assertTrue(f["byte_exact"], f["error"])
            self.assertEqual(len(f["interval_bps"]), 6)
            self.assertGreater(f["goodput_bps"], 1e6)
        # Together they fill the bottleneck, and no more.
        total = sum(f["interval_bps"] for f in run["flows"])
        self.assertLess(total.mean(), 20e6 * 1.01)
        self.assertGreater(total[2:].mean(), 15e6)
        self.assertGreater(run["jain_last_half"], 0.5)
        self.assertLessEqual(run["jain_last_half"], 1.0)
        self.assertGreater(run["bottleneck"]["queue_delay_p95_ms"], 0)
        again = ndm.compete(profile="delay=10ms,rate=20mbit,queue=40pkt", cc="cubic,reno", duration=6, stagger=1,
                            packet_size=1452, seed=3)
        self.assertTrue(np.array_equal(run["flows"][1]["interval_bps"], again["runs"][0]["flows"][1]["interval_bps"]))


if __name__ == "__main__":
    unittest.main()
