"""Figures for papers from ndm's results, with matplotlib (docs/python.md, "Plots"):

    r = ndm.compare(profile="urban-lte", cc="cubic,reno", repeat=10, packet_size="realistic")
    ndm.plots.time_series(r, "time.pdf")             # goodput and srtt over time, mean ± 95 % CI
    s = ndm.sweep({"cc": ["cubic", "reno"], "profile": [f"urban-lte,loss={p}%" for p in (0, 1, 2, 5)],
                   "seed": range(1, 11), "duration": 10})
    ndm.plots.goodput_vs_loss(s, "loss.png")         # mean ± 95 % CI over seeds per loss rate
    ndm.plots.throughput_delay(s, "scatter.svg")     # Pantheon's throughput vs p95 delay

Every function takes what ndm.compare, ndm.compete, ndm.simulate and ndm.sweep return (or a
list of them, or ndm-compare's results.json / -J output, or a sweep's JSONL entries) and
returns the matplotlib Figure, written to `out` (PDF, PNG or SVG by its extension) when given.
No display is needed: figures are drawn by the Agg family of canvases, without pyplot. The
quantities and labels are those of ndm-compare's plot.svg (tools/compare/report.cpp), so the two
sit side by side. Command line: ndm-plot (python3 -m ndm.plots).
"""

import argparse
import json
import math
import os
import re
import sys
import textwrap

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from ._ndm import Profile

FORMATS = ("pdf", "png", "svg")
# ndm-compare's plot.svg colours, controller by controller.
COLORS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
PANELS = {"goodput": "goodput (Mbit/s)", "srtt": "srtt (ms)", "cwnd": "cwnd (KBytes)"}
DELAYS = {"one_way": ("one_way_delay_p95_ms", "95th percentile one-way delay (ms)"),
          "queue": ("queue_delay_p95_ms", "95th percentile queueing delay (ms)")}


# ---- statistics: mean and Student-t 95 % half-width, as ndm-compare's tables and plot.svg

def _t_two_sided(t, df):
    """P(|T| < t) for Student's t with integer df (Abramowitz & Stegun 26.7.3, 26.7.4)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2 == 0:
        for k in range(1, (df - 2) // 2 + 1):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return math.sin(theta) * total
    if df == 1:
        return 2 * theta / math.pi
    for k in range(1, (df - 3) // 2 + 1):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)


def t_quantile_975(df):
    """The 0.975 quantile of Student's t with integer df ≥ 1 (bisection: the CDF rises in t)."""
    lo, hi = 0.0, 100.0  # t(0.975, 1) = 12.71 is the largest
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_two_sided(mid, df) < 0.95 else (lo, mid)
    return (lo + hi) / 2


def mean_ci95(values):
    """(mean, 95 % confidence half-width) of a sample; the half-width is 0 for fewer than 2 values."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return (float(v.mean()) if v.size else math.nan), 0.0
    return float(v.mean()), t_quantile_975(v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)


# ---- every input as a list of runs: one dict per controller run (or competing flow)

def _run(controller, profile, seed, goodput_bps, path, t=None, goodput_mbps=None, srtt_ms=None, cwnd=None):
    series = {}
    if t is not None:
        series = {"t": np.asarray(t, dtype=float), "goodput": np.asarray(goodput_mbps, dtype=float)}
        if srtt_ms is not None:
            series["srtt"] = np.asarray(srtt_ms, dtype=float)
        if cwnd is not None:
            series["cwnd"] = np.asarray(cwnd, dtype=float) / 1024
    return {"controller": controller, "profile": profile, "seed": seed, "goodput_bps": float(goodput_bps),
            "one_way_delay_p95_ms": path.get("one_way_delay_p95_ms"),
            "queue_delay_p95_ms": path.get("queue_delay_p95_ms"), "series": series}


def _mbps(nbytes, begin, end):
    """Per-interval goodput in Mbit/s: bytes delivered to the application over the interval."""
    dt = np.asarray(end, dtype=float) - np.asarray(begin, dtype=float)
    return np.where(dt > 0, np.asarray(nbytes, dtype=float) * 8 / np.where(dt > 0, dt, 1) / 1e6, 0.0)


def _from_compare_py(r):
    """ndm.compare's dict: runs with intervals as NumPy arrays."""
    for run in r["runs"]:
        if run.get("error"):
            continue
        iv = run["intervals"]
        yield _run(run["controller"], r["profile"], run["seed"], run["goodput_bps"], run["path"], iv["end_s"],
                   _mbps(iv["bytes_received"], iv["begin_s"], iv["end_s"]), iv["srtt_ms"], iv["cwnd"])


