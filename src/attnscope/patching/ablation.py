"""Mean ablation: a head's output replaced by its mean over a prompt set, at each position.

For each group of equal-length prompts (:class:`~attnscope.patching.runs.PromptGroup`) the mean
of head h's output ``z_h`` (its value-weighted sum, before W_O; W_O is linear, so this is the mean
of what it writes, ``z_h W_O^h``) is taken over the group's rows at each position, from the
**corrupted** prompts by default — for IOI the ABC distribution, as Wang et al. do, so that the
mean carries the template's structure but no information about which name is IO. An ablated
head then writes that mean in every prompt of the group. The MLPs are never ablated: they are
part of every circuit here, as in Wang et al.
"""

from __future__ import annotations

from typing import Iterable

import torch

from ..errors import InputError
from ..i18n import error
from .pair import require_lm
from .path import Head, check_head
from .prompts import groups_of
from .runs import forward, logit_diffs, record

Tensor = torch.Tensor

SOURCES = ("corrupted", "clean")


@torch.no_grad()
def head_means(model, prompts, source: str = "corrupted") -> list[Tensor]:
    """Per group, the mean of every head's z over the group's ``source`` prompts at each position,
    ``(n_layers, n_heads, L, d_head)`` (float32 or the model's dtype)."""
    require_lm(model)
    if source not in SOURCES:
        raise error(InputError, "errors.ablation_source", value=repr(source), choices=", ".join(SOURCES))
    n = model.config.n_layers
    names = [f"layers.{l}.attn.z" for l in range(n)]
    out = []
    for g in groups_of(prompts):
        rec, _ = record(model, g.clean if source == "clean" else g.corrupted, names)
        out.append(torch.stack([rec[name].mean(0) for name in names]))  # (n_layers, H, L, d_head)
    return out


def checked_heads(model, heads: Iterable) -> set[Head]:
    """A set of ``(layer, head)``, each checked against the model."""
    try:
        items = list(heads)
    except TypeError:
        raise error(InputError, "errors.ablation_heads", value=repr(heads)) from None
    return {check_head(model, h, "head") for h in items}


@torch.no_grad()
def ablated_metric(model, prompts, ablate: Iterable[Head], means: list[Tensor]) -> Tensor:
    """Each clean prompt's metric, float64 ``(N,)`` (groups concatenated), with every head of
    ``ablate`` mean-ablated (``means`` from :func:`head_means` of the same prompts)."""
    require_lm(model)
    groups = groups_of(prompts)
    if len(means) != len(groups):
        raise error(InputError, "errors.ablation_means", groups=len(groups), means=len(means))
    chosen = checked_heads(model, ablate)
    by_layer: dict[int, list[int]] = {}
    for l, h in sorted(chosen):
        by_layer.setdefault(l, []).append(h)
    out = []
    for g, mean in zip(groups, means):
        hooks = {}
        for l, hs in by_layer.items():
            idx = torch.tensor(hs, device=model.device)

            def write(t: Tensor, _name: str, src=mean[l], idx=idx) -> Tensor:
                t = t.clone()  # (n, H, L, d_head)
                t[:, idx] = src[idx].to(t.dtype)  # (k, L, d_head), the same in every row
                return t
            hooks[f"layers.{l}.attn.z"] = write
        out.append(logit_diffs(model, forward(model, g.clean, hooks), g))
    return torch.cat(out)


def all_heads(model) -> set[Head]:
    """Every ``(layer, head)`` of the model."""
    c = model.config
    return {(l, h) for l in range(c.n_layers) for h in range(c.n_heads)}
