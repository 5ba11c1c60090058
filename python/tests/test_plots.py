"""ndm.plots and ndm-plot: the figures are written (valid PNG, PDF, SVG) and plot the data given —
the lines, bands, error bars and markers of the returned Figures are checked against the input
and against confidence half-widths computed by hand; no image comparisons.

Skipped without Debian's python3-matplotlib, unless NDM_REQUIRE_MATPLOTLIB=1 (.ci/run)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import ndm_test_util

ndm_test_util.import_or_skip("matplotlib", "NDM_REQUIRE_MATPLOTLIB", "python3-matplotlib")

import ndm  # noqa: E402
import ndm.plots as plots  # noqa: E402

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


def test_t_quantile_and_half_width():
    # Closed forms: df 1, t = tan(0.475 π); df 2, P(|T| < t) = t / sqrt(t² + 2) = 0.95.
    assert round(plots.t_quantile_975(1) - math.tan(0.475 * math.pi), 9) == 0
    t2 = math.sqrt(2 * 0.95 ** 2 / (1 - 0.95 ** 2))
    assert round(plots.t_quantile_975(2) - t2, 9) == 0
    assert round(plots.t_quantile_975(40) - 2.021075, 5) == 0  # as tests/tools/test_report.cpp
    m, h = plots.mean_ci95([1, 2, 3])
    assert m == 2
    assert round(h - (t2 * 1 / math.sqrt(3)), 9) == 0
    assert plots.mean_ci95([5])[1] == 0


@pytest.fixture
def path(tmp_path):
    """path(name): a file in the test's own temporary directory."""
    return lambda name: str(tmp_path / name)


def check_file(file):
    with open(file, "rb") as f:
        head = f.read(16)
    assert head.startswith(HEADERS[file.rsplit(".", 1)[1]]), (file, head)
    assert os.path.getsize(file) > 1000


def test_time_series_by_hand(path):
    # "a": three runs of two intervals (bytes → Mbit/s: 125 000 B in 1 s is 1 Mbit/s); "b": one run.
    a = [[(125000, 10), (250000, 30)], [(250000, 20), (250000, 30)], [(375000, 30), (500000, 60)]]
    b = [[(125000, 40), (125000, 50), (125000, 60)]]
    fig = plots.time_series(compare_like(a, b), path("t.png"))
    check_file(path("t.png"))
    goodput_ax, srtt_ax = fig.axes
    assert goodput_ax.get_ylabel() == "goodput (Mbit/s)"
    assert srtt_ax.get_ylabel() == "srtt (ms)"
    assert srtt_ax.get_xlabel() == "time (s)"
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
        assert round(ys.max() - (m + h), 9) == 0
        assert round(ys.min() - max(m - h, 0), 9) == 0  # clamped at 0 as plot.svg
    assert len([l for l in by_gid(fig, "run:a") if l.axes is goodput_ax]) == 3
    # srtt of "a": 10, 20, 30 then 30, 30, 60.
    srtt_a = [l for l in by_gid(fig, "mean:a") if l.axes is srtt_ax][0]
    np.testing.assert_allclose(srtt_a.get_ydata(), [20, 40])
    srtt_band = [c for c in by_gid(fig, "band:a") if c.axes is srtt_ax][0].get_paths()[0].vertices
    assert round(srtt_band[np.isclose(srtt_band[:, 0], 1), 1].max() - (20 + t2 * 10 / math.sqrt(3)), 7) == 0
    # "b", one run: its own line, no band.
    mean_b = [l for l in by_gid(fig, "mean:b") if l.axes is goodput_ax][0]
    np.testing.assert_allclose(mean_b.get_ydata(), [1, 1, 1])
    assert not by_gid(fig, "band:b")


def test_time_series_of_compare(path):
    r = ndm.compare(profile="urban-lte", cc="cubic,reno", duration=3, repeat=3, packet_size="realistic")
    fig = plots.time_series(r, path("t.pdf"), panels=["goodput", "srtt", "cwnd"])
    check_file(path("t.pdf"))
    cubic = [run["intervals"] for run in r["runs"] if run["controller"] == "cubic"]
    rates = [iv["bytes_received"] * 8 / (iv["end_s"] - iv["begin_s"]) / 1e6 for iv in cubic]
    goodput = [l for l in by_gid(fig, "mean:cubic") if l.axes is fig.axes[0]][0]
    np.testing.assert_allclose(goodput.get_ydata(), np.mean(rates, axis=0))
    cwnd = [l for l in by_gid(fig, "mean:cubic") if l.axes is fig.axes[2]][0]
    np.testing.assert_allclose(cwnd.get_ydata(), np.mean([iv["cwnd"] / 1024 for iv in cubic], axis=0))
    runs = [l for l in by_gid(fig, "run:cubic") if l.axes is fig.axes[1]]
    np.testing.assert_allclose(sorted(l.get_ydata()[0] for l in runs), sorted(iv["srtt_ms"][0] for iv in cubic))
    assert fig.axes[2].get_ylabel() == "cwnd (KBytes)"


