"""The C++ trainer's metrics (src/train/learn.cpp: evaluate, format_metrics):
ROC AUC as Mann–Whitney U with tied scores given their average rank,
accuracy and confusion at P >= 0.5, expected calibration error over 10
equal-width bins, log-loss and Brier score."""

from __future__ import annotations

import numpy as np


def auc(p: np.ndarray, y: np.ndarray) -> float:
    """AUC = (rank sum of the positives − n+(n+ + 1)/2) / (n+ n−), ties averaged;
    0.5 when one class is absent."""
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(y)
    n = len(p)
    pos = int((y == 1).sum())
    neg = n - pos
    if pos == 0 or neg == 0:
        return 0.5
    order = np.argsort(p, kind="stable")
    ps, ys = p[order], y[order]
    starts = np.flatnonzero(np.r_[True, ps[1:] != ps[:-1]])
    ends = np.r_[starts[1:], n]
    avg = (starts + 1 + ends) / 2.0  # ranks i+1 .. j of a tie group [i, j)
    group = np.repeat(np.arange(len(starts)), ends - starts)
    rank_sum = avg[group][ys == 1].sum()
    return float((rank_sum - pos * (pos + 1) / 2) / (pos * neg))


def evaluate(p: np.ndarray, y: np.ndarray) -> dict:
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(y)
    if len(p) != len(y):
        raise ValueError("evaluate: predictions and labels differ in size")
    m = {"n": len(p), "positives": int((y == 1).sum())}
    if len(p) == 0:
        return m | {"accuracy": 0.0, "auc": 0.0, "ece": 0.0, "log_loss": 0.0, "brier": 0.0,
                    "tp": 0, "fp": 0, "tn": 0, "fn": 0}
    hit = p >= 0.5
    m["tp"] = int((hit & (y == 1)).sum())
    m["fp"] = int((hit & (y != 1)).sum())
    m["fn"] = int((~hit & (y == 1)).sum())
    m["tn"] = int((~hit & (y != 1)).sum())
    q = np.clip(p, 1e-12, 1 - 1e-12)
    m["log_loss"] = float(-np.where(y == 1, np.log(q), np.log(1 - q)).mean())
    m["brier"] = float(((p - y) ** 2).mean())
    m["accuracy"] = (m["tp"] + m["tn"]) / len(p)
    m["auc"] = auc(p, y)
    bins = np.minimum(9, (np.maximum(p, 0.0) * 10).astype(np.int64))
    ece = 0.0
    for b in range(10):
        inside = bins == b
        k = int(inside.sum())
        if k:
            ece += k / len(p) * abs(p[inside].mean() - y[inside].mean())
    m["ece"] = ece
    return m


def format_metrics(m: dict) -> str:
    """One line, the numbers of the C++ trainer's first metrics line."""
    share = 100.0 * m["positives"] / m["n"] if m["n"] else 0.0
    return (f"n={m['n']} congestive={m['positives']} ({share:.1f} %)  accuracy={m['accuracy']:.4f}  "
            f"AUC={m['auc']:.4f}  ECE={m['ece']:.4f}  log-loss={m['log_loss']:.4f}  Brier={m['brier']:.4f}")
