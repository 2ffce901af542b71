"""Patching runs: one clean trace, one corrupted run, then batches of patched corrupted runs.

Every patch is a copy of the corrupted prompt in a batch: copy k carries patch k, written by a
hook on the one layer it touches, and nothing else. Rows of a batch never interact in a
Transformer (no padding here: both prompts have the same length), so a batch of K patched copies
gives each what it gets alone (up to float rounding of the batched matrix products).
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence, Union

import numpy as np
import torch

from ..errors import InputError, shape_or_type
from ..i18n import error
from ..tokenizer import Batch
from .pair import Metric, PatchPair, checked_metric, encode_pair, require_lm
from .prefix import input_name, run_from_layers
from .result import PatchingResult

Tensor = torch.Tensor

#: Residual-stream sites: site -> the trace name of layer i's activation there.
SITES = {
    "resid_pre": "layers.{prev}.out",   # what enters layer i (the embedding output for layer 0)
    "attn_in": "layers.{i}.attn_in",    # the attention's input (after the pre-norm in pre-norm models)
    "resid_mid": "layers.{i}.attn_resid",  # the stream after the attention's residual add
    "resid_post": "layers.{i}.out",     # what layer i writes: the stream after the whole layer
}

#: The default batch: patched copies per forward pass.
BATCH = 32


def site_name(site: str, layer: int) -> str:
    """The trace name of ``site`` at ``layer`` (``resid_pre`` of layer 0 is ``embed.out``)."""
    if site not in SITES:
        raise error(InputError, "errors.patch_unknown_site", site=repr(site), sites=", ".join(SITES))
    if site == "resid_pre" and layer == 0:
        return "embed.out"
    return SITES[site].format(i=layer, prev=layer - 1)


def _batch(ids: Tensor, n: int, tokens) -> Batch:
    rep = ids.repeat(n, 1)  # (n, L)
    return Batch(rep, torch.ones_like(rep), torch.zeros_like(rep), [tokens] * n, [""] * n)


def _last_logits(model, hidden: Tensor) -> Tensor:
    return model.lm_logits(hidden[:, -1])  # (B, V): what the last token predicts


def _layers(model, layers) -> list[int]:
    n = model.config.n_layers
    if layers is None:
        return list(range(n))
    out: list[int] = []
    for l in layers:
        # no Python-style negatives: layers count from 0 here as in every other option (-1 is not "the last")
        if isinstance(l, bool) or not isinstance(l, (int, np.integer)) or not 0 <= l < n:
            raise error(InputError, "errors.patch_not_a_layer", value=repr(l), n=n, last=n - 1)
        if l in out:
            raise error(InputError, "errors.patch_layer_twice", layer=int(l))
        out.append(int(l))
    if not out:
        raise error(InputError, "errors.patch_layers_empty")
    return sorted(out)


def _run_patches(model, pair: PatchPair, patches: list, hook_for, metric: Metric, batch_size: int,
                 progress: bool, desc: str, inputs: dict, enter_for=None) -> tuple[Tensor, int]:
    """Metric of every patch, float64 ``(len(patches),)``, and the (copy, layer) evaluations it took.
    ``patches`` are ``(layer, index)`` sorted by layer; ``hook_for(layer, rows, index)`` gives the hook
    ``(name, fn)`` writing patch ``index[r]`` into batch row ``rows[r]``, or None when ``enter_for(layer,
    rows, index)`` writes it into what enters the layer instead. Each batch runs from its lowest patched
    layer, on the corrupted run's ``inputs`` (:func:`~attnscope.patching.prefix.run_from_layers`)."""
    from tqdm.auto import tqdm

    out = torch.empty(len(patches), dtype=torch.float64)
    evaluations = 0
    ids = pair.corrupted_ids.to(model.device)
    with tqdm(total=len(patches), unit="patch", desc=desc, disable=not progress, file=sys.stderr,
              dynamic_ncols=True) as bar:
        for s in range(0, len(patches), batch_size):
            chunk = patches[s:s + batch_size]
            by_layer: dict = {}
            for row, (layer, index) in enumerate(chunk):
                by_layer.setdefault(layer, ([], []))
                by_layer[layer][0].append(row)
                by_layer[layer][1].append(index)
            hooks, enter = {}, {}
            for layer, (rows, idx) in by_layer.items():
                hook = hook_for(layer, rows, idx)
                if hook is not None:
                    hooks[hook[0]] = hook[1]
                else:
                    enter[layer] = enter_for(layer, rows, idx)
            hidden, n = run_from_layers(model, ids, [layer for layer, _ in chunk], inputs, hooks, enter)  # (K, L, d)
            evaluations += n
            out[s:s + len(chunk)] = metric(_last_logits(model, hidden)).detach().to("cpu", torch.float64)
            bar.update(len(chunk))
    return out, evaluations


def _prepare(model, clean, corrupted, answer, wrong, metric, batch_size):
    if model is None or isinstance(model, str) or hasattr(model, "__fspath__"):
        from ..models import load
        model = load(model)
    require_lm(model)
    model.eval()
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise error(InputError, "errors.patch_batch_size", value=repr(batch_size))
    pair = encode_pair(model, clean, corrupted)
    fn, name, tokens = checked_metric(metric, answer, wrong, model)
    return model, pair, fn, name, tokens


def _metric_of(model, metric, ids, tokens, names=None):
    tr = model.trace(_batch(ids, 1, tokens).to(model.device), names=names if names is not None else [])
    m = metric(_last_logits(model, tr.output))
    if not isinstance(m, Tensor) or m.shape != (1,):
        raise error(InputError, "errors.patch_metric_shape", got=shape_or_type(m))
    return tr, float(m.double())