def _from_compare_json(r):
    """ndm-compare's results.json / -J: controllers with their runs, intervals as rows."""
    for c in r["controllers"]:
        for run in c["runs"]:
            if run.get("error"):
                continue
            rows = run.get("intervals", [])
            col = {k: [row[k] for row in rows] for k in ("start", "end", "bytes_received", "srtt_ms", "cwnd")}
            yield _run(c["name"], r["profile"], run["seed"], run["receiver"]["goodput_bps"], run["path"], col["end"],
                       _mbps(col["bytes_received"], col["start"], col["end"]), col["srtt_ms"], col["cwnd"])


def _from_compete(r):
    """ndm.compete / ndm-compare --compete: each flow a run, with the bottleneck's delay."""
    for run in r["runs"]:
        step = run["interval_s"]
        for flow in run["flows"]:
            if flow.get("error"):
                continue
            bps = np.asarray(flow["interval_bps"], dtype=float)
            t = flow["start_s"] + step * np.arange(1, bps.size + 1)
            yield _run(flow["controller"], r["profile"], run["seed"], flow["goodput_bps"], run["bottleneck"], t,
                       bps / 1e6)


def _from_simulate(r):
    s = r["samples"]
    yield _run(r["controller"], r["profile"], r["seed"], r["goodput_bps"], r["path"], s["end_s"],
               _mbps(s["bytes"], s["begin_s"], s["end_s"]), s["srtt_ms"], s["cwnd"])


def runs(data):
    """The runs in `data` (see the module's doc) as dicts: controller, profile, seed, goodput_bps,
    one_way_delay_p95_ms, queue_delay_p95_ms and `series` (t, goodput, srtt, cwnd arrays per interval).
    Failed runs and jobs are left out; anything else is a ValueError."""
    if isinstance(data, (list, tuple)):
        return [run for item in data for run in runs(item)]
    if not isinstance(data, dict):
        raise ValueError(f"not an ndm result: {type(data).__name__}")
    if "series" in data and "controller" in data:  # already one of ours
        return [data]
    if "key" in data and "result" in data:  # a sweep's JSONL entry
        return runs(data["result"])
    if data.get("mode") == "compete":
        return list(_from_compete(data))
    if "runs" in data:
        return list(_from_compare_py(data))
    if "controllers" in data and data["controllers"] and isinstance(data["controllers"][0], dict):
        return list(_from_compare_json(data))
    if "samples" in data:
        return [] if data.get("error") else list(_from_simulate(data))
    if "error" in data:  # a sweep's failed job
        return []
    if data and all(isinstance(v, dict) for v in data.values()):  # ndm.sweep's key → result
        return runs(list(data.values()))
    raise ValueError("not an ndm result: expected ndm.compare, ndm.compete, ndm.simulate or ndm.sweep output")


def _by_controller(rs):
    out = {}
    for r in rs:
        out.setdefault(r["controller"], []).append(r)
    return out


def _save(fig, out):
    if out is not None:
        ext = os.path.splitext(str(out))[1].lstrip(".").lower()
        if ext not in FORMATS:
            raise ValueError(f"{out}: the file name must end in .pdf, .png or .svg")
        fig.savefig(out, format=ext, bbox_inches="tight")
    return fig


def _title(rs):
    profiles = sorted({r["profile"] for r in rs})
    return profiles[0] if len(profiles) == 1 else f"{len(profiles)} profiles"


def _select(data, profile):
    rs = runs(data)
    if profile is not None:
        rs = [r for r in rs if r["profile"] == profile]
    if not rs:
        raise ValueError("no successful runs" + (f" with profile {profile!r}" if profile is not None else ""))
    return rs


