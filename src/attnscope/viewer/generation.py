"""The viewer's data for a generated sequence: the generation view.

The prompt and the generated tokens run once more as one text, recording what the viewer stores
(q and k before the rotation, v, head 0's weights to check the page's recomputation against);
row ``n_prompt − 1 + t`` of each head is then the attention of the step that chose new token t:
the numbers ``Generation.attentions[t]`` holds (up to float32 rounding, the cached steps and the
full pass round differently). Shared k/v heads, Gemma's scale and sliding windows are the
model's: the page draws them as for any text (:mod:`attnscope.viewer.data`).

``data["generation"]``: ``n_prompt``, ``new_ids``, ``finish_reason``, ``settings`` and ``steps``
(the query position of each step, ``n_prompt − 1 + t``).
"""

from __future__ import annotations

from ..errors import InputError
from ..i18n import error
from . import data as _data
from .attribution_view import add_attribution, same_ids


def generation_data(model, gen, *, decimals: int = 4, attribution: bool = False) -> dict:
    """Page data of ``gen`` (a :class:`~attnscope.models.generation.Generation` of ``model``);
    ``attribution``: with the switch's matrices (:mod:`.attribution_view`) when the prompt and the
    output, joined, tokenize to the generated ids."""
    import torch

    from ..tokenizer import Batch
    from .run import display_tokens, view_names

    ids = gen.ids
    if not gen.new_ids:
        raise error(InputError, "errors.viewer_no_new_tokens")
    t = torch.tensor([ids])
    tokens = [model.tokenizer.id_to_token(i) for i in ids]
    batch = Batch(t, torch.ones_like(t), torch.zeros_like(t), [tokens], [gen.prompt + gen.text])
    names = [n for n in view_names(model.config) if n not in ("embed.out", "layers.*.out")]
    tr = model.trace(batch, names=names)
    data = _data.build(tr, decimals=decimals)
    data["texts"][0]["tokens"] = display_tokens(model, tokens)
    data["generation"] = {"n_prompt": gen.n_prompt, "new_ids": list(gen.new_ids),
                          "finish_reason": gen.finish_reason, "settings": dict(gen.settings),
                          "steps": [gen.n_prompt - 1 + i for i in range(len(gen.new_ids))]}
    if attribution:
        text = gen.prompt + gen.text
        add_attribution(data, model, [text if same_ids(model, text, ids) else None])
    return data


def save_generation_html(model, gen, path, *, decimals: int = 4, title=None, lang: str = "en",
                         attribution: bool = True):
    """Write the viewer page of ``gen`` to ``path``, its own words in ``lang`` (en, zh); return the path."""
    from .html import render, write_page

    return write_page(path, render(generation_data(model, gen, decimals=decimals, attribution=attribution), title=title,
                                  lang=lang))
