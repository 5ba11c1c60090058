"""The engine's model file (.ndmm, version 1; include/ndm/ndm_model.hpp), written
byte for byte as the C++ trainer's serialize_model writes it, and read back
for the two shapes the trainers make.

    0   "NDMM", u32 version 1, u32 input_dim, u32 layer_count (1..16),
        u32 description_bytes (0..4096), u64 param_count
    28  description (UTF-8), then per layer u32 kind (1 dense, 2 gru),
        u32 activation (0 linear, 1 sigmoid; 0 for gru), u32 in, u32 out,
        u32 param_count, then every layer's float32 parameters
        (dense: W [out][in], b [out]; gru: W_ih [3H][in], W_hh [3H][H],
        b_ih [3H], b_hh [3H], gates r, z, n), then u32 CRC-32 (zlib's)
All little-endian.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import torch

from .dataset import F
from .net import LossNet

MAGIC = b"NDMM"
VERSION = 1
DENSE, GRU = 1, 2
LINEAR, SIGMOID = 0, 1
MAX_DESCRIPTION = 4096
MAX_MODEL_BYTES = 1 << 20  # the C++ loader's cap (util::kMaxModelFileBytes)
_HEADER = struct.Struct("<4sIIIIQ")
_LAYER = struct.Struct("<IIIII")


class ModelError(ValueError):
    """A file that is not a model of the shapes these trainers make."""


def _fold(w: np.ndarray, b: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Folds z = (x − μ)/σ into W z + b: W' = W/σ, b' = b − W'μ, in double, then
    to float32 (the C++ trainer's Net::to_model)."""
    w2 = w / scale[None, :]
    return w2.astype(np.float32), (b - w2 @ mean).astype(np.float32)


def to_layers(net: LossNet) -> list[tuple[int, int, int, int, np.ndarray]]:
    """(kind, activation, in, out, float32 parameters) per layer, standardisation folded."""
    g = {n: p.detach().double().numpy() for n, p in net.named_parameters()}
    mean, scale = net.mean.double().numpy(), net.scale.double().numpy()
    head_w, head_b = g["head.weight"], g["head.bias"]
    if net.hidden == 0:
        w, b = _fold(head_w, head_b, mean, scale)
        return [(DENSE, SIGMOID, F, 1, np.concatenate([w.ravel(), b]))]
    h = net.hidden
    w_ih, b_ih = _fold(g["gru.weight_ih_l0"], g["gru.bias_ih_l0"], mean, scale)
    gru = np.concatenate([w_ih.ravel(), g["gru.weight_hh_l0"].astype(np.float32).ravel(), b_ih,
                          g["gru.bias_hh_l0"].astype(np.float32)])
    head = np.concatenate([head_w.astype(np.float32).ravel(), head_b.astype(np.float32)])
    return [(GRU, LINEAR, F, h, gru), (DENSE, SIGMOID, h, 1, head)]


def serialize(net: LossNet, description: str) -> bytes:
    desc = description.encode("utf-8")
    if len(desc) > MAX_DESCRIPTION:
        raise ModelError("model: description longer than 4096 bytes")
    layers = to_layers(net)
    for _, _, _, _, p in layers:
        if not np.all(np.isfinite(p)):
            raise ModelError("model: a parameter is NaN or infinite")
    params = sum(len(p) for *_, p in layers)
    out = bytearray(_HEADER.pack(MAGIC, VERSION, F, len(layers), len(desc), params))
    out += desc
    for kind, act, n_in, n_out, p in layers:
        out += _LAYER.pack(kind, act, n_in, n_out, len(p))
    for *_, p in layers:
        out += p.astype("<f4").tobytes()
    out += struct.pack("<I", zlib.crc32(bytes(out)))
    return bytes(out)


def save(net: LossNet, description: str, path: str) -> None:
    data = serialize(net, description)
    with open(path, "wb") as fh:
        fh.write(data)


