"""Path patching (Wang et al. 2022, Goldowsky-Dill et al. 2023): one head's effect along chosen paths only.

Activation patching swaps a head's output and lets the change flow everywhere after it. Path
patching lets it reach chosen *receivers* only — the query, key or value input of later heads, or
the logits — so that "does head A matter *through head B's query*" has a number. For a sender
head s = (l, h) and a prompt set with clean and corrupted prompts:

1. Run the clean prompts with s's output ``z_s`` taken from the corrupted run, and every other
   head's output ``z`` frozen at its clean value (so the change cannot spread through them). The
   MLPs are **recomputed** by default — the IOI paper's convention: a path through an MLP counts as
   direct — or frozen at their clean outputs with ``mlp="freeze"`` (then only the residual stream
   carries the change). Record each receiver's q (or k, v) in this run; for the ``"logits"``
   receiver this run's output is the answer.
2. Run the clean prompts again with only the receivers' q/k/v replaced by what step 1 recorded;
   everything else, the heads after the receivers included, is computed normally.

The metric is each prompt's logit difference (answer − wrong) at the last position; the result
holds its mean over prompts after the patch, the clean and corrupted means, and per prompt values.

Two shortcuts that change no number: step 1 starts at the sender's layer, from the clean run's
recorded stream there (the layers below are the clean run), and stops after the last receiver's
layer; step 2 starts at the first receiver's layer. With grouped-query attention a k or v receiver
is a k/v head that several query heads share: the patch reaches all of them (``k[h]`` names the
k/v head that query head h reads, :data:`attnscope.trace.names.KV_STEPS`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

import numpy as np
import torch

from ..errors import InputError
from ..i18n import error
from .pair import require_lm
from .prefix import input_name
from .prompts import as_prompts, groups_of
from .runs import PromptGroup, forward, logit_diffs, record

Tensor = torch.Tensor

#: The inputs of a receiving head that path patching can patch.
KINDS = ("q", "k", "v")
#: The MLP conventions: recompute (the IOI paper's; paths through MLPs count) or freeze.
MLP_MODES = ("recompute", "freeze")

Head = tuple[int, int]
Receiver = tuple[int, int, str]


def check_head(model, head, what: str = "sender") -> Head:
    """``(layer, head)`` as ints, or InputError naming the model's ranges."""
    c = model.config
    if (not isinstance(head, (tuple, list)) or len(head) != 2
            or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in head)):
        raise error(InputError, "errors.path_head_form", what=what, value=repr(head))
    l, h = int(head[0]), int(head[1])
    if not 0 <= l < c.n_layers or not 0 <= h < c.n_heads:
        raise error(InputError, "errors.path_head_range", what=what, value=repr(tuple(head)), n_layers=c.n_layers,
                    n_heads=c.n_heads, last_layer=c.n_layers - 1, last_head=c.n_heads - 1)
    return l, h


def check_receivers(model, receivers, sender_layer: Optional[int] = None) -> Union[str, list[Receiver]]:
    """``"logits"`` or a list of ``(layer, head, kind)``, checked: in range, kind one of
    :data:`KINDS`, each once, and every one in a layer after ``sender_layer``."""
    if isinstance(receivers, str):
        if receivers != "logits":
            raise error(InputError, "errors.path_receivers_word", value=repr(receivers))
        return "logits"
    try:
        items = list(receivers)
    except TypeError:
        raise error(InputError, "errors.path_receivers_word", value=repr(receivers)) from None
    if not items:
        raise error(InputError, "errors.path_receivers_empty")
    out: list[Receiver] = []
    for r in items:
        if not isinstance(r, (tuple, list)) or len(r) != 3 or r[2] not in KINDS:
            raise error(InputError, "errors.path_receiver_form", value=repr(r), kinds=", ".join(KINDS))
        l, h = check_head(model, (r[0], r[1]), "receiver")
        if (l, h, r[2]) in out:
            raise error(InputError, "errors.path_receiver_twice", value=repr((l, h, r[2])))
        if sender_layer is not None and l <= sender_layer:
            raise error(InputError, "errors.path_receiver_not_after", receiver=repr((l, h, r[2])), layer=l,
                        sender_layer=sender_layer)
        out.append((l, h, str(r[2])))
    return out


