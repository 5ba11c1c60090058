"""ndm.plots and ndm-plot: the figures are written (valid PNG, PDF, SVG) and plot the data given —
the lines, bands, error bars and markers of the returned Figures are checked against the input
and against confidence half-widths computed by hand; no image comparisons.

Skipped (exit 77) without Debian's python3-matplotlib, unless NDM_REQUIRE_MATPLOTLIB=1 (.ci/run)."""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import ndm_test_util

ndm_test_util.import_or_skip("matplotlib", "NDM_REQUIRE_MATPLOTLIB", "python3-matplotlib")

import ndm
import ndm.plots as plots

HEADERS = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "svg": b"<?xml"}


def by_gid(fig, gid, kind=None):
    return [a for ax in fig.axes for a in ax.get_children()
            if a.get_gid() == gid and (kind is None or isinstance(a, kind))]


def compare_like(runs_a, runs_b):
    """An ndm.compare-shaped dict by hand: controller "a" with runs_a, "b" with runs_b, each run a list of
    (bytes_received, srtt_ms) per 1 s interval."""
    runs = []
    for name, rs in (("a", runs_a), ("b", runs_b)):
        for k, rows in enumerate(rs):
            n = len(rows)
            runs.append({"controller": name, "seed": k + 1, "goodput_bps": 1e6 * (k + 1), "error": "",
                         "path": {"one_way_delay_p95_ms": 20.0 + k, "queue_delay_p95_ms": 1.0 + k},
                         "intervals": {"begin_s": np.arange(n, dtype=float), "end_s": np.arange(1, n + 1, dtype=float),
                                       "bytes_received": np.array([r[0] for r in rows], dtype=np.uint64),
                                       "srtt_ms": np.array([r[1] for r in rows]),
                                       "cwnd": np.full(n, 2048, dtype=np.uint64)}})
    return {"profile": "delay=10ms", "runs": runs}


class StatsTest(unittest.TestCase):
    def test_t_quantile_and_half_width(self):
        # Closed forms: df 1, t = tan(0.475 π); df 2, P(|T| < t) = t / sqrt(t² + 2) = 0.95.
        self.assertAlmostEqual(plots.t_quantile_975(1), math.tan(0.475 * math.pi), places=9)
        t2 = math.sqrt(2 * 0.95 ** 2 / (1 - 0.95 ** 2))
        self.assertAlmostEqual(plots.t_quantile_975(2), t2, places=9)
        self.assertAlmostEqual(plots.t_quantile_975(40), 2.021075, places=5)  # as tests/tools/test_report.cpp
        m, h = plots.mean_ci95([1, 2, 3])
        self.assertEqual(m, 2)
        self.assertAlmostEqual(h, t2 * 1 / math.sqrt(3), places=9)
        self.assertEqual(plots.mean_ci95([5])[1], 0)


class FiguresTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def check_file(self, path):
        with open(path, "rb") as f:
            head = f.read(16)
        self.assertTrue(head.startswith(HEADERS[path.rsplit(".", 1)[1]]), (path, head))
        self.assertGreater(os.path.getsize(path), 1000)

    def test_time_series_by_hand(self):
        # "a": three runs of two intervals (bytes → Mbit/s: 125 000 B in 1 s is 1 Mbit/s); "b": one run.
        a = [[(125000, 10), (250000, 30)], [(250000, 20), (250000, 30)], [(375000, 30), (500000, 60)]]
        b = [[(125000, 40), (125000, 50), (125000, 60)]]
        fig = plots.time_series(compare_like(a, b), self.path("t.png"))
        self.check_file(self.path("t.png"))
        goodput_ax, srtt_ax = fig.axes
        self.assertEqual(goodput_ax.get_ylabel(), "goodput (Mbit/s)")
        self.assertEqual(srtt_ax.get_ylabel(), "srtt (ms)")
        self.assertEqual(srtt_ax.get_xlabel(), "time (s)")
        t2 = math.sqrt(2 * 0.95 ** 2 / (1 - 0.95 ** 2))
        # Goodput of "a": interval 1 is 1, 2, 3 Mbit/s (mean 2, sd 1), interval 2 is 2, 2, 4 (mean 8/3).
        mean_a = [l for l in by_gid(fig, "mean:a") if l.axes is goodput_ax][0]
        np.testing.assert_allclose(mean_a.get_xdata(), [1, 2])
        np.testing.assert_allclose(mean_a.get_ydata(), [2, 8 / 3])
        half = [t2 * 1 / math.sqrt(3), t2 * np.std([2, 2, 4], ddof=1) / math.sqrt(3)]
        band = [c for c in by_gid(fig, "band:a") if c.axes is goodput_ax][0]
        v = band.get_paths()[0].vertices
        for t, m, h in zip([1, 2], [2, 8 / 3], half):
            ys = v[np.isclose(v[:, 0], t), 1]
            self.assertAlmostEqual(ys.max(), m + h, places=9)
            self.assertAlmostEqual(ys.min(), max(m - h, 0), places=9)  # clamped at 0 as plot.svg
        self.assertEqual(len([l for l in by_gid(fig, "run:a") if l.axes is goodput_ax]), 3)
        # srtt of "a": 10, 20, 30 then 30, 30, 60.
        srtt_a = [l for l in by_gid(fig, "mean:a") if l.axes is srtt_ax][0]
        np.testing.assert_allclose(srtt_a.get_ydata(), [20, 40])
        srtt_band = [c for c in by_gid(fig, "band:a") if c.axes is srtt_ax][0].get_paths()[0].vertices
        self.assertAlmostEqual(srtt_band[np.isclose(srtt_band[:, 0], 1), 1].max(), 20 + t2 * 10 / math.sqrt(3))
        # "b", one run: its own line, no band.
        mean_b = [l for l in by_gid(fig, "mean:b") if l.axes is goodput_ax][0]
        np.testing.assert_allclose(mean_b.get_ydata(), [1, 1, 1])
        self.assertFalse(by_gid(fig, "band:b"))

    def test_time_series_of_compare(self):
        r = ndm.compare(profile="urban-lte", cc="cubic,reno", duration=3, repeat=3, packet_size="realistic")
        fig = plots.time_series(r, self.path("t.pdf"), panels=["goodput", "srtt", "cwnd"])
        self.check_file(self.path("t.pdf"))
        cubic = [run["intervals"] for run in r["runs"] if run["controller"] == "cubic"]
        rates = [iv["bytes_received"] * 8 / (iv["end_s"] - iv["begin_s"]) / 1e6 for iv in cubic]
        goodput = [l for l in by_gid(fig, "mean:cubic") if l.axes is fig.axes[0]][0]
        np.testing.assert_allclose(goodput.get_ydata(), np.mean(rates, axis=0))
        cwnd = [l for l in by_gid(fig, "mean:cubic") if l.axes is fig.axes[2]][0]
        np.testing.assert_allclose(cwnd.get_ydata(), np.mean([iv["cwnd"] / 1024 for iv in cubic], axis=0))
        runs = [l for l in by_gid(fig, "run:cubic") if l.axes is fig.axes[1]]
        np.testing.assert_allclose(sorted(l.get_ydata()[0] for l in runs), sorted(iv["srtt_ms"][0] for iv in cubic))
        self.assertEqual(fig.axes[2].get_ylabel(), "cwnd (KBytes)")

    def test_goodput_vs_loss(self):
        self.assertEqual(plots.loss_percent("urban-lte"), 5)  # the preset's own loss
        self.assertEqual(plots.loss_percent("urban-lte,loss=1%"), 1)
        self.assertEqual(plots.loss_percent("delay=10ms,rate=10mbit"), 0)
        grid = {"cc": ["cubic", "reno"], "profile": ["delay=10ms,rate=10mbit", "delay=10ms,rate=10mbit,loss=2%"],
                "seed": [1, 2, 3], "duration": 1}
        s = ndm.sweep(grid, workers=1)
        fig = plots.goodput_vs_loss(s, self.path("l.svg"))
        self.check_file(self.path("l.svg"))
        ax = fig.axes[0]
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel()), ("loss rate (%)", "goodput (Mbit/s)"))
        for cc in grid["cc"]:
            line = by_gid(fig, f"loss:{cc}")[0]
            np.testing.assert_allclose(line.get_xdata(), [0, 2])
            stats = [plots.mean_ci95([r["goodput_bps"] / 1e6 for r in s.values()
                                      if r["controller"] == cc and r["profile"] == p]) for p in grid["profile"]]
            np.testing.assert_allclose(line.get_ydata(), [m for m, _ in stats])
            # The error bars: a vertical segment from mean - h to mean + h at each loss rate.
            segs = [seg for c in ax.collections for seg in c.get_segments()]
            for x, (m, h) in zip([0, 2], stats):
                self.assertTrue(any(np.allclose(seg, [[x, m - h], [x, m + h]]) for seg in segs), (cc, x, m, h))

    def test_throughput_delay(self):
        r = compare_like([[(125000, 10)]] * 3, [[(125000, 10)]])
        fig = plots.throughput_delay(r, self.path("s.png"))
        self.check_file(self.path("s.png"))
        ax = fig.axes[0]
        self.assertTrue(ax.xaxis_inverted())  # Pantheon's: lower delay to the right
        self.assertEqual(ax.get_xlabel(), "95th percentile one-way delay (ms)")
        pts = by_gid(fig, "runs:a")[0].get_offsets()
        np.testing.assert_allclose(pts, [[20, 1], [21, 2], [22, 3]])
        np.testing.assert_allclose(by_gid(fig, "mean:a")[0].get_xydata(), [[21, 2]])
        ellipse = by_gid(fig, "ellipse:a")[0]
        np.testing.assert_allclose(ellipse.center, [21, 2])
        # cov of (20, 21, 22) and (1, 2, 3) is [[1, 1], [1, 1]]: one axis of 2·sqrt(2) along the diagonal.
        self.assertAlmostEqual(max(ellipse.width, ellipse.height), 2 * math.sqrt(2))
        self.assertAlmostEqual(min(ellipse.width, ellipse.height), 0, places=6)
        self.assertFalse(by_gid(fig, "ellipse:b"))  # one run
        q = plots.throughput_delay(r, delay="queue")
        np.testing.assert_allclose(by_gid(q, "runs:a")[0].get_offsets()[:, 0], [1, 2, 3])

    def test_throughput_delay_constant_delay(self):
        # Every run at one delay (urban-lte: no queue, the profile's own delay): no flat ellipse and no
        # shared x; each controller's runs in a column, a 1-σ bar clipped at 0, and a note saying why.
        r = compare_like([[(125000, 10)]] * 3, [[(125000, 10)]] * 2)
        for run in r["runs"]:
            run["path"]["one_way_delay_p95_ms"] = 69.632
        r["runs"][2]["goodput_bps"] = 10e6  # a: 1, 2, 10 Mbit/s: mean 4.33, σ 4.93 reaches below 0
        fig = plots.throughput_delay(r, self.path("c.png"))
        self.check_file(self.path("c.png"))
        ax = fig.axes[0]
        self.assertFalse(by_gid(fig, "ellipse:a"))
        note = by_gid(fig, "constant-delay")[0].get_text().replace("\n", " ")
        self.assertIn("is 69.6 ms", note)
        self.assertIn("cannot tell the controllers apart", note)
        self.assertIn("69.6 ms", ax.get_xlabel())
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["a", "b"])
        np.testing.assert_allclose(by_gid(fig, "runs:a")[0].get_offsets()[:, 1], [1, 2, 10])
        self.assertTrue(all(abs(x) < 0.5 for x in by_gid(fig, "runs:a")[0].get_offsets()[:, 0]))
        self.assertTrue(all(abs(x - 1) < 0.5 for x in by_gid(fig, "runs:b")[0].get_offsets()[:, 0]))
        self.assertEqual(ax.get_ylim()[0], 0)
        # a's bar runs from 0 (clipped, not mean − σ < 0) to mean + σ.
        y = np.array([1, 2, 10])
        bar = by_gid(fig, "spread:a")[0].get_segments()[0]
        np.testing.assert_allclose(bar[:, 1], [0, y.mean() + y.std(ddof=1)])
        # One controller at one delay among others that vary: a bar for it, an ellipse for the others.
        m = compare_like([[(125000, 10)]] * 3, [[(125000, 10)]] * 2)
        for run in m["runs"]:
            if run["controller"] == "b":
                run["path"]["one_way_delay_p95_ms"] = 30.0
        fig = plots.throughput_delay(m)
        self.assertTrue(by_gid(fig, "ellipse:a"))
        self.assertTrue(by_gid(fig, "spread:b"))
        self.assertFalse(by_gid(fig, "constant-delay"))
        self.assertEqual(fig.axes[0].get_ylim()[0], 0)

    def test_compete(self):
        c = ndm.compete(profile="delay=20ms,rate=10mbit", cc="cubic,reno", duration=2, repeat=2)
        fig = plots.time_series(c)
        self.assertEqual(len(fig.axes), 1)  # goodput only: compete has no per-flow srtt
        flows = [f["interval_bps"] / 1e6 for run in c["runs"] for f in run["flows"] if f["controller"] == "reno"]
        np.testing.assert_allclose(by_gid(fig, "mean:reno")[0].get_ydata(), np.mean(flows, axis=0))
        with self.assertRaises(ValueError):
            plots.time_series(c, panels=["srtt"])
        delays = [run["bottleneck"]["one_way_delay_p95_ms"] for run in c["runs"]]
        fig = plots.throughput_delay(c)
        if np.ptp(delays) < 0.01:  # the flows share the bottleneck, and these runs its p95 delay: said so
            self.assertIn(f"{delays[0]:.1f} ms", fig.axes[0].get_xlabel())
            self.assertTrue(by_gid(fig, "constant-delay"))
        else:
            np.testing.assert_allclose(by_gid(fig, "runs:cubic")[0].get_offsets()[:, 0], delays)

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, r"\.pdf, \.png or \.svg"):
            plots.time_series(compare_like([[(1, 1)]], []), self.path("x.jpg"))
        with self.assertRaisesRegex(ValueError, "not an ndm result"):
            plots.runs({"foo": 1})
        with self.assertRaisesRegex(ValueError, "no successful runs"):
            plots.goodput_vs_loss({"k": {"error": "unknown congestion controller"}})
        with self.assertRaisesRegex(ValueError, "profiles"):
            plots.time_series([compare_like([[(1, 1)]], []), dict(compare_like([[(1, 1)]], []), profile="x")])


class CliTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        script = os.path.join(os.path.dirname(os.path.dirname(ndm.__file__)), "ndm-plot")
        self.cli = [sys.executable, script] if os.path.exists(script) else [sys.executable, "-m", "ndm.plots"]

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def run_cli(self, *args):
        return subprocess.run(self.cli + list(args), capture_output=True, text=True)

    def test_sweep_jsonl(self):
        out = self.path("sweep.jsonl")
        ndm.sweep({"cc": ["cubic", "reno"], "profile": ["delay=10ms,rate=10mbit", "delay=10ms,rate=10mbit,loss=1%"],
                   "seed": [1, 2], "duration": 1}, out=out, workers=1)
        p = self.run_cli(out, "-f", "png")
        self.assertEqual(p.returncode, 0, p.stderr)
        # Two profiles: no time series (one profile at a time), the loss curve and the scatter.
        written = p.stdout.split()
        self.assertEqual(written, [self.path("sweep-loss.png"), self.path("sweep-scatter.png")])
        for f in written:
            with open(f, "rb") as fh:
                self.assertEqual(fh.read(8), HEADERS["png"])
        p = self.run_cli(out, "--plots", "time", "--profile", "delay=10ms,rate=10mbit", "-o", self.path("one"))
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.path("one-time.pdf"), "rb") as fh:
            self.assertEqual(fh.read(5), HEADERS["pdf"])

    def test_ndm_compare_json(self):
        exe = os.environ.get("NDM_COMPARE")
        if not exe:
            self.skipTest("NDM_COMPARE (the ndm-compare binary) is not set")
        p = subprocess.run([exe, "--virtual", "--cc", "cubic,reno", "-t", "2", "--repeat", "2", "--packets",
                            "realistic", "-q", "-J", "--out", self.path("cmp")], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        def order(r):
            return (r["controller"], r["seed"])
        as_json = sorted(plots.runs(json.loads(p.stdout)), key=order)
        direct = sorted(plots.runs(ndm.compare(profile="urban-lte", cc="cubic,reno", duration=2, repeat=2,
                                               packet_size="realistic")), key=order)
        self.assertEqual(len(as_json), 4)
        for j, d in zip(as_json, direct):
            self.assertEqual([j[k] for k in ("controller", "seed", "goodput_bps")],
                             [d[k] for k in ("controller", "seed", "goodput_bps")])
            for k in ("t", "goodput", "srtt", "cwnd"):
                np.testing.assert_allclose(j["series"][k], d["series"][k])
        p = self.run_cli(os.path.join(self.path("cmp"), "results.json"), "-o", self.path("c"), "-f", "svg")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), [self.path("c-time.svg"), self.path("c-scatter.svg")])

    def test_bad_input(self):
        self.assertEqual(self.run_cli("--help").returncode, 0)
        bad = self.path("bad.json")
        for content in ("{not json at all", '{"foo": 1}', "[]", '{"runs": [{"nope": 1}]}'):
            with open(bad, "w") as f:
                f.write(content)
            p = self.run_cli(bad)
            self.assertEqual(p.returncode, 2, (content, p.stderr))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith(f"ndm-plot: {bad}: "), p.stderr)
        p = self.run_cli(self.path("missing.jsonl"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("No such file", p.stderr)
        p = self.run_cli(bad, "--plots", "pie")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown figure 'pie'", p.stderr)


if __name__ == "__main__":
    unittest.main()
