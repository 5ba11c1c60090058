"""Training with torch.optim, the C++ trainer's recipe (docs/ndm-training.md §4):
examples = decision events of the train split (≤ 300 per scenario), inputs
standardised on them; binary cross-entropy on the logit (pos_weight on
congestive examples), Adam (β 0.9/0.999, ε 1e-8, lr 0.003), minibatch 256,
L2 1e-3 on the weights (not the biases, added to the gradient as the C++
trainer does: Adam's weight_decay), early stopping on the validation loss
(patience 8, at most 60 epochs), keeping the best epoch. Initialisation:
PyTorch's own for the GRU network (U(±1/√H) for nn.GRU and nn.Linear),
zeros for logistic regression (the C++ trainer's).

Deterministic: one thread, torch.manual_seed, a seeded generator for the
shuffles, deterministic algorithms only; float64 by default (the C++
trainer's precision).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from . import dataset as ds
from .metrics import evaluate
from .net import LossNet, predict, tensors


@dataclass
class TrainOptions:
    hidden: int = 0  # 0: logistic regression on the at-loss vector
    seed: int = 1
    learning_rate: float = 0.003
    l2: float = 1e-3
    batch: int = 256
    max_epochs: int = 60
    patience: int = 8
    pos_weight: float = 1.0
    dtype: torch.dtype = torch.float64


@dataclass
class FitResult:
    net: LossNet
    n_train: int
    epochs: int
    best_epoch: int
    best_val_loss: float
    val: dict
    test: dict
    seconds: float      # training wall time
    cpu_seconds: float  # and this process's CPU time in it


def setup_determinism(seed: int) -> None:
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(seed)


def _mean_loss(net: LossNet, loss: nn.Module, data: tuple) -> float:
    x, lengths, y = data
    with torch.no_grad():
        return float(loss(net.logits(x, lengths), y))


def train_net(train: ds.Samples, val: ds.Samples, o: TrainOptions,
              log: Callable[[str], None] | None = None) -> tuple[LossNet, int, int, float]:
    """Returns the best net, the epochs run, the best epoch and its validation loss."""
    if len(train) == 0:
        raise ValueError("train: no training examples")
    setup_determinism(o.seed)
    mean, scale = ds.standardizer(train)
    net = LossNet(o.hidden, mean, scale).to(o.dtype)
    if o.hidden == 0:
        # Logistic regression is convex: start at P = 0.5 everywhere, as the C++
        # trainer does, rather than at a random slope (PyTorch's U(±1/√8)),
        # which the 60-epoch budget does not always forget.
        torch.nn.init.zeros_(net.head.weight)
        torch.nn.init.zeros_(net.head.bias)
    weights, biases = net.decayed_and_not()
    opt = torch.optim.Adam([{"params": weights, "weight_decay": o.l2}, {"params": biases, "weight_decay": 0.0}],
                           lr=o.learning_rate, betas=(0.9, 0.999), eps=1e-8)
    # The batch mean of BCE with congestive examples weighted, as the C++ loss.
    loss = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(o.pos_weight, dtype=o.dtype))
    tr = tensors(train, o.dtype)
    va = tensors(val if len(val) else train, o.dtype)
    gen = torch.Generator().manual_seed(o.seed)
    best, best_epoch, best_loss = copy.deepcopy(net.state_dict()), 0, _mean_loss(net, loss, va)
    since_best = epochs = 0
    for epoch in range(1, o.max_epochs + 1):
        order = torch.randperm(len(train), generator=gen)
        total = 0.0
        for b in range(0, len(order), o.batch):
            idx = order[b:b + o.batch]
            opt.zero_grad()
            batch_loss = loss(net.logits(tr[0][idx], tr[1][idx]), tr[2][idx])
            batch_loss.backward()
            opt.step()
            total += float(batch_loss) * len(idx)
        vl = _mean_loss(net, loss, va)
        epochs = epoch
        better = vl < best_loss - 1e-6
        if better:
            best, best_epoch, best_loss, since_best = copy.deepcopy(net.state_dict()), epoch, vl, 0
        else:
            since_best += 1
        if log:
            log(f"epoch {epoch:3}: train loss {total / len(train):.5f}  validation loss {vl:.5f}{'  *' if better else ''}")
        if since_best >= o.patience:
            break
    net.load_state_dict(best)
    return net, epochs, best_epoch, best_loss


def fit(records: ds.Records, o: TrainOptions, sel: ds.SelectOptions,
        log: Callable[[str], None] | None = None) -> FitResult:
    """select → train → metrics on the validation and held-out splits (the C++ fit)."""
    train = ds.select(records, ("train",), sel)
    whole = copy.copy(sel)
    whole.max_per_scenario = 0
    val = ds.select(records, ("val",), whole)
    test = ds.select(records, ("test",), whole)
    t0, c0 = time.monotonic(), time.process_time()
    net, epochs, best_epoch, best_loss = train_net(train, val, o, log)
    seconds, cpu = time.monotonic() - t0, time.process_time() - c0
    return FitResult(net, len(train), epochs, best_epoch, best_loss, evaluate(predict(net, val), val.y),
                     evaluate(predict(net, test), test.y), seconds, cpu)