@dataclass
class PathResult:
    """Path patching of ``senders`` into ``receivers``.

    Attributes:
        values: ``(n_layers, n_heads)`` float64, the mean metric over prompts with that sender's
            path patched (NaN: not a sender here).
        clean, corrupted: the mean metric of the clean and the corrupted prompts.
        per_prompt: ``{(l, h): (N,)}`` the metric of each prompt with that sender patched.
        receivers: ``"logits"`` or ``[(layer, head, kind)]``; ``mlp``: the MLP convention.
    """

    values: Tensor
    clean: float
    corrupted: float
    receivers: Union[str, list]
    mlp: str
    n_prompts: int
    per_prompt: dict = field(default_factory=dict)

    @property
    def effect(self) -> Tensor:
        """``patched − clean`` per sender: how much the path moves the metric (negative: it carried
        part of the clean answer)."""
        return self.values - self.clean

    @property
    def relative(self) -> Tensor:
        """``(patched − clean) / clean`` (Wang et al.'s figures: −0.3 = the logit difference falls by 30 %)."""
        return self.effect / self.clean

    def top(self, k: int = 10) -> list[tuple[str, float, float]]:
        """The ``k`` senders with the most negative effect: ``("L.H", effect, relative)``."""
        e = torch.nan_to_num(self.effect, nan=float("inf")).flatten()
        n = self.values.shape[1]
        order = torch.argsort(e)[:k].tolist()
        return [(f"{i // n}.{i % n}", float(e[i]), float(self.relative.flatten()[i])) for i in order
                if e[i] != float("inf")]

    def to_json(self) -> dict:
        return {"receivers": self.receivers if isinstance(self.receivers, str) else [list(r) for r in self.receivers],
                "mlp": self.mlp, "prompts": self.n_prompts, "clean": self.clean, "corrupted": self.corrupted,
                "values": [[None if v != v else v for v in row] for row in self.values.tolist()]}


class _Group:
    """What the clean and corrupted runs of one group give, recorded once for every sender."""

    def __init__(self, model, group: PromptGroup, mlp: str):
        n = model.config.n_layers
        names = [f"layers.{l}.attn.z" for l in range(n)] + [input_name(l) for l in range(n)]
        if mlp == "freeze":
            names += [f"layers.{l}.ffn.out" for l in range(n)]
        self.clean, hidden = record(model, group.clean, names)
        self.clean_metric = logit_diffs(model, hidden, group)  # (n,)
        self.corrupted, hidden = record(model, group.corrupted, [f"layers.{l}.attn.z" for l in range(n)])
        self.corrupted_metric = logit_diffs(model, hidden, group)  # (n,)


def _sender_hooks(model, state: _Group, sender: Head, top: int, mlp: str) -> dict:
    """Step 1's hooks: the sender's z from the corrupted run, every other head's z (and with
    ``mlp="freeze"`` every MLP's output) from the clean run, in layers ``sender … top``."""
    ls, hs = sender
    hooks = {}

    def sender_z(t: Tensor, _name: str) -> Tensor:
        z = state.clean[f"layers.{ls}.attn.z"].clone()  # (n, H, L, d_head)
        z[:, hs] = state.corrupted[f"layers.{ls}.attn.z"][:, hs]
        return z.to(t.dtype)
    hooks[f"layers.{ls}.attn.z"] = sender_z
    for l in range(ls + 1, top + 1):
        hooks[f"layers.{l}.attn.z"] = constant(state.clean[f"layers.{l}.attn.z"])
    if mlp == "freeze":
        for l in range(ls, top + 1):
            hooks[f"layers.{l}.ffn.out"] = constant(state.clean[f"layers.{l}.ffn.out"])
    return hooks


def constant(src: Tensor):
    """A hook that replaces what it sees by ``src`` (of the same shape), in the step's dtype."""
    def fn(t: Tensor, _name: str) -> Tensor:
        return src.to(t.dtype)
    return fn