def test_goodput_vs_loss(path):
    assert plots.loss_percent("urban-lte") == 5  # the preset's own loss
    assert plots.loss_percent("urban-lte,loss=1%") == 1
    assert plots.loss_percent("delay=10ms,rate=10mbit") == 0
    grid = {"cc": ["cubic", "reno"], "profile": ["delay=10ms,rate=10mbit", "delay=10ms,rate=10mbit,loss=2%"],
            "seed": [1, 2, 3], "duration": 1}
    s = ndm.sweep(grid, workers=1)
    fig = plots.goodput_vs_loss(s, path("l.svg"))
    check_file(path("l.svg"))
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("loss rate (%)", "goodput (Mbit/s)")
    for cc in grid["cc"]:
        line = by_gid(fig, f"loss:{cc}")[0]
        np.testing.assert_allclose(line.get_xdata(), [0, 2])
        stats = [plots.mean_ci95([r["goodput_bps"] / 1e6 for r in s.values()
                                  if r["controller"] == cc and r["profile"] == p]) for p in grid["profile"]]
        np.testing.assert_allclose(line.get_ydata(), [m for m, _ in stats])
        # The error bars: a vertical segment from mean - h to mean + h at each loss rate.
        segs = [seg for c in ax.collections for seg in c.get_segments()]
        for x, (m, h) in zip([0, 2], stats):
            assert any(np.allclose(seg, [[x, m - h], [x, m + h]]) for seg in segs), (cc, x, m, h)


def test_throughput_delay(path):
    r = compare_like([[(125000, 10)]] * 3, [[(125000, 10)]])
    fig = plots.throughput_delay(r, path("s.png"))
    check_file(path("s.png"))
    ax = fig.axes[0]
    assert ax.xaxis_inverted()  # Pantheon's: lower delay to the right
    assert ax.get_xlabel() == "95th percentile one-way delay (ms)"
    pts = by_gid(fig, "runs:a")[0].get_offsets()
    np.testing.assert_allclose(pts, [[20, 1], [21, 2], [22, 3]])
    np.testing.assert_allclose(by_gid(fig, "mean:a")[0].get_xydata(), [[21, 2]])
    ellipse = by_gid(fig, "ellipse:a")[0]
    np.testing.assert_allclose(ellipse.center, [21, 2])
    # cov of (20, 21, 22) and (1, 2, 3) is [[1, 1], [1, 1]]: one axis of 2·sqrt(2) along the diagonal.
    assert round(max(ellipse.width, ellipse.height) - (2 * math.sqrt(2)), 7) == 0
    assert round(min(ellipse.width, ellipse.height) - 0, 6) == 0
    assert not by_gid(fig, "ellipse:b")  # one run
    q = plots.throughput_delay(r, delay="queue")
    np.testing.assert_allclose(by_gid(q, "runs:a")[0].get_offsets()[:, 0], [1, 2, 3])


def test_throughput_delay_constant_delay(path):
    # Every run at one delay (urban-lte: no queue, the profile's own delay): no flat ellipse and no
    # shared x; each controller's runs in a column, a 1-σ bar clipped at 0, and a note saying why.
    r = compare_like([[(125000, 10)]] * 3, [[(125000, 10)]] * 2)
    for run in r["runs"]:
        run["path"]["one_way_delay_p95_ms"] = 69.632
    r["runs"][2]["goodput_bps"] = 10e6  # a: 1, 2, 10 Mbit/s: mean 4.33, σ 4.93 reaches below 0
    fig = plots.throughput_delay(r, path("c.png"))
    check_file(path("c.png"))
    ax = fig.axes[0]
    assert not by_gid(fig, "ellipse:a")
    note = by_gid(fig, "constant-delay")[0].get_text().replace("\n", " ")
    assert "is 69.6 ms" in note
    assert "cannot tell the controllers apart" in note
    assert "69.6 ms" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    np.testing.assert_allclose(by_gid(fig, "runs:a")[0].get_offsets()[:, 1], [1, 2, 10])
    assert all(abs(x) < 0.5 for x in by_gid(fig, "runs:a")[0].get_offsets()[:, 0])
    assert all(abs(x - 1) < 0.5 for x in by_gid(fig, "runs:b")[0].get_offsets()[:, 0])
    assert ax.get_ylim()[0] == 0
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
    assert by_gid(fig, "ellipse:a")
    assert by_gid(fig, "spread:b")
    assert not by_gid(fig, "constant-delay")
    assert fig.axes[0].get_ylim()[0] == 0


