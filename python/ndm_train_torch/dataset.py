"""The dataset `ndm-train generate` writes (docs/ndm-training.md §3) and the
examples the C++ trainer takes from it (src/train/learn.cpp: select,
Standardizer), reproduced exactly so both trainers see the same data.

A sample is the rounds before a loss then the at-loss vector, as the
controller feeds its GRU; samples are held as arrays: x [N, 17, 8] (steps
left-aligned, zero padding after), lengths [N], y [N], scenario [N].
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

MAGIC = "# ndm-dataset v1"
FEATURES = ("q_now", "q_p50", "q_p90", "slope", "entropy", "loss_rate", "rate_ratio", "loss_run")
F = len(FEATURES)
MAX_ROUNDS = 16
MAX_STEPS = MAX_ROUNDS + 1
SPLITS = ("train", "val", "test")
CAUSES = ("random", "burst", "queue", "aqm", "outage", "spurious")
MAX_DATASET_BYTES = 4 << 30  # the C++ reader's cap (util::kMaxDatasetFileBytes)
_FIXED = 11 + len(CAUSES) + 1  # fields before the features


class DatasetError(ValueError):
    """A dataset that is not what `ndm-train generate` writes; names the line."""


@dataclass
class Records:
    """Every R line, column-wise (the scenario lines are not needed to train)."""

    scenario: list[int] = field(default_factory=list)
    split: list[str] = field(default_factory=list)
    family: list[str] = field(default_factory=list)
    controller: list[str] = field(default_factory=list)
    label: list[int] = field(default_factory=list)
    decision: list[bool] = field(default_factory=list)
    persistent: list[bool] = field(default_factory=list)
    causes: list[tuple[int, ...]] = field(default_factory=list)
    steps: list[np.ndarray] = field(default_factory=list)  # [rounds + 1, 8], float32 values as float64

    def __len__(self) -> int:
        return len(self.label)


def _uint(text: str, line: int, what: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise DatasetError(f"dataset line {line}: bad {what} \"{text}\"")
    return int(text)


def _parse_record(f: list[str], n: int, out: Records) -> None:
    if len(f) < _FIXED + F:
        raise DatasetError(f"dataset line {n}: record too short ({len(f)} fields)")
    split = f[5]
    if split not in SPLITS:
        raise DatasetError(f"dataset line {n}: unknown split \"{split}\"")
    flags = [_uint(f[7 + i], n, what) for i, what in enumerate(("label", "decision flag", "persistent flag"))]
    if max(flags) > 1:
        raise DatasetError(f"dataset line {n}: label and flags must be 0 or 1")
    rounds = _uint(f[11 + len(CAUSES)], n, "round count")
    if rounds > MAX_ROUNDS:
        raise DatasetError(f"dataset line {n}: {rounds} rounds (at most {MAX_ROUNDS})")
    want = _FIXED + (rounds + 1) * F
    if len(f) != want:
        raise DatasetError(f"dataset line {n}: {len(f)} fields, {want} expected for {rounds} rounds")
    try:
        values = np.array([float(v) for v in f[_FIXED:]], dtype=np.float64)
    except ValueError:
        raise DatasetError(f"dataset line {n}: bad feature") from None
    if not np.all(np.isfinite(values)):
        raise DatasetError(f"dataset line {n}: bad feature (not finite)")
    out.scenario.append(_uint(f[1], n, "scenario id"))
    out.controller.append(f[3])
    out.family.append(f[4])
    out.split.append(split)
    out.label.append(flags[0])
    out.decision.append(flags[1] == 1)
    out.persistent.append(flags[2] == 1)
    out.causes.append(tuple(_uint(c, n, "cause count") for c in f[11:11 + len(CAUSES)]))
    # The C++ reader parses a double and keeps a float: the same rounding here.
    out.steps.append(values.astype(np.float32).astype(np.float64).reshape(rounds + 1, F))


def read_dataset(path: str) -> Records:
    """Reads a dataset file; DatasetError names the line of any problem."""
    if not os.path.isfile(path):
        raise DatasetError(f"cannot read dataset \"{path}\": not a regular file")
    if os.path.getsize(path) > MAX_DATASET_BYTES:
        raise DatasetError(f"cannot read dataset \"{path}\": larger than 4 GiB")
    out = Records()
    magic = False
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                line = line.rstrip("\n")
                if n == 1:
                    if line != MAGIC:
                        raise DatasetError(f"dataset line 1: expected \"{MAGIC}\" (not an ndm-train dataset, "
                                           "or another version)")
                    magic = True
                    continue
                if not line or line.startswith("#"):
                    continue
                f = line.split("\t")
                if f[0] == "S":
                    if len(f) != 6:
                        raise DatasetError(f"dataset line {n}: scenario line needs 6 fields")
                    continue
                if f[0] != "R":
                    raise DatasetError(f"dataset line {n}: unknown line type \"{f[0]}\"")
                _parse_record(f, n, out)
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"cannot read dataset \"{path}\": {e}") from None
    except DatasetError as e:
        raise DatasetError(f"\"{path}\": {e}") from None
    if not magic:
        raise DatasetError(f"\"{path}\": dataset: empty input")
    return out


@dataclass
class Samples:
    x: np.ndarray          # [N, MAX_STEPS, F] float64, steps left-aligned, zeros after
    lengths: np.ndarray    # [N] int64, 1..MAX_STEPS
    y: np.ndarray          # [N] int64, 1 congestive
    scenario: np.ndarray   # [N] int64

    def __len__(self) -> int:
        return len(self.y)

    def steps(self) -> np.ndarray:
        """Every real step (rounds and at-loss vectors) as rows [sum(lengths), F]."""
        mask = np.arange(MAX_STEPS)[None, :] < self.lengths[:, None]
        return self.x[mask]

    def last(self) -> np.ndarray:
        """The at-loss vectors [N, F] (the logistic model's input)."""
        return self.x[np.arange(len(self)), self.lengths - 1]


@dataclass
class SelectOptions:
    """As the C++ trainer's SelectOptions (ndm/train.hpp), with its defaults."""

    decisions_only: bool = True
    spurious: bool = True
    outage_congestive: bool = True
    max_per_scenario: int = 0


def _thin(indices: list[int], scenario: list[int], cap: int) -> list[int]:
    """Even thinning within each scenario, the C++ trainer's rule: keep the
    i-th of n events when it starts a new slot of n / cap events."""
    if cap == 0:
        return indices
    count: dict[int, int] = {}
    for i in indices:
        count[scenario[i]] = count.get(scenario[i], 0) + 1
    seen: dict[int, int] = {}
    kept = []
    for i in indices:
        s = scenario[i]
        n, k = count[s], seen.get(s, 0)
        seen[s] = k + 1
        if n <= cap or (k * cap) // n != ((k + 1) * cap) // n:
            kept.append(i)
    return kept


def select(r: Records, splits: tuple[str, ...], o: SelectOptions) -> Samples:
    """The examples of the given splits, in split order then file order (the
    C++ select for one split; `ndm-train evaluate --split all` concatenates
    train, val, test in that order)."""
    chosen: list[int] = []
    labels: dict[int, int] = {}
    for split in splits:
        part = []
        for i in range(len(r)):
            if r.split[i] != split or r.persistent[i] or (o.decisions_only and not r.decision[i]):
                continue
            c = r.causes[i]
            if not o.spurious and c[5] > 0:
                continue
            y = r.label[i]
            if not o.outage_congestive and c[4] > 0:
                if c[2] + c[3] == 0:
                    continue
                y = 1
            labels[i] = y
            part.append(i)
        chosen += _thin(part, r.scenario, o.max_per_scenario)
    x = np.zeros((len(chosen), MAX_STEPS, F), dtype=np.float64)
    lengths = np.zeros(len(chosen), dtype=np.int64)
    for k, i in enumerate(chosen):
        s = r.steps[i]
        x[k, :len(s)] = s
        lengths[k] = len(s)
    return Samples(x, lengths, np.array([labels[i] for i in chosen], dtype=np.int64),
                   np.array([r.scenario[i] for i in chosen], dtype=np.int64))


def standardizer(train: Samples) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and scale over every training step (the C++
    Standardizer: population variance; a constant feature keeps scale 1)."""
    steps = train.steps()
    n = len(steps)
    if n == 0:
        return np.zeros(F), np.ones(F)
    mean = steps.sum(axis=0) / n
    var = (steps * steps).sum(axis=0) / n - mean * mean
    scale = np.where(var > 1e-12, np.sqrt(np.maximum(var, 0)), 1.0)
    return mean, scale
