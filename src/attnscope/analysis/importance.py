"""Head importance by ablation: remove one head's output z, measure the change.

Ablating head (l, c) zeroes ``z_c`` at layer l, which removes its contribution ``z_c · W_O^(c)``
from the attention output (the bias b_O stays): "the model without this head". Everything below
layer l, and layer l's attention up to z, is the clean model's, so one clean pass is traced per
batch and reused for every head:

* the clean trace keeps each layer's input (``layers.{l-1}.out``; the embeddings for l = 0), its
  z and its attention output;
* for layer l, one forward pass of ``H·B`` rows (copy c = the batch without head c) starts at
  layer l from the kept input: on a replica of the model (parameters shared) the layers below
  hand the kept input on instead of computing it, and layer l's attention returns the clean
  output minus ``z_c · W_O^(c)`` (attention is linear in z after the softmax) instead of
  recomputing q, k, v and the weights for every copy; the layers above run as usual.

The layers below l thus run once per batch (in the clean pass), not once per head. A model whose
stack does not follow that shape (checked once against the clean output) runs the plain form: a
full forward pass per layer with a hook on ``layers.{l}.attn.z``.

What is measured (per head, averaged over the sample of texts):

* sentence-embedding models (BERT/RoBERTa families): ``1 - cos(e, e_ablated)`` of the pooled
  sentence embedding (the model's own pooling, mean over real tokens for all-MiniLM-L6-v2);
  0 = the head changes nothing.
* language models (GPT-2, Llama, …): the change in next-token cross-entropy,
  ``loss_ablated - loss`` in nats per predicted token (> 0: the head helped).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..tokenizer import Batch
from .batching import TokenBatch
from .replica import replicate

Tensor = torch.Tensor

#: Logits computed at once by the loss measure (64 MiB in float32).
LOGIT_CHUNK = 1 << 24


def is_language_model(model) -> bool:
    """True when the model has a language-model head (GPT-2), so importance is a loss change."""
    return bool(getattr(model, "has_lm_head", False))


def metric_name(model) -> str:
    return "loss_change" if is_language_model(model) else "one_minus_cosine"


def as_model_batch(tb: TokenBatch, device) -> Batch:
    """A :class:`attnscope.tokenizer.Batch` (what ``model.trace`` takes) on ``device``."""
    ids = tb.input_ids.to(device)
    return Batch(ids, tb.attention_mask.to(device), torch.zeros_like(ids), tb.tokens, [""] * len(tb))


def _token_losses(model, hidden: Tensor, ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Next-token cross-entropy ``(B, L-1)`` (0 at padded targets) and the target mask."""
    logits = model.lm_logits(hidden[:, :-1])  # (B, L-1, V)
    ok = mask[:, 1:].bool()  # (B, L-1)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # half → float32, float64 kept
    ce = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="none").view_as(ok)
    return ce.masked_fill(~ok, 0.0), ok


class _StandIn(nn.Module):
    """Takes the place of a module of the replica during one pass. Its stack may read the
    module's attributes (a decoder layer's ``window`` and ``rope``): those come from the module."""

    def __init__(self, module: nn.Module, given: Optional[Tensor] = None) -> None:
        super().__init__()
        object.__setattr__(self, "module", module)  # not registered: no parameters of its own
        self.given = given

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(object.__getattribute__(self, "module"), name)

    def forward(self, x: Tensor, *args, **kwargs) -> Tensor:
        # a known output (the kept input of the next layer, an attention output), or x handed on
        return x if self.given is None else self.given


class Ladder:
    """A replica of ``model`` (:func:`.analyzer.replicate`) whose stack can start at any layer.

    ``run(batch, layer, start, attn_out)``: the model's output on ``batch`` with layers below
    ``layer`` skipped, ``start`` fed to ``layer`` (the input of layer 0 is the embeddings,
    computed as usual) and ``attn_out`` returned by that layer's attention.
    """

    def __init__(self, model) -> None:
        self.replica = replicate(model)
        self.layers = list(self.replica.layers)
        self.attn = [layer.attn for layer in self.layers]
        self.checked, self.ok = False, False  # set by the first batch (:func:`_check_ladder`)

    @classmethod
    def for_model(cls, model) -> Optional["Ladder"]:
        """A ladder, or None when the model is not a stack of ``layers`` with an ``attn`` each."""
        layers = getattr(model, "layers", None)
        n = model.config.n_layers
        if not isinstance(layers, nn.ModuleList) or len(layers) != n:
            return None
        if not all(isinstance(getattr(m, "attn", None), nn.Module) and hasattr(m.attn, "W_O") for m in layers):
            return None
        names = set(model.hook_names)
        if not all({f"layers.{l}.out", f"layers.{l}.attn.z", f"layers.{l}.attn.out"} <= names for l in range(n)):
            return None
        return cls(model)

    def run(self, batch: Batch, layer: int, start: Optional[Tensor], attn_out: Tensor) -> Tensor:
        stack = self.replica.layers
        try:
            for i in range(layer):
                stack[i] = _StandIn(self.layers[i], start if i == layer - 1 else None)
            self.layers[layer].attn = _StandIn(self.attn[layer], attn_out)
            return self.replica(batch.input_ids, batch.attention_mask, batch.token_type_ids)  # (B', L, d)
        finally:
            for i in range(layer):
                stack[i] = self.layers[i]
            self.layers[layer].attn = self.attn[layer]