@torch.no_grad()
def patch(model, clean: str, corrupted: str, answer: Union[str, int, None] = None,
          wrong: Union[str, int, None] = None, *, what: str = "heads", site: Optional[str] = None,
          metric: Optional[Metric] = None, layers: Optional[Sequence[int]] = None,
          batch_size: int = BATCH, progress: bool = False) -> PatchingResult:
    """Patch activations of the clean run into the corrupted run and measure the metric each time.

    Args:
        model: a loaded causal language model, or a name/path for :func:`attnscope.load`.
        clean, corrupted: the two prompts; they must tokenize to the same number of tokens.
        answer, wrong: the default metric's tokens (text that is one token, or an id):
            ``logit[answer] − logit[wrong]`` at the last position.
        what: ``"heads"``: one head's output ``layers.{i}.attn.z[h]`` at every position, for every
            layer × head; ``"residual"``: the residual stream at ``site`` at one position, for
            every layer × position.
        site: for ``what="residual"``: one of :data:`SITES` (default ``resid_pre``: what enters the
            layer); refused with ``what="heads"``, which patches each head's z wherever the site says.
        metric: instead of answer/wrong, ``metric(logits (B, V)) -> (B,)`` on the last position.
        layers: the layers to patch (default: all).
        batch_size: patched copies per forward pass.
        progress: show a progress bar.
    Returns:
        :class:`PatchingResult`: ``values (n_layers, n_heads | L)`` of the metric after each patch
        (float64; NaN for layers not patched), the clean and corrupted metrics, and the labels.
    """
    if what not in ("heads", "residual"):
        raise error(InputError, "errors.patch_what", value=repr(what))
    if what == "heads" and site is not None:  # it would be dropped: heads patch each head's z
        raise error(InputError, "errors.patch_site_heads", site=repr(site))
    site = site or "resid_pre"
    model, pair, fn, name, tokens = _prepare(model, clean, corrupted, answer, wrong, metric, batch_size)
    chosen = _layers(model, layers)
    c = model.config
    if what == "heads":
        names = [f"layers.{l}.attn.z" for l in chosen]
    else:
        names = [site_name(site, l) for l in chosen]
    tr, clean_m = _metric_of(model, fn, pair.clean_ids, pair.clean_tokens, names)
    # what enters each patched layer in the corrupted run: the patched copies start there
    xr, corrupted_m = _metric_of(model, fn, pair.corrupted_ids, pair.corrupted_tokens,
                                 [input_name(l) for l in chosen])
    inputs = {l: xr[input_name(l)] for l in chosen}  # (1, L, d) each
    acts = {n: tr[n][0] for n in names}  # clean activations, batch axis dropped
    dev = model.device

    if what == "heads":
        def hook_for(layer, rows, heads):
            src = acts[f"layers.{layer}.attn.z"]  # (H, L, d_head)
            r, h = torch.tensor(rows, device=dev), torch.tensor(heads, device=dev)

            def write(z: Tensor, _name: str) -> Tensor:
                z = z.clone()  # (K, H, L, d_head)
                z[r, h] = src[h].to(z.dtype)
                return z
            return f"layers.{layer}.attn.z", write
        width, cols = c.n_heads, [f"head {h}" for h in range(c.n_heads)]
        enter_for = None
    else:
        def writer(layer, rows, positions):
            src = acts[site_name(site, layer)]  # (L, d)
            r, p = torch.tensor(rows, device=dev), torch.tensor(positions, device=dev)

            def write(x: Tensor, _name: str) -> Tensor:
                x = x.clone()  # (K, L, d)
                x[r, p] = src[p].to(x.dtype)
                return x
            return write

        def hook_for(layer, rows, positions):
            # what enters the layer is written as the copies join the batch there (enter_for)
            return None if site == "resid_pre" else (site_name(site, layer), writer(layer, rows, positions))

        def enter_for(layer, rows, positions):
            write = writer(layer, list(range(len(rows))), positions)  # rows: the ones joining, in order
            return lambda x, _local: write(x, "")
        width, cols = pair.length, list(pair.clean_tokens)
    patches = [(l, j) for l in chosen for j in range(width)]
    flat, evaluations = _run_patches(model, pair, patches, hook_for, fn, batch_size, progress,
                                     "patch heads" if what == "heads" else f"patch {site}", inputs, enter_for)
    values = torch.full((c.n_layers, width), float("nan"), dtype=torch.float64)
    for (l, j), v in zip(patches, flat.tolist()):
        values[l, j] = v
    return PatchingResult(
        what=what, site="z" if what == "heads" else site, values=values, clean=clean_m, corrupted=corrupted_m,
        rows=[f"layer {l}" for l in range(c.n_layers)], cols=cols, metric=name, model_name=model.name,
        clean_text=pair.clean_text, corrupted_text=pair.corrupted_text, clean_tokens=pair.clean_tokens,
        corrupted_tokens=pair.corrupted_tokens, tokens=tokens, layers=chosen,
        layer_evaluations=evaluations + 2 * c.n_layers,
        layer_evaluations_full=(len(patches) + 2) * c.n_layers)


def patch_heads(model, clean: str, corrupted: str, answer=None, wrong=None, **kw) -> PatchingResult:
    """:func:`patch` with ``what="heads"``: every layer × head's output z."""
    return patch(model, clean, corrupted, answer, wrong, what="heads", **kw)


def patch_residual(model, clean: str, corrupted: str, answer=None, wrong=None, *, site: str = "resid_pre",
                   **kw) -> PatchingResult:
    """:func:`patch` with ``what="residual"``: every layer × position of the residual stream at ``site``."""
    return patch(model, clean, corrupted, answer, wrong, what="residual", site=site, **kw)