def _patched(model, group: PromptGroup, state: _Group, sender: Head, receivers, mlp: str) -> Tensor:
    """The metric of each prompt of ``group`` with ``sender``'s path into ``receivers`` patched, (n,)."""
    ls = sender[0]
    n = model.config.n_layers
    x_in = state.clean[input_name(ls)]
    if receivers == "logits":
        hidden = forward(model, group.clean, _sender_hooks(model, state, sender, n - 1, mlp), start=ls, x_in=x_in)
        return logit_diffs(model, hidden, group)
    top = max(r[0] for r in receivers)
    wanted = sorted({f"layers.{l}.attn.{kind}" for l, _, kind in receivers})
    rec, _ = record(model, group.clean, wanted, _sender_hooks(model, state, sender, top, mlp), start=ls, x_in=x_in,
                    stop=top)
    group_size = model.config.n_heads // model.config.kv_heads
    hooks = {}
    for l, h, kind in receivers:
        j = h if kind == "q" else h // group_size  # k, v: the k/v head that query head h reads
        hooks[f"layers.{l}.attn.{kind}[{h}]"] = constant(rec[f"layers.{l}.attn.{kind}"][:, j])  # (n, L, d_head)
    first = min(r[0] for r in receivers)
    hidden = forward(model, group.clean, hooks, start=first, x_in=state.clean[input_name(first)])
    return logit_diffs(model, hidden, group)


def _check_mlp(mlp: str) -> None:
    if mlp not in MLP_MODES:
        raise error(InputError, "errors.path_mlp", value=repr(mlp), modes=", ".join(MLP_MODES))


@torch.no_grad()
def path_sweep(model, prompts, corrupted: Optional[str] = None, *, receivers="logits",
               senders: Optional[Sequence[Head]] = None, answer=None, wrong=None, mlp: str = "recompute",
               progress: bool = False) -> PathResult:
    """Path patching of every sender (default: every head in a layer before the first receiver, all
    heads for ``"logits"``) into ``receivers``, on ``prompts`` — a prompt set
    (:func:`~attnscope.patching.ioi.ioi_prompts`), a list of :class:`PromptGroup`, or a clean text
    with its ``corrupted`` text and the metric's ``answer`` and ``wrong`` tokens. See the module
    docstring for the method."""
    from tqdm.auto import tqdm  # loaded when a sweep runs, not when the package is imported

    require_lm(model)
    _check_mlp(mlp)
    model.eval()
    recv: Union[str, list[Receiver]]
    groups = groups_of(as_prompts(model, prompts, corrupted, answer, wrong))
    c = model.config
    recv = check_receivers(model, receivers)
    limit = c.n_layers if isinstance(recv, str) else min(r[0] for r in recv)
    if senders is None:
        chosen = [(l, h) for l in range(limit) for h in range(c.n_heads)]
        if not chosen:
            raise error(InputError, "errors.path_no_senders", layer=limit)
    else:
        chosen = [check_head(model, s) for s in senders]
        if not chosen:  # else a grid of NaN, every sender 'not a sender here'
            raise error(InputError, "errors.path_senders_empty")
        if recv != "logits":
            for s in chosen:
                check_receivers(model, recv, s[0])
    states = [_Group(model, g, mlp) for g in groups]
    values = torch.full((c.n_layers, c.n_heads), float("nan"), dtype=torch.float64)
    per: dict = {}
    for s in tqdm(chosen, unit="sender", disable=not progress, file=sys.stderr, dynamic_ncols=True):
        per[s] = torch.cat([_patched(model, g, st, s, recv, mlp) for g, st in zip(groups, states)])  # (N,)
        values[s] = per[s].mean()
    clean_m = torch.cat([st.clean_metric for st in states])  # (N,)
    corrupted_m = torch.cat([st.corrupted_metric for st in states])  # (N,)
    return PathResult(values=values, clean=float(clean_m.mean()), corrupted=float(corrupted_m.mean()), receivers=recv,
                      mlp=mlp, n_prompts=int(clean_m.shape[0]), per_prompt=per)


@torch.no_grad()
def path_patch(model, prompts, corrupted: Optional[str] = None, *, sender: Head, receivers="logits",
               answer=None, wrong=None, mlp: str = "recompute") -> PathResult:
    """Path patching of one ``sender`` ``(layer, head)`` into ``receivers`` — ``"logits"`` or a list of
    ``(layer, head, "q" | "k" | "v")``, each in a later layer than the sender — on ``prompts`` (as
    :func:`path_sweep` takes them). ``result.values[sender]`` is the mean metric after the patch,
    ``result.per_prompt[sender]`` each prompt's::

        path_patch(model, clean, corrupted, sender=(0, 1), receivers=[(1, 2, "q")], answer=" Mary", wrong=" John")
    """
    s = check_head(model, sender)
    check_receivers(model, receivers, s[0])
    return path_sweep(model, prompts, corrupted, receivers=receivers, senders=[s], answer=answer, wrong=wrong, mlp=mlp)
