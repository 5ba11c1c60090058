"""The two networks the ndm engine runs (src/cc/ndm/kernels.hpp), as PyTorch
modules:

* logistic: Dense(8 → 1, sigmoid) on the at-loss vector;
* gru: nn.GRU(8 → H) over the rounds then the at-loss vector, from h = 0,
  then Dense(H → 1, sigmoid) on the last state. The engine's cell is
  PyTorch's (gates r, z, n; n = tanh(W_in x + b_in + r·(W_hn h + b_hn));
  h' = (1 − z)·n + z·h) and its .ndmm layout is PyTorch's parameter layout.

The input standardisation is part of the module (buffers mean, scale); the
export folds it into the first layer, as the C++ trainer does.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from .dataset import F, Samples


class LossNet(nn.Module):
    def __init__(self, hidden: int, mean: np.ndarray | None = None, scale: np.ndarray | None = None):
        super().__init__()
        self.hidden = hidden
        self.register_buffer("mean", torch.as_tensor(np.zeros(F) if mean is None else mean))
        self.register_buffer("scale", torch.as_tensor(np.ones(F) if scale is None else scale))
        self.gru = nn.GRU(F, hidden, batch_first=True) if hidden > 0 else None
        self.head = nn.Linear(hidden if hidden > 0 else F, 1)

    def logits(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """x [N, T, F] raw features, steps left-aligned; lengths [N] (CPU int64)."""
        z = (x - self.mean) / self.scale
        if self.gru is None:
            return self.head(z[torch.arange(len(z)), lengths - 1]).squeeze(-1)
        packed = pack_padded_sequence(z, lengths, batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)  # h [1, N, H]: each sequence's state after its own last step
        return self.head(h[0]).squeeze(-1)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.logits(x, lengths))

    def decayed_and_not(self) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
        """The weights (L2 applies) and the biases (it does not), as in the C++ trainer."""
        weights = [p for n, p in self.named_parameters() if n.startswith("gru.weight") or n == "head.weight"]
        biases = [p for n, p in self.named_parameters() if "bias" in n]
        return weights, biases


def tensors(s: Samples, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (torch.as_tensor(s.x, dtype=dtype), torch.as_tensor(s.lengths, dtype=torch.int64),
            torch.as_tensor(s.y, dtype=dtype))


@torch.no_grad()
def predict(net: LossNet, s: Samples, batch: int = 4096) -> np.ndarray:
    """P(congestive) per sample, in the module's dtype, returned as float64."""
    dtype = net.head.weight.dtype
    x, lengths, _ = tensors(s, dtype)
    out = [net(x[i:i + batch], lengths[i:i + batch]) for i in range(0, len(s), batch)]
    return torch.cat(out).double().numpy() if out else np.zeros(0)
