"""One token's whole path through one layer of a real model, worked out: the first article's
pipeline ``text → tokens → ids → embedding rows → (LayerNorm) → q, k, v → scores → softmax →
z → heads concatenated → W_O → residual → norm → feed-forward → residual → the layer's output``.

Every number is recomputed in float64 from the model's weights (:mod:`attnscope.reference_model`:
the embeddings and every earlier layer too), each step names its trace name (what
``model.trace`` records and the viewer shows), and the model's own float32 trace is set beside
each step at the end. The layer is written from its recipe (:mod:`attnscope.recipe`), one writer
per kind of step (:mod:`.path_layer`), from numbers computed first (:mod:`.path_values`): post-LN
(BERT and its kin), pre-LN (GPT-2, Llama, Qwen, Mistral, BLOOM), Gemma's sandwich, OLMo 2's norms
after the blocks, and any recipe registered later; DeBERTa, T5 and BART in :mod:`.path_relative`.

    >>> w = explain_path("我喜欢人工智能", model, layer=0, head=3, token="喜")
    >>> w.values["layers.0.out"]          # the token's output vector, float64
"""

from __future__ import annotations

from typing import Optional

from .. import reference_model as RM
from ..errors import InputError
from ..i18n import error
from .doc import Worked
from .inputs import loaded, model_layer
from .path_relative import deberta_path, seq2seq_path
from .path_steps import PathSteps, assemble
from .row import model_row_data, row_worked


def explain_path(text: str, model=None, layer: int = 0, head: int = 0, token: Optional[str] = None,
                 position: Optional[int] = None, dims: int = 3, expand: str = "auto", target: Optional[str] = None,
                 attention: Optional[str] = None) -> Worked:
    """The whole path of one token of ``text`` through ``layer`` (query head ``head`` worked out
    in full); see the module docstring. Encoder–decoder models (T5, BART): ``text`` is the source;
    without ``target`` (or with ``attention="encoder"``) a source token's path through an encoder
    layer, with it a target token's path through a decoder layer (self- and cross-attention:
    :mod:`.path_relative`). Raises InputError for an empty text, a layer/head out of range or a
    token not in the text."""
    model = loaded(model)
    if getattr(model.config, "kind", "") == "seq2seq":
        return seq2seq_path(text, model, target, attention, layer, head, token, position, dims, expand)
    if target is not None or attention is not None:
        raise error(InputError, "errors.explain_target_keywords", model=model.name, family=model.family)
    RM.check_supported(model)
    layer = model_layer(layer, model.config.n_layers)
    if not isinstance(text, str) or not text.strip():
        raise error(InputError, "errors.explain_text_nonempty")
    f = RM.forward(model, text, upto=int(layer))
    if getattr(model.config, "kind", "") == "deberta":
        return deberta_path(text, model, f, int(layer), head, token, position, dims, expand)
    d = model_row_data(text, model, layer, head, token, position, operands="weights", forward=f)
    row = row_worked(d, dims, expand)
    diffs = row.meta["trace_max_abs_diff"]
    P = PathSteps(model, f, d, dims)
    P.rows["attn"] = (row, {k: diffs[k] for k in ("scores", "weights") if k in diffs})
    return assemble(P, row, d["notes"])
