"""A checkpoint's tensors into an attnscope model by its family's :class:`~.registry.WeightRule` s
(shared by the folder loader and the GGUF loader)."""

from __future__ import annotations

import re
import warnings
from typing import Callable, Optional

import torch

from ..errors import ModelLoadError, fmt_shape
from ..i18n import Msg, error, text
from .registry import Family


def normalise_keys(sd: dict[str, torch.Tensor], family: Family) -> dict[str, torch.Tensor]:
    """Move the family's moved key parts, strip the task-head prefix ("bert.", "transformer.", …) and
    apply the family's renames."""
    out = {}
    for key, value in sd.items():
        for old, new in family.moved:
            if key.startswith(old):
                key = new + key[len(old):]
                break
        for prefix in family.prefixes:
            if key.startswith(prefix):
                key = key[len(prefix):]
                break
        for old, new in family.renames:
            if key.endswith(old):
                key = key[: -len(old)] + new
        out[key] = value
    return out


def map_weights(model: torch.nn.Module, family: Family, sd: dict[str, torch.Tensor],
                source: str, *, assign: bool = False, only: Optional[Callable[[str], bool]] = None) -> list[str]:
    """Copy the checkpoint into ``model`` (any loaded model: its ``config`` and state dict) by the
    family's rules; return the unused checkpoint keys.

    ``assign``: the model's parameters become the checkpoint's tensors (made contiguous) instead of
    being copied into: with a model built without initialising its weights, the weights are then
    held once, not twice, while loading.

    ``only``: map just the targets it accepts (the rest of the model is left as it is): the
    streamed load (:mod:`.streaming`) puts one layer's weights in at a time, by these same rules.

    Raises ModelLoadError naming the missing key, or the key whose shape is wrong with both shapes.
    """
    sd = normalise_keys(sd, family)
    params = model.state_dict()
    used: set[str] = set()
    new_state = {}
    rules = [r for r in family.rules(model.config) if only is None or only(r.target)]
    covered = {r.target for r in rules}
    missing_targets = [k for k in params if k not in covered and (only is None or only(k))]
    if missing_targets:  # a bug in a family's rules, not in the user's file
        raise error(ModelLoadError, "errors.models_no_weight_rule", names=missing_targets[:3])
    for rule in rules:
        tensors = []
        for key in rule.sources:
            if key not in sd:
                hint: Msg | str = ""
                if not any(k.startswith(key.split(".")[0] + ".") for k in sd):
                    hint = Msg("errors.models_checkpoint_hint", family=family.name, keys=sorted(sd)[:3])
                raise error(ModelLoadError, "errors.models_weight_missing", source=source, field=repr(key),
                            target=rule.target, hint=hint)
            tensors.append(sd[key])
            used.add(key)
        want = params[rule.target].shape
        for key, t in zip(rule.sources, tensors):
            if not t.is_floating_point():
                raise error(ModelLoadError, "errors.models_weight_dtype", source=source, field=repr(key), dtype=t.dtype)
            if not torch.isfinite(t).all():  # loaded silently: NaN in traces, finite numbers from fused kernels
                raise error(ModelLoadError, "errors.gguf_non_finite", path=source, name=repr(key))
        try:
            value = rule.combine(tensors)
        except RuntimeError:
            value = None
        if value is None or value.shape != want:
            got = ", ".join(f"{k} {fmt_shape(t.shape)}" for k, t in zip(rule.sources, tensors))
            raise error(ModelLoadError, "errors.models_weight_shape", source=source, got=got, target=rule.target,
                        want=fmt_shape(want))
        new_state[rule.target] = value.contiguous() if assign else value
    model.load_state_dict(new_state, strict=only is None, assign=assign)
    embedding = "shared.weight" if "shared.weight" in new_state else "embed.token_embedding.weight"  # T5, BART: shared
    if family.lm_head and "lm_head.weight" in sd and embedding in new_state:
        # Usually the tied token embedding again; a checkpoint saved with tie_word_embeddings=False
        # (or by transformers 5, whose T5 config says tied whatever the weights) has its own output
        # matrix, which the logits must then use (transformers does not tie two different tensors).
        W, wte = sd["lm_head.weight"], new_state[embedding]
        if W.shape != wte.shape:
            raise error(ModelLoadError, "errors.models_lm_head_shape", source=source, got=fmt_shape(W.shape),
                        want=fmt_shape(wte.shape))
        if not torch.equal(W, wte):
            model.lm_head_weight = torch.nn.Parameter(W.to(wte.dtype), requires_grad=False)
        used.add("lm_head.weight")
    unused = sorted(k for k in sd if k not in used)
    if only is None:
        warn_extra_layers(unused, used, source)
    return unused


def warn_extra_layers(unused: list[str], used: set[str], source: str) -> None:
    """A UserWarning when the checkpoint holds layers past the config's count (like transformers,
    which warns of unused weights: reading the first layers of a deeper checkpoint is a real use,
    but it must not pass unnoticed). A layer's key is an unused key whose layer index, set to 0,
    names a weight the model used."""
    extra = set()
    for key in unused:
        for m in re.finditer(r"(?<=\.)\d+(?=\.)", key):
            if key[:m.start()] + "0" + key[m.end():] in used:
                extra.add(int(m.group()))
    if extra:
        warnings.warn(text("errors.models_extra_layers", source=source, first=min(extra), last=max(extra),
                           n=len(extra)), UserWarning, stacklevel=4)