# ---- goodput and delay over time

def mean_curve(series, name):
    """At each interval index, over the runs that reached it: the mean end time, the mean of
    `name` and its 95 % half-width (ndm-compare's plot.svg does the same)."""
    t, mean, half = [], [], []
    for k in range(max(len(s["t"]) for s in series)):
        reached = [s for s in series if k < len(s["t"])]
        m, h = mean_ci95([s[name][k] for s in reached])
        t.append(float(np.mean([s["t"][k] for s in reached])))
        mean.append(m)
        half.append(h)
    return np.array(t), np.array(mean), np.array(half)


def time_series(data, out=None, panels=None, profile=None):
    """Goodput and srtt (`panels`: any of "goodput", "srtt", "cwnd"; default those the runs have) over
    time per controller: the mean over the runs (repeats, seeds) with its 95 % confidence band (Student t,
    clamped at 0), and each run faintly. One profile at a time."""
    rs = [r for r in _select(data, profile) if r["series"]]
    if not rs:
        raise ValueError("no per-interval samples in these results")
    if len({r["profile"] for r in rs}) > 1:
        raise ValueError(f"runs of {len({r['profile'] for r in rs})} profiles: choose one (profile=)")
    if panels is None:
        panels = [p for p in ("goodput", "srtt") if any(p in r["series"] for r in rs)]
    for p in panels:
        if p not in PANELS:
            raise ValueError(f"unknown panel {p!r} (known: {', '.join(PANELS)})")
        if not all(p in r["series"] for r in rs):
            raise ValueError(f"{p}: not in these results (ndm.compete gives goodput only)")
    fig = Figure(figsize=(7.5, 2.8 * len(panels) + 0.6))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    groups = _by_controller(rs)
    for ax, p in zip(axes, panels):
        for i, (c, group) in enumerate(groups.items()):
            color = COLORS[i % len(COLORS)]
            series = [r["series"] for r in group]
            t, m, h = mean_curve(series, p)
            if len(group) > 1:
                ax.fill_between(t, np.maximum(m - h, 0), m + h, color=color, alpha=0.18, linewidth=0, gid=f"band:{c}")
                for s in series:
                    ax.plot(s["t"], s[p], color=color, alpha=0.3, linewidth=1, gid=f"run:{c}")
            label = f"{c} (mean of {len(group)} runs)" if len(group) > 1 else c
            ax.plot(t, m, color=color, linewidth=2, label=label, gid=f"mean:{c}")
        ax.set_ylabel(PANELS[p])
        ax.set_ylim(bottom=0)
        ax.grid(True, color="#ddd")
    axes[-1].set_xlabel("time (s)")
    axes[0].set_xlim(left=0)
    n = max(len(g) for g in groups.values())
    axes[0].set_title(_title(rs) + (" — mean and 95 % confidence band (Student t), faint: each run" if n > 1 else ""),
                      fontsize=10)
    axes[0].legend(loc="best", fontsize=8)
    return _save(fig, out)


# ---- goodput vs loss rate

_LOSS = re.compile(r"\bloss=([0-9.eE+-]+)%")
_loss_of = {}


def loss_percent(profile):
    """The profile's configured random loss (the sender → receiver direction), in %: the emulator's own
    parse of the string, so presets (urban-lte: 5 %) and overrides ("urban-lte,loss=1%") both count."""
    if profile not in _loss_of:
        m = _LOSS.search(Profile(profile).up)
        _loss_of[profile] = float(m.group(1)) if m else 0.0
    return _loss_of[profile]


