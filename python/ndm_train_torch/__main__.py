"""ndm-train-torch (or python3 -m ndm_train_torch): the ndm loss classifier
trained in PyTorch (docs/ndm-training.md §9). Subcommands:
  generate the labelled dataset (as ndm-train generate), its scenarios run on
           Dask workers: a local cluster, or a scheduler's
  train    dataset (ndm-train generate) → model file the engine runs (.ndmm)
  score    a model file run by PyTorch on a dataset split: metrics, per-event P
  compare  two score files (e.g. ndm-train evaluate --scores and train --scores):
           the largest |difference|, exit 1 above a tolerance
A bad command line or input file is one line and exit code 2; a failure to
write the output is exit code 1.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

PROG = "ndm-train-torch"  # the command pip installs (python/pyproject.toml)
# Names the trainer in the model files it writes (the .ndmm description), as
# "ndm-train 1" does the C++ one: a file's provenance, not the command's name.
TRAINER = "ndm_train_torch 1"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (the project's tools' rule)
        print(f"{PROG}: {message}", file=sys.stderr)
        raise SystemExit(2)


def _in(kind, lo, hi):
    """An argparse type: kind(text) within [lo, hi] (NaN is outside)."""
    def parse(text: str):
        v = kind(text)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v:g} not in [{lo:g}, {hi:g}]")
        return v
    return parse


def _add_select(p: argparse.ArgumentParser) -> None:
    p.add_argument("-d", "--data", required=True, help="dataset file (from ndm-train generate)")
    p.add_argument("--no-spurious", action="store_true",
                   help="drop events whose losses were (partly) late packets instead of labelling them 0")
    p.add_argument("--outage", choices=("congestive", "exclude"), default="congestive",
                   help="trace-outage drops: congestive or exclude (default congestive)")


def _parser() -> argparse.ArgumentParser:
    top = _Parser(prog=PROG, description="Train the ndm controller's loss classifier in PyTorch and export it "
                                         "for the engine (docs/ndm-training.md).")
    sub = top.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="run seeded scenarios on Dask workers and write the labelled dataset "
                                         "(the file ndm-train generate writes for the same options, byte for byte)")
    g.add_argument("--seed", type=_in(int, 0, 2**64 - 1), default=1, help="scenario seed (default 1)")
    g.add_argument("-n", "--scenarios", type=_in(int, 1, 100000), default=600, help="number of scenarios (default 600)")
    g.add_argument("--seconds", type=_in(float, 1.0, 600.0), default=12.0,
                   help="longest virtual sending time of a scenario (default 12)")
    g.add_argument("--cc", default="cubic,reno,ndm-cubic",
                   help="sender controllers, comma-separated, assigned round-robin (default cubic,reno,ndm-cubic)")
    g.add_argument("--ndm-options", help="options of the ndm-cubic senders and competitors (default: the pinned model)")
    g.add_argument("--ndm-bbr-options", help="options of the ndm senders (default: the pinned model=ndm-default.ndmm)")
    g.add_argument("--compete", type=_in(float, 0.0, 1.0), default=0.0,
                   help="fraction of bottleneck scenarios with 1-3 competing flows (default 0)")
    g.add_argument("--workers", type=_in(int, 1, 1024), default=os.cpu_count() or 1,
                   help="processes of the local Dask cluster (default: one per core); ignored with --scheduler")
    g.add_argument("--scheduler", help="a running Dask scheduler, tcp://HOST:PORT, whose workers run the scenarios")
    g.add_argument("--shard", type=_in(int, 1, 100000), default=10, help="scenarios per task (default 10)")
    g.add_argument("-o", "--out", default="ndm-dataset.tsv", help="dataset file (default ndm-dataset.tsv)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress")
    t = sub.add_parser("train", help="train a model on a dataset and write it as .ndmm")
    _add_select(t)
    t.add_argument("--model", choices=("logistic", "gru"), default="gru", help="default gru")
    t.add_argument("--hidden", type=_in(int, 1, 8), default=8, help="GRU units (default 8)")
    t.add_argument("--seed", type=_in(int, 0, 2**63 - 1), default=1, help="initialisation and shuffling seed")
    t.add_argument("--lr", type=_in(float, 1e-6, 1.0), default=0.003, help="Adam learning rate (default 0.003)")
    t.add_argument("--l2", type=_in(float, 0.0, 1.0), default=1e-3, help="L2 penalty on the weights (default 1e-3)")
    t.add_argument("--batch", type=_in(int, 1, 1000000), default=256, help="minibatch size (default 256)")
    t.add_argument("--epochs", type=_in(int, 1, 100000), default=60, help="most epochs (default 60)")
    t.add_argument("--patience", type=_in(int, 1, 100000), default=8,
                   help="early stopping: epochs without a better validation loss (default 8)")
    t.add_argument("--pos-weight", type=_in(float, 0.01, 100.0), default=1.0,
                   help="weight of congestive examples in the loss (default 1)")
    t.add_argument("--max-per-scenario", type=_in(int, 0, 10**9), default=300,
                   help="training examples kept per scenario (evenly thinned; 0 = all; default 300)")
    t.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                   help="training precision (default float64, the C++ trainer's)")
    t.add_argument("-o", "--out", default="ndm-model.ndmm", help="model file (default ndm-model.ndmm)")
    t.add_argument("--scores", help="also write PyTorch's P of each event of --split to this file")
    t.add_argument("--split", choices=("train", "val", "test", "all"), default="all", help="for --scores (default all)")
    t.add_argument("-q", "--quiet", action="store_true", help="no per-epoch lines")
    s = sub.add_parser("score", help="run a model file in PyTorch on a dataset split")
    s.add_argument("-m", "--model", required=True, help="model file (.ndmm)")
    _add_select(s)
    s.add_argument("--split", choices=("train", "val", "test", "all"), default="test", help="default test")
    s.add_argument("--scores", help="write each event's P to this file")
    c = sub.add_parser("compare", help="the largest |P difference| between two score files")
    c.add_argument("a", help="score file (ndm-train evaluate --scores, or this tool's --scores)")
    c.add_argument("b", help="score file of the same events")
    c.add_argument("--tolerance", type=_in(float, 0.0, 1.0), default=1e-5, help="exit 1 above this (default 1e-5)")
    return top


def _splits(name: str) -> tuple[str, ...]:
    from .dataset import SPLITS
    return SPLITS if name == "all" else (name,)


def _select_options(a: argparse.Namespace, cap: int = 0):
    from .dataset import SelectOptions
    return SelectOptions(spurious=not a.no_spurious, outage_congestive=a.outage == "congestive", max_per_scenario=cap)


def _write_scores(path: str, header: str, samples, p: np.ndarray) -> None:
    lines = [f"# ndm-scores v1: {header}", "index\tscenario\tlabel\tp"]
    lines += [f"{i}\t{s}\t{y}\t{v!r}" for i, (s, y, v) in enumerate(zip(samples.scenario, samples.y, p.tolist()))]
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    except OSError as e:
        raise RuntimeError(f"cannot write \"{path}\": {e.strerror}") from None
    print(f"wrote {len(samples)} scores to {path}")


def _generate(a: argparse.Namespace) -> None:
    from ndm.sweeps import _progress

    from .generate import GenerateOptions, generate

    ccs = [c for c in a.cc.split(",") if c]
    if not ccs:
        raise ValueError("--cc: at least one controller")
    o = GenerateOptions(seed=a.seed, scenarios=a.scenarios, seconds=a.seconds, controllers=ccs,
                        ndm_options=a.ndm_options, ndm_bbr_options=a.ndm_bbr_options, compete=a.compete)
    g = generate(o, workers=a.workers, scheduler=a.scheduler, shard_size=a.shard,
                 progress=None if a.quiet else _progress)
    try:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write(g.text)
    except OSError as e:
        raise RuntimeError(f"cannot write \"{a.out}\": {e.strerror}") from None
    print(f"{o.scenarios} scenarios in {g.shards} shards on {g.workers} Dask workers: {g.seconds:.1f} s; wrote {a.out}")


def _train(a: argparse.Namespace) -> None:
    import torch

    from . import dataset as ds
    from . import ndmm
    from .metrics import format_metrics
    from .net import predict
    from .train import TrainOptions, fit

    records = ds.read_dataset(a.data)
    o = TrainOptions(hidden=a.hidden if a.model == "gru" else 0, seed=a.seed, learning_rate=a.lr, l2=a.l2,
                     batch=a.batch, max_epochs=a.epochs, patience=a.patience, pos_weight=a.pos_weight,
                     dtype=torch.float64 if a.dtype == "float64" else torch.float32)
    log = None if a.quiet else (lambda line: print("  " + line, file=sys.stderr))
    f = fit(records, o, _select_options(a, a.max_per_scenario), log)
    print(f"{a.model} (hidden {o.hidden}): {f.n_train} training examples, best epoch {f.best_epoch} of {f.epochs}, "
          f"validation loss {f.best_val_loss:.5f}, trained in {f.seconds:.1f} s (CPU {f.cpu_seconds:.1f} s)")
    print("validation: " + format_metrics(f.val))
    print("held-out test: " + format_metrics(f.test))
    kind = "GRU + dense sigmoid" if o.hidden else "logistic regression"
    description = (f"{TRAINER} (PyTorch {torch.__version__}, {a.dtype}) {kind}: P(loss is congestive) "
                   f"(hidden {o.hidden}), seed {a.seed}, {f.n_train} training events of {a.data}; held-out (test split: "
                   f"RTT 100-160 ms, ATT driving trace) heldout_auc={f.test['auc']:.4f} heldout_ece={f.test['ece']:.4f} "
                   f"heldout_accuracy={f.test['accuracy']:.4f} n={f.test['n']}; validation auc={f.val['auc']:.4f}; "
                   "inputs q_now q_p50 q_p90 slope entropy loss_rate rate_ratio loss_run")
    try:
        ndmm.save(f.net, description, a.out)
    except OSError as e:
        raise RuntimeError(f"model file \"{a.out}\": write failed: {e.strerror}") from None
    print(f"wrote {a.out}")
    if a.scores:
        samples = ds.select(records, _splits(a.split), _select_options(a))
        _write_scores(a.scores, f"PyTorch {a.dtype}, model {a.out} as trained, dataset {a.data}, split {a.split}",
                      samples, predict(f.net, samples))


def _score(a: argparse.Namespace) -> None:
    from . import dataset as ds
    from . import ndmm
    from .metrics import evaluate, format_metrics
    from .net import predict

    net, description = ndmm.load(a.model)
    samples = ds.select(ds.read_dataset(a.data), _splits(a.split), _select_options(a))
    p = predict(net, samples)
    print(f"model: {description}")
    print(f"split {a.split} of {a.data} (PyTorch, float64): " + format_metrics(evaluate(p, samples.y)))
    if a.scores:
        _write_scores(a.scores, f"PyTorch float64, model {a.model}, dataset {a.data}, split {a.split}", samples, p)


def _read_scores(path: str) -> np.ndarray:
    """Rows (index, scenario, label, p) of a score file, checked."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [line.rstrip("\n") for line in fh if not line.startswith("#")]
    except OSError as e:
        raise ValueError(f"cannot read scores \"{path}\": {e.strerror}") from None
    if not lines or lines[0] != "index\tscenario\tlabel\tp":
        raise ValueError(f"\"{path}\": not a score file (no \"index scenario label p\" header)")
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        f = line.split("\t")
        try:
            if len(f) != 4:
                raise ValueError
            rows.append((int(f[0]), int(f[1]), int(f[2]), float(f[3])))
        except ValueError:
            raise ValueError(f"\"{path}\": bad score line \"{line}\"") from None
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def _compare(a: argparse.Namespace) -> int:
    x, y = _read_scores(a.a), _read_scores(a.b)
    if x.shape != y.shape or not np.array_equal(x[:, :3], y[:, :3]):
        print(f"{PROG}: {a.a} and {a.b} do not score the same events (index, scenario, label)", file=sys.stderr)
        return 1
    diff = np.abs(x[:, 3] - y[:, 3])
    worst = int(np.argmax(diff)) if len(diff) else 0
    top = float(diff[worst]) if len(diff) else 0.0
    print(f"n={len(diff)} max |a - b| = {top:.3g}" + (f" (event {worst}: {x[worst, 3]!r} vs {y[worst, 3]!r})" if len(diff) else "")
          + f", mean {float(diff.mean()) if len(diff) else 0.0:.3g}")
    if top > a.tolerance:
        print(f"{PROG}: the scores differ by more than {a.tolerance:g}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        if a.command == "generate":
            _generate(a)
        elif a.command == "train":
            _train(a)
        elif a.command == "score":
            _score(a)
        else:
            return _compare(a)
    except RuntimeError as e:  # cannot write
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except ValueError as e:  # bad dataset, model or score file
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
