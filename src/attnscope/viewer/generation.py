"""The viewer's data for a generated sequence (a first, minimal view of a generation).

The prompt and the generated tokens run once more as one text, recording q, k, v of every layer
(and the weights, against which the page's recomputation is checked); row ``n_prompt − 1 + t`` of
each head is then the attention of the step that chose new token t — the numbers
``Generation.attentions[t]`` holds, up to float32 rounding. Shared key/value heads are shown
once per query head (query head h with k/v head ``h // group``), and Gemma's query scale is
folded into q so that the page's ``softmax(q·k/√d_head)`` is the model's. Sliding windows that
hide keys of this sequence are refused: the page does not draw them yet.
"""

from __future__ import annotations

import math

from ..errors import InputError
from . import data as _data


def per_query_head(trace, config):
    """The same trace with one k/v head per query head and Gemma's extra score factor folded into q:
    the plain dot-product attention the page recomputes (``softmax(q·kᵀ/√d_head)``, causal)."""
    from dataclasses import replace

    from ..trace import Trace

    scale = getattr(config, "query_scale", None)
    q_factor = 1.0 if scale is None else scale * math.sqrt(config.d_head)
    tensors = {}
    for name, t in trace.items():
        step = name.rsplit(".", 1)[-1]
        if step in ("k", "v") and t.shape[1] != config.n_heads:
            t = t.repeat_interleave(config.n_heads // t.shape[1], dim=1)  # (B, H, L, d)
        elif step == "q" and q_factor != 1.0:
            t = t * q_factor
        tensors[name] = t
    plain = replace(config, n_kv_heads=None, query_scale=None, sliding_window=None, layer_types=None)
    return Trace(tensors, tokens=trace.tokens, input_ids=trace.input_ids, attention_mask=trace.attention_mask,
                 model_name=trace.model_name, family=trace.family, config=plain, texts=trace.texts)


def generation_data(model, gen, *, decimals: int = 4) -> dict:
    """Page data of ``gen`` (a :class:`~attnscope.models.generation.Generation` of ``model``)."""
    import torch

    from ..tokenizer import Batch

    ids = gen.ids
    n = len(ids)
    windows = [model.config.window(i) for i in range(model.config.n_layers)]
    short = [w for w in windows if w is not None and n > w]
    if short:
        raise InputError(f"the sequence has {n} tokens, more than the sliding window of {min(short)} of some layers; "
                         f"the viewer does not show sliding windows yet: generate fewer tokens or use a shorter prompt")
    t = torch.tensor([ids])
    tokens = model.tokenizer.readable([model.tokenizer.id_to_token(i) for i in ids])
    batch = Batch(t, torch.ones_like(t), torch.zeros_like(t), [tokens], [gen.prompt + gen.text])
    tr = model.trace(batch, names=["layers.*.attn.q", "layers.*.attn.k", "layers.*.attn.v",
                                   "layers.*.attn.weights[0]"])
    data = _data.build(per_query_head(tr, model.config), decimals=decimals)
    data["generation"] = {"n_prompt": gen.n_prompt, "new_ids": list(gen.new_ids),
                          "finish_reason": gen.finish_reason, "settings": dict(gen.settings)}
    return data


def save_generation_html(model, gen, path, *, decimals: int = 4, title=None):
    """Write the viewer page of ``gen`` to ``path``; return the path."""
    from pathlib import Path

    from .html import render

    path = Path(path)
    page = render(generation_data(model, gen, decimals=decimals), title=title)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None
    return path