def _parse(b: bytes) -> tuple[str, list[tuple[int, int, int, int, np.ndarray]]]:
    if len(b) < _HEADER.size + 4:
        raise ModelError(f"truncated: {len(b)} bytes, shorter than the {_HEADER.size + 4}-byte minimum")
    magic, version, input_dim, count, desc, params = _HEADER.unpack_from(b)
    if magic != MAGIC:
        raise ModelError("not an NDM model file (bad magic; expected \"NDMM\")")
    if version != VERSION:
        raise ModelError(f"unsupported model version {version} (this reader reads {VERSION})")
    if not 1 <= count <= 16 or desc > MAX_DESCRIPTION:
        raise ModelError("bad header: layer count or description length out of range")
    expect = _HEADER.size + desc + _LAYER.size * count + 4 * params + 4
    if len(b) != expect:
        raise ModelError(f"size mismatch: {len(b)} bytes, the header describes {expect}")
    if struct.unpack_from("<I", b, expect - 4)[0] != zlib.crc32(b[:expect - 4]):
        raise ModelError("checksum mismatch (file corrupted)")
    at = _HEADER.size + desc
    table = [_LAYER.unpack_from(b, at + _LAYER.size * i) for i in range(count)]
    at += _LAYER.size * count
    layers = []
    for kind, act, n_in, n_out, n in table:
        want = 3 * n_out * n_in + 3 * n_out * n_out + 6 * n_out if kind == GRU else n_out * n_in + n_out
        if kind not in (DENSE, GRU) or n != want:
            raise ModelError(f"layer kind {kind} {n_in}->{n_out}: {n} parameters, {want} expected")
        layers.append((kind, act, n_in, n_out, np.frombuffer(b, dtype="<f4", count=n, offset=at).astype(np.float32)))
        at += 4 * n
    if sum(len(p) for *_, p in layers) != params:
        raise ModelError("size mismatch: the layers and the header disagree on the parameter count")
    if input_dim != F:
        raise ModelError(f"input size {input_dim}, not {F}")
    return b[_HEADER.size:_HEADER.size + desc].decode("utf-8", errors="replace"), layers


def load(path: str) -> tuple[LossNet, str]:
    """A model file as a LossNet (identity standardisation) and its description.
    Only the trainers' shapes: Dense(8 → 1, sigmoid), or GRU(8 → H) then
    Dense(H → 1, sigmoid)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_MODEL_BYTES + 1)
    except OSError as e:
        raise ModelError(f"model file \"{path}\": cannot open: {e.strerror}") from None
    if len(data) > MAX_MODEL_BYTES:
        raise ModelError(f"model file \"{path}\": larger than 1 MiB")
    try:
        description, layers = _parse(data)
        head = layers[-1]
        shape_ok = (head[0] == DENSE and head[1] == SIGMOID and head[3] == 1 and
                    (len(layers) == 1 or (len(layers) == 2 and layers[0][0] == GRU and layers[0][3] == head[2])))
        if not shape_ok:
            raise ModelError("not a dense sigmoid or GRU + dense sigmoid model with 1 output")
    except ModelError as e:
        raise ModelError(f"model file \"{path}\": {e}") from None
    hidden = layers[0][3] if len(layers) == 2 else 0
    net = LossNet(hidden).double()
    with torch.no_grad():
        if hidden:
            p, h = layers[0][4].astype(np.float64), hidden
            cut = np.cumsum([3 * h * F, 3 * h * h, 3 * h])
            w_ih, w_hh, b_ih, b_hh = np.split(p, cut)
            net.gru.weight_ih_l0.copy_(torch.from_numpy(w_ih.reshape(3 * h, F)))
            net.gru.weight_hh_l0.copy_(torch.from_numpy(w_hh.reshape(3 * h, h)))
            net.gru.bias_ih_l0.copy_(torch.from_numpy(b_ih))
            net.gru.bias_hh_l0.copy_(torch.from_numpy(b_hh))
        p = head[4].astype(np.float64)
        net.head.weight.copy_(torch.from_numpy(p[:-1].reshape(1, -1)))
        net.head.bias.copy_(torch.from_numpy(p[-1:]))
    return net, description