def test_compete():
    c = ndm.compete(profile="delay=20ms,rate=10mbit", cc="cubic,reno", duration=2, repeat=2)
    fig = plots.time_series(c)
    assert len(fig.axes) == 1  # goodput only: compete has no per-flow srtt
    flows = [f["interval_bps"] / 1e6 for run in c["runs"] for f in run["flows"] if f["controller"] == "reno"]
    np.testing.assert_allclose(by_gid(fig, "mean:reno")[0].get_ydata(), np.mean(flows, axis=0))
    with pytest.raises(ValueError):
        plots.time_series(c, panels=["srtt"])
    delays = [run["bottleneck"]["one_way_delay_p95_ms"] for run in c["runs"]]
    fig = plots.throughput_delay(c)
    if np.ptp(delays) < 0.01:  # the flows share the bottleneck, and these runs its p95 delay: said so
        assert f"{delays[0]:.1f} ms" in fig.axes[0].get_xlabel()
        assert by_gid(fig, "constant-delay")
    else:
        np.testing.assert_allclose(by_gid(fig, "runs:cubic")[0].get_offsets()[:, 0], delays)


def test_errors(path):
    with pytest.raises(ValueError, match=r"\.pdf, \.png or \.svg"):
        plots.time_series(compare_like([[(1, 1)]], []), path("x.jpg"))
    with pytest.raises(ValueError, match="not an ndm result"):
        plots.runs({"foo": 1})
    with pytest.raises(ValueError, match="no successful runs"):
        plots.goodput_vs_loss({"k": {"error": "unknown congestion controller"}})
    with pytest.raises(ValueError, match="profiles"):
        plots.time_series([compare_like([[(1, 1)]], []), dict(compare_like([[(1, 1)]], []), profile="x")])


# ndm-plot: <build>/python/ndm-plot beside the build tree's package, else python3 -m ndm.plots.

def run_cli(*args):
    script = os.path.join(os.path.dirname(os.path.dirname(ndm.__file__)), "ndm-plot")
    cli = [sys.executable, script] if os.path.exists(script) else [sys.executable, "-m", "ndm.plots"]
    return subprocess.run(cli + list(args), capture_output=True, text=True)


def test_sweep_jsonl(path):
    out = path("sweep.jsonl")
    ndm.sweep({"cc": ["cubic", "reno"], "profile": ["delay=10ms,rate=10mbit", "delay=10ms,rate=10mbit,loss=1%"],
               "seed": [1, 2], "duration": 1}, out=out, workers=1)
    p = run_cli(out, "-f", "png")
    assert p.returncode == 0, p.stderr
    # Two profiles: no time series (one profile at a time), the loss curve and the scatter.
    written = p.stdout.split()
    assert written == [path("sweep-loss.png"), path("sweep-scatter.png")]
    for f in written:
        with open(f, "rb") as fh:
            assert fh.read(8) == HEADERS["png"]
    p = run_cli(out, "--plots", "time", "--profile", "delay=10ms,rate=10mbit", "-o", path("one"))
    assert p.returncode == 0, p.stderr
    with open(path("one-time.pdf"), "rb") as fh:
        assert fh.read(5) == HEADERS["pdf"]


def test_ndm_compare_json(path):
    exe = os.environ.get("NDM_COMPARE")
    if not exe:
        pytest.skip("NDM_COMPARE (the ndm-compare binary) is not set")
    p = subprocess.run([exe, "--virtual", "--cc", "cubic,reno", "-t", "2", "--repeat", "2", "--packets",
                        "realistic", "-q", "-J", "--out", path("cmp")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    def order(r):
        return (r["controller"], r["seed"])
    as_json = sorted(plots.runs(json.loads(p.stdout)), key=order)
    direct = sorted(plots.runs(ndm.compare(profile="urban-lte", cc="cubic,reno", duration=2, repeat=2,
                                           packet_size="realistic")), key=order)
    assert len(as_json) == 4
    for j, d in zip(as_json, direct):
        assert [j[k] for k in ("controller", "seed", "goodput_bps")] == [d[k] for k in ("controller", "seed", "goodput_bps")]
        for k in ("t", "goodput", "srtt", "cwnd"):
            np.testing.assert_allclose(j["series"][k], d["series"][k])
    p = run_cli(os.path.join(path("cmp"), "results.json"), "-o", path("c"), "-f", "svg")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [path("c-time.svg"), path("c-scatter.svg")]


def test_bad_input(path):
    assert run_cli("--help").returncode == 0
    bad = path("bad.json")
    for content in ("{not json at all", '{"foo": 1}', "[]", '{"runs": [{"nope": 1}]}'):
        with open(bad, "w") as f:
            f.write(content)
        p = run_cli(bad)
        assert p.returncode == 2, (content, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert p.stderr.startswith(f"ndm-plot: {bad}: "), p.stderr
    p = run_cli(path("missing.jsonl"))
    assert p.returncode == 2
    assert "No such file" in p.stderr
    p = run_cli(bad, "--plots", "pie")
    assert p.returncode == 2
    assert "unknown figure 'pie'" in p.stderr

