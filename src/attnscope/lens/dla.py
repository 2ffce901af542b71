"""Direct logit attribution: the final logit split into what each part of the model wrote (issue 28).

The residual stream at the last layer is a sum: what the embedding put in, plus what each head of
each layer wrote through its slice of W_O, plus each MLP's output, plus the biases. Walking each
layer's own recipe (:mod:`attnscope.recipe`) at one position keeps that sum term by term:

* ``x`` starts as the components written so far; ``add`` adds term by term;
* ``attention``: one new term per head, ``z_h W_O^h`` (the head's value-weighted sum — its value
  bias b_V included — through its W_O columns), and W_O's bias as the layer's ``attn bias`` term;
* ``mlp``: the MLP's output is one term (it is not linear; TransformerLens does the same);
* ``norm`` (Gemma 3's and OLMo 2's post-norms, the final norm): linear once each position's own
  statistic is frozen — :func:`attnscope.attribution.decompose.norm_terms`, as Elhage et al. and
  TransformerLens' ``apply_ln_to_stack`` do; a LayerNorm's β joins the ``bias`` term.

Each term after the final norm is projected on a logit direction ``W_U[a]`` (or ``W_U[a] − W_U[b]``
for a difference): the parts sum to the model's logit (difference) before any soft-cap. Only the
decomposition at the chosen position is kept: (components + 1, d), in at least float32 (a float16 or
bfloat16 model's traced values are widened, as its own norms compute in float32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import torch

from ..attribution.decompose import norm_terms
from ..errors import InputError
from ..i18n import error
from ..recipe import INPUT
from .stream import check_finite, check_language_model, check_text, embed_value, one_token_id, readable, recipe_of, token_text

Tensor = torch.Tensor


@dataclass
class LogitAttribution:
    """``names`` (C + 1,): ``embed``, ``L{i}H{h}``, ``L{i} attn bias``, ``L{i} mlp`` …, ``bias`` last;
    ``parts`` (C + 1,) their shares of ``logit`` (the model's logit, or difference, at ``position``,
    before any soft-cap); ``target`` the token id or (a, b)."""

    tokens: list[str]
    position: int
    target: Union[int, tuple[int, int]]
    names: list[str]
    parts: Tensor
    logit: float
    words: str = ""  # the target as text: ' Mary', or ' Mary' − ' John'

    def heads(self, n_layers: int, n_heads: int) -> Tensor:
        """The heads' parts as a (layers, heads) table."""
        idx = [self.names.index(f"L{i}H{h}") for i in range(n_layers) for h in range(n_heads)]
        return self.parts[idx].reshape(n_layers, n_heads)

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "position": self.position, "target": self.target, "words": self.words,
                "logit": self.logit,
                "parts": dict(zip(self.names, self.parts.tolist()))}


def _target(model, target, logits: Tensor) -> Union[int, tuple[int, int]]:
    """The token id, or the pair (a, b) of a difference, that ``target`` names."""
    V = logits.shape[-1]

    def tid(t):
        t = one_token_id(model, t) if isinstance(t, str) else t
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < V:  # numpy's: argmax gives them
            raise error(InputError, "errors.lens_target_id", target=repr(t), last=V - 1)
        return int(t)
    if target is None:
        return int(logits.argmax())
    if isinstance(target, (tuple, list)):
        if len(target) != 2:
            raise error(InputError, "errors.lens_target_pair", target=repr(target))
        a, b = tid(target[0]), tid(target[1])
        if a == b:  # logit[a] − logit[a] is 0 whatever the model does: every part would read 0
            raise error(InputError, "errors.lens_target_same", target=repr(target), id=a)
        return (a, b)
    return tid(target)


def unembed_rows(model) -> Tensor:
    """W_U (V, d): the checkpoint's own output matrix, or the tied token embedding."""
    W = getattr(model, "lm_head_weight", None)
    return W if W is not None else model.embed.token_embedding.weight