def _ablated_outputs(model, layer: int, z: Tensor, out: Tensor) -> Tensor:
    """``(H·B, L, d)``: copy c = layer ``layer``'s attention output ``out (B, L, d)`` without head
    c's term ``z_c · W_O^(c)``, from its ``z (B, H, L, d_head)``."""
    B, H, L, dh = z.shape
    W = model.layers[layer].attn.W_O.weight  # (d, H·d_head): head c's columns c·dh..(c+1)·dh
    term = torch.einsum("bhld,ehd->hble", z, W.view(W.shape[0], H, dh))  # (H, B, L, d)
    return (out[None] - term).reshape(H * B, L, -1)  # (H·B, L, d)


def _check_ladder(ladder: Ladder, model, batch: Batch, tr) -> bool:
    """Does the ladder started at the top layer, with that layer's clean attention output, give
    the clean output? (It does for every stack attnscope builds; a stack that does not is run
    the plain way.)"""
    def close(got: Tensor, want: Tensor) -> bool:
        atol = 1e-5 * float(want.abs().max().clamp(min=1))
        return got.shape == want.shape and bool(torch.allclose(got, want, rtol=1e-4, atol=atol))

    top = model.config.n_layers - 1
    z, out = tr[f"layers.{top}.attn.z"], tr[f"layers.{top}.attn.out"]  # (B, H, L, d_head), (B, L, d)
    W_O = model.layers[top].attn.W_O
    B, H, L, dh = z.shape
    if not close(W_O(z.transpose(1, 2).reshape(B, L, H * dh)), out):  # out = W_O(heads concatenated)
        return False
    start = tr[f"layers.{top - 1}.out"] if top > 0 else None
    return close(ladder.run(batch, top, start, out), tr.output)


@torch.no_grad()
def ablation_sums(model, tb: TokenBatch, layers: Optional[list[int]] = None, *,
                  ladder: Optional[Ladder] = None, plain: bool = False) -> dict[int, tuple[Tensor, Tensor]]:
    """``{layer: (sum (H,), count (H,))}`` of the importance measure for one batch.

    Mean importance of head (l, h) = sum / count over all batches (count = texts for the
    cosine measure, predicted tokens for the loss measure).

    Args:
        ladder: a :class:`Ladder` of the model to reuse across batches (one is built if None).
        plain: run a full forward pass per layer with a zeroing hook on z (the reference form).
    """
    H = model.config.n_heads
    dev = model.device
    batch = as_model_batch(tb, dev)
    B = batch.input_ids.shape[0]
    lm = is_language_model(model)
    if not plain and ladder is None:
        ladder = Ladder.for_model(model)
    fast = not plain and ladder is not None
    names = ["layers.*.out", "layers.*.attn.z", "layers.*.attn.out"] if fast else []
    tr = model.trace(batch, names=names)
    clean = tr.output  # (B, L, d)
    if fast and ladder is not None and not ladder.checked:  # fast implies a ladder
        ladder.ok = _check_ladder(ladder, model, batch, tr)
        ladder.checked = True
    fast = fast and ladder is not None and ladder.ok
    if lm:
        ce0, ok = _token_losses(model, clean, batch.input_ids, batch.attention_mask)  # (B, L-1)

        # copies whose logits (k·B·L·V floats) are taken at once: one matrix product per copy reads the
        # whole output matrix for a few rows each time, which made this pass several times slower
        per = max(1, LOGIT_CHUNK // (B * batch.input_ids.shape[1] * model.config.vocab_size))

        def measure(hidden: Tensor) -> tuple[Tensor, Tensor]:
            """(Σ loss increase, predicted tokens) per copy, ``per`` copies at a time."""
            ce = torch.cat([_token_losses(model, hidden[c * B:(c + per) * B], rep.input_ids[c * B:(c + per) * B],
                                          rep.attention_mask[c * B:(c + per) * B])[0]
                            for c in range(0, H, per)])  # (H·B, L-1)
            s = (ce.view(H, B, -1) - ce0).double().sum(dim=(1, 2))  # (H,)
            return s, ok.sum().double().expand(H)
    else:
        e0 = model.pool(clean, batch.attention_mask)  # (B, d)

        def measure(hidden: Tensor) -> tuple[Tensor, Tensor]:
            """(Σ (1 − cosine) to the clean embedding, texts) per copy."""
            e = model.pool(hidden, rep.attention_mask).view(H, B, -1)  # (H, B, d)
            cos = F.cosine_similarity(e.double(), e0.double()[None], dim=-1)  # (H, B)
            s = (1.0 - cos).sum(dim=1)  # (H,)
            return s, torch.full((H,), float(B), dtype=torch.float64, device=s.device)

    rep = as_model_batch(TokenBatch(tb.input_ids.repeat(H, 1), tb.attention_mask.repeat(H, 1), {},
                                    tb.tokens * H, tb.indices * H), dev)  # copy c = rows c·B..(c+1)·B
    keep = torch.ones(H, B, H, dtype=clean.dtype, device=dev)  # (copy, B, head)
    keep[torch.arange(H), :, torch.arange(H)] = 0.0  # copy c loses head c
    keep = keep.reshape(H * B, H, 1, 1)  # (H·B, H, 1, 1)

    def ablate(z: Tensor, name: str) -> Tensor:
        return z * keep  # (H·B, H, L, d_head)

    out = {}
    for layer in (range(model.config.n_layers) if layers is None else layers):
        if fast and ladder is not None:
            start = tr[f"layers.{layer - 1}.out"].repeat(H, 1, 1) if layer > 0 else None  # (H·B, L, d)
            attn_out = _ablated_outputs(model, layer, tr[f"layers.{layer}.attn.z"], tr[f"layers.{layer}.attn.out"])
            hidden = ladder.run(rep, layer, start, attn_out)  # (H·B, L, d)
        else:
            hidden = model.trace(rep, names=[], hooks={f"layers.{layer}.attn.z": ablate}).output  # (H·B, L, d)
        out[layer] = measure(hidden)
    return out