def goodput_vs_loss(data, out=None):
    """Goodput against the profile's loss rate per controller: the mean over the runs (seeds, repeats) at
    each loss rate with 95 % confidence error bars (Student t)."""
    rs = _select(data, None)
    fig = Figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
    n = 0
    for i, (c, group) in enumerate(_by_controller(rs).items()):
        at = {}
        for r in group:
            at.setdefault(loss_percent(r["profile"]), []).append(r["goodput_bps"] / 1e6)
        n = max([n] + [len(v) for v in at.values()])
        x = sorted(at)
        stats = [mean_ci95(at[v]) for v in x]
        mean, half = np.array(stats).T
        ax.errorbar(np.array(x), mean, yerr=half, marker="o", capsize=3,
                    color=COLORS[i % len(COLORS)], label=c, gid=f"loss:{c}")
    ax.set_xlabel("loss rate (%)")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, color="#ddd")
    ax.set_title(f"goodput vs loss — mean ± 95 % CI (Student t) over up to {n} runs a point", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    return _save(fig, out)


# ---- Pantheon's throughput vs 95th percentile delay

def throughput_delay(data, out=None, delay="one_way", profile=None):
    """Pantheon's scatter per controller: a marker per run at (95th percentile delay, goodput), the mean
    as a larger marker and the 1-σ covariance ellipse of the runs; the delay axis is inverted, so better
    is up and to the right. `delay`: "one_way" (the path's one-way delay) or "queue" (its queueing delay).
    Goodput is never negative: the axis starts at 0 and clips what reaches below. A controller whose runs
    all had one delay gets a 1-σ goodput bar instead of a flat ellipse; where every run of every controller
    had the same delay (a path without a bottleneck queue, such as urban-lte: its delay is the profile's
    base and jitter whatever the controller), the delay cannot tell them apart, and the figure says so and
    shows each controller's runs side by side at that delay instead."""
    if delay not in DELAYS:
        raise ValueError(f"unknown delay {delay!r} (known: {', '.join(DELAYS)})")
    field, label = DELAYS[delay]
    rs = [r for r in _select(data, profile) if r[field] is not None]
    if not rs:
        raise ValueError(f"no run has a measured {field}")
    groups = _by_controller(rs)
    delays = np.array([r[field] for r in rs], dtype=float)
    fig = Figure(figsize=(6.5, 4.8))
    ax = fig.subplots()
    if len(rs) > 1 and _constant(delays):
        _goodput_strips(ax, groups, field, label, float(delays.mean()), _title(rs))
    else:
        for i, (c, group) in enumerate(groups.items()):
            color = COLORS[i % len(COLORS)]
            x = np.array([r[field] for r in group], dtype=float)
            y = np.array([r["goodput_bps"] / 1e6 for r in group])
            ax.scatter(x, y, s=14, color=color, alpha=0.45, linewidths=0, gid=f"runs:{c}")
            ax.plot([x.mean()], [y.mean()], marker="o", markersize=9, color=color, linestyle="none", label=c,
                    gid=f"mean:{c}")
            ax.annotate(c, (x.mean(), y.mean()), textcoords="offset points", xytext=(6, 6), fontsize=8, color=color)
            if len(group) > 1 and _constant(x):
                _spread_bar(ax, x.mean(), y, color, c)
            elif len(group) > 1:
                values, vectors = np.linalg.eigh(np.cov(x, y))
                angle = math.degrees(math.atan2(vectors[1, 1], vectors[0, 1]))
                ax.add_patch(Ellipse((x.mean(), y.mean()), 2 * math.sqrt(max(values[1], 0)),
                                     2 * math.sqrt(max(values[0], 0)), angle=angle, fill=False, color=color,
                                     gid=f"ellipse:{c}"))
        ax.invert_xaxis()
        ax.set_xlabel(label)
        ax.set_title(f"{_title(rs)} — better: up and to the right", fontsize=10)
        ax.legend(loc="best", fontsize=8)
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, color="#ddd")
    return _save(fig, out)


def _constant(x):
    """The delays are one value (within 10 µs): no spread to draw along the delay axis."""
    return float(np.ptp(x)) < 0.01


def _spread_bar(ax, x, y, color, c):
    """The runs' mean goodput ± one standard deviation at delay x, the lower end clipped at 0."""
    m, sd = float(y.mean()), float(y.std(ddof=1))
    bars = ax.errorbar([x], [m], yerr=[[min(sd, m)], [sd]], color=color, capsize=4, linestyle="none")
    for segments in bars.lines[2]:
        segments.set_gid(f"spread:{c}")