@torch.no_grad()
def direct_logit_attribution(model, text: str, *, target=None, position: int = -1) -> LogitAttribution:
    """Split the logit of ``target`` at ``position`` (default the last) into the model's parts.

    ``target``: None (the model's top prediction there), a token id, a text that is one token, or a
    pair (a, b) for the difference ``logit[a] − logit[b]``."""
    check_language_model(model, "direct_logit_attribution")
    check_text(text, "direct_logit_attribution")
    n, H = model.config.n_layers, model.config.n_heads
    names = ["embed.out", "layers.*.attn.z", "layers.*.attn.out", "layers.*.ffn.out", f"layers.{n - 1}.out"]
    for i in range(n):
        names += [f"layers.{i}.{s.name}" for s in recipe_of(model, i).steps if s.op in ("add", "norm", "same")]
    tr = model.trace([text], names=sorted(set(names)))
    check_finite(tr, model, "direct_logit_attribution")
    L = tr.lengths[0]
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not -L <= position < L:
        raise error(InputError, "errors.lens_position", position=repr(position), n=L, last=L - 1)
    p = int(position) % L
    labels = ["embed"] + [x for i in range(n) for x in ([f"L{i}H{h}" for h in range(H)] + [f"L{i} attn bias", f"L{i} mlp"])]
    C = len(labels)
    x0 = embed_value(tr, model)[0, p]  # (d,)
    # the sums in at least float32, as the model's own norms compute: in float16 x² overflows at |x| > 256
    x0 = x0.to(torch.promote_types(x0.dtype, torch.float32))
    D = x0.new_zeros(C + 1, x0.shape[-1])  # (C + 1, d): one row per component, the bias term last
    D[0] = x0
    for i in range(n):
        D = _layer(model, tr, i, p, D, 1 + i * (H + 2))
    final = norm_terms(D[None], model.ln_f)[0]  # (C + 1, d)
    W_U = unembed_rows(model).to(device=final.device, dtype=final.dtype)  # (V, d)
    logits_pre = torch.nn.functional.linear(final.sum(0), W_U)  # (V,)
    what = _target(model, target, logits_pre)  # a soft-cap is monotonic: the same top token
    direction = W_U[what[0]] - W_U[what[1]] if isinstance(what, tuple) else W_U[what]  # (d,)
    parts = final @ direction  # (C + 1,)
    value = logits_pre[what[0]] - logits_pre[what[1]] if isinstance(what, tuple) else logits_pre[what]
    return LogitAttribution(tokens=readable(model, tr.tokens[0]), position=p, target=what, names=labels + ["bias"],
                            parts=parts, logit=float(value), words=_words(model, what))


def _words(model, what) -> str:
    def one(i):
        return repr(token_text(model, i))
    return f"{one(what[0])} − {one(what[1])}" if isinstance(what, tuple) else one(what)


def _layer(model, tr, i: int, p: int, x: Tensor, first: int) -> Tensor:
    """Layer ``i``'s recipe at position ``p`` on the components ``x`` (C + 1, d); the layer's heads,
    attention bias and MLP are components ``first …``. Returns the layer's output's components."""
    layer, recipe = model.layers[i], recipe_of(model, i)
    H = model.config.n_heads
    D = {INPUT: x}
    for s in recipe.steps:
        if s.op == "same":
            D[s.name] = D[s.args[0]]
        elif s.op == "add":
            D[s.name] = D[s.args[0]] + D[s.args[1]]
        elif s.op == "norm":
            D[s.name] = norm_terms(D[s.args[0]][None], getattr(layer, str(s.module)))[0]
        elif s.op == "attention":
            attn = getattr(layer, s.name)
            z = tr[f"layers.{i}.{s.name}.z"][0, :, p]  # (H, d_head)
            W_O = attn.W_O.weight.to(x.dtype).reshape(-1, H, attn.d_head)  # (d, H, d_head)
            out = x.new_zeros(x.shape)
            out[first:first + H] = torch.einsum("hk,dhk->hd", z.to(x.dtype), W_O)  # (H, d)
            if attn.W_O.bias is not None:
                out[first + H] = attn.W_O.bias
            D[s.name] = out
        elif s.op == "mlp":
            out = x.new_zeros(x.shape)
            out[first + H + 1] = tr[f"layers.{i}.{s.name}.out"][0, p]
            D[s.name] = out
        else:
            raise error(InputError, "errors.lens_recipe_op", op=s.op, recipe=repr(recipe.name))
    return D[recipe.steps[-1].name]