def _goodput_strips(ax, groups, field, label, value, title):
    """Every run had the same delay: one column per controller with its runs (spread sideways, in run
    order), the mean and the 1-σ bar of goodput, and a note why the delay axis holds nothing."""
    for i, (c, group) in enumerate(groups.items()):
        color = COLORS[i % len(COLORS)]
        y = np.array([r["goodput_bps"] / 1e6 for r in group])
        x = i + (np.linspace(-0.15, 0.15, len(y)) if len(y) > 1 else np.zeros(1))
        ax.scatter(x, y, s=14, color=color, alpha=0.45, linewidths=0, gid=f"runs:{c}")
        ax.plot([i], [y.mean()], marker="o", markersize=9, color=color, linestyle="none", label=c, gid=f"mean:{c}")
        if len(y) > 1:
            _spread_bar(ax, i, y, color, c)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_xlabel(f"controller (every run: {label.replace(' (ms)', '')} {value:.1f} ms)")
    why = ("no queue builds on this path" if field == "queue_delay_p95_ms"
           else "the path's own delay (base + jitter): no bottleneck queue builds on it")
    ax.set_title(f"{title} — goodput per run; the delay is the same for all", fontsize=10)
    note = (f"Every run's {label.replace(' (ms)', '')} is {value:.1f} ms, {why}, so delay cannot tell the "
            "controllers apart. Bars: mean ± 1 σ of goodput.")
    ax.text(0.02, 0.02, textwrap.fill(note, 80), transform=ax.transAxes, fontsize=7.5, va="bottom",
            gid="constant-delay")


# ---- ndm-plot

def read(path):
    """A results file: one JSON document (ndm-compare's results.json / -J, a dump of ndm.compare ...)
    or JSON Lines (a sweep's file, a torn last line ignored)."""
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    entries = []
    for line in text.splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    if not entries:
        raise ValueError("neither JSON nor JSON Lines")
    return entries


def _auto(rs):
    """The figures these runs make sense for."""
    kinds = []
    if any(r["series"] for r in rs) and len({r["profile"] for r in rs}) == 1:
        kinds.append("time")
    if len({loss_percent(r["profile"]) for r in rs}) > 1:
        kinds.append("loss")
    kinds.append("scatter")
    return kinds


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ndm-plot", description="Draws the evaluation figures from ndm results: "
                                 "goodput and srtt over time with 95 % confidence bands (time), goodput vs loss "
                                 "rate (loss) and Pantheon's throughput vs 95th percentile delay (scatter). INPUT: "
                                 "an ndm-sweep JSONL file, or ndm-compare's results.json or -J output.")
    ap.add_argument("input")
    ap.add_argument("-o", "--out", metavar="PREFIX",
                    help="write PREFIX-time.FORMAT, PREFIX-loss.FORMAT, ... (default: INPUT without its extension)")
    ap.add_argument("-f", "--format", default="pdf", choices=FORMATS, help="file format (default pdf)")
    ap.add_argument("--plots", default="auto", help="comma-separated: time, loss, scatter (default: those the "
                    "input has data for)")
    ap.add_argument("--profile", help="only the runs of this profile string")
    ap.add_argument("--delay", default="one_way", choices=sorted(DELAYS), help="the scatter's delay (default one_way)")
    a = ap.parse_args(argv)
    kinds = None if a.plots == "auto" else [k.strip() for k in a.plots.split(",")]
    for k in kinds or []:
        if k not in ("time", "loss", "scatter"):
            ap.error(f"--plots: unknown figure {k!r} (known: time, loss, scatter)")
    prefix = a.out or os.path.splitext(a.input)[0]
    try:
        data = read(a.input)
        rs = _select(data, a.profile)
        draw = {"time": lambda out: time_series(rs, out), "loss": lambda out: goodput_vs_loss(rs, out),
                "scatter": lambda out: throughput_delay(rs, out, delay=a.delay)}
        for k in kinds or _auto(rs):
            out = f"{prefix}-{k}.{a.format}"
            draw[k](out)
            print(out)
    except (OSError, ValueError, KeyError, TypeError) as e:
        what = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        print(f"ndm-plot: {a.input}: {what}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
