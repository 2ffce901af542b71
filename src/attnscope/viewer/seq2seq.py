"""The viewer's data for encoder–decoder models (T5, BART): encoder, decoder and cross views.

One page shows three kinds of attention of a (source, target) pair, each with its own layers:

==========  =====================  =====================  =========================================
attention   queries (left)         keys and values        mask, bias
==========  =====================  =====================  =========================================
encoder     source tokens          source tokens          none; T5 adds its bidirectional bias
self        target tokens          target tokens          causal; T5 adds its causal bias
cross       target tokens          source tokens          none (no bias in any family)
==========  =====================  =====================  =========================================

**What is stored**, per text and attention, q, k, v of every layer as traced (float32, shuffled
and deflated as in :mod:`attnscope.viewer.data`): ``q (L, H, n_q, d)``, ``k``/``v (L, H, n_k, d)``.
For T5, the relative position bias is stored as what it is made of: the bucket of every
(query, key) pair (``buckets``, uint8 ``(n_q, n_k)``, the same in every layer of a stack) and the
stack's learned table ``config.bias.<stack>.table (num_buckets, H)`` (float32 values, exact in
float64). The page computes, in float64,

    s_ij = factor · q_i·k_j + table[bucket_ij, h]       factor 1 for T5, 1/√d_head for BART
    weights = softmax over the keys the query may see

which is the model's arithmetic: every number of the step view is what ``attnscope explain
--target … --attention …`` prints (same decimals, same half-up rounding).

``data["seq2seq"]`` marks such a page; the script ``viewer_seq2seq.js`` draws it.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .. import reference as R
from ..config import is_seq2seq
from ..errors import InputError
from ..i18n import error
from ..trace.seq2seq import ATTENTIONS, BLOCKS  # the three attentions, in the order the page offers them
from .data import MAX_DECIMALS, all_text, encode, page_frame, reproduce_tol  # noqa: F401  (all_text: read here too)
from .data import page_weights as stack_weights


def view_names(config) -> list[str]:
    """What a viewer trace records: q, k, v of every attention of every layer, and head 0's
    weights, against which the page's arithmetic is checked."""
    prefixes = [BLOCKS[att][0].format("*") for att in ATTENTIONS]  # every layer of each attention
    return [f"{prefix}.{s}" for prefix in prefixes for s in ("q", "k", "v", "weights[0]")]


def bias_tables(model) -> Optional[dict]:
    """T5: ``{"kind": "t5", "num_buckets", "max_distance", "encoder": {"bidirectional": True,
    "table": (buckets × H) list}, "self": {…}}``; None for models without a score bias."""
    cfg = model.config
    if not getattr(cfg, "score_bias", False):
        return None
    out = {"kind": "t5", "num_buckets": int(cfg.relative_buckets), "max_distance": int(cfg.relative_max_distance)}
    for att, stack in (("encoder", model.encoder), ("self", model.decoder)):
        rb = stack.rel_bias
        out[att] = {"bidirectional": bool(rb.bidirectional),
                    "table": R.as_f64(rb.embedding.weight.detach().float()).tolist()}  # (buckets, H)
    return out


def buckets(bias: dict, attention: str, n_q: int, n_k: int) -> np.ndarray:
    """int64 (n_q, n_k): T5's bucket of every (query i, key j), distance δ = j − i."""
    rel = np.arange(n_k)[None, :] - np.arange(n_q)[:, None]  # (n_q, n_k)
    return R.t5_bucket(rel, bidirectional=bias[attention]["bidirectional"], num_buckets=bias["num_buckets"],
                       max_distance=bias["max_distance"])


def page_weights(q: np.ndarray, k: np.ndarray, factor: float, attention: str,
                 bias: Optional[dict] = None) -> np.ndarray:
    """The page's arithmetic in float64 (:func:`.data.page_weights` with this attention's keys and
    T5's term table[bucket(j − i), h]): q (H, n_q, d), k (H, n_k, d) as stored → weights (H, n_q, n_k)."""
    n_q, n_k = q.shape[1], k.shape[1]
    term = None
    if bias is not None and attention in bias:
        table = np.asarray(bias[attention]["table"], dtype=np.float64)  # (buckets, H)
        term = np.moveaxis(table[buckets(bias, attention, n_q, n_k)], -1, 0)  # (H, n_q, n_k)
    # bool (n_q, n_k): keys a query may see (decoder self-attention: itself and earlier)
    allowed = R.causal_mask(n_q, n_k) if BLOCKS[attention][3] else np.ones((n_q, n_k), dtype=bool)
    return stack_weights(q, k, factor, allowed, None, term)


def _stack(trace, attention: str, layers: int, step: str) -> np.ndarray:
    """(layers, H, n, d) float32 of one step of one attention, text 0's real tokens."""
    return np.stack([trace.step(i, step, text=0, attention=attention).detach().cpu().float().numpy()
                     for i in range(layers)])


def _entry(trace, model, factor: float, bias: Optional[dict], check: bool) -> dict:
    from ..pieces import word_labels

    cfg = trace.config
    src, tgt = list(trace.text_tokens(0)), list(trace.target_tokens[0])
    # what the page shows for each piece: T5's ``▁the`` and BART's ``Ġthe`` both as `` the``; the
    # pieces themselves stay in the data and in each token's tooltip
    tok = getattr(model, "tokenizer", None)
    entry = {"source": (trace.texts or [None])[0], "target": (trace.target_texts or [None])[0],
             "source_tokens": word_labels(src, tok), "target_tokens": word_labels(tgt, tok),
             "source_pieces": src, "target_pieces": tgt}
    for att in ATTENTIONS:
        n_layers = cfg.n_layers if att == "encoder" else cfg.n_decoder_layers
        q, k, v = (_stack(trace, att, n_layers, s) for s in ("q", "k", "v"))
        part = {"q": encode(q), "k": encode(k), "v": encode(v)}  # (L, H, n, d_head)
        if bias is not None and att in bias:
            b = buckets(bias, att, q.shape[2], k.shape[2])
            if b.max() > 255:
                raise error(InputError, "errors.viewer_t5_buckets", most=b.max())
            part["buckets"] = encode(b.astype(np.uint8))  # (n_q, n_k)
        if check:
            for layer in range(n_layers):
                w = page_weights(q[layer], k[layer], factor, att, bias)
                traced = trace.step(layer, "weights", 0, text=0, attention=att)  # (n_q, n_k)
                err = float(np.max(np.abs(R.as_f64(traced) - w[0])))
                if not err <= reproduce_tol(traced.dtype):
                    raise error(InputError, "errors.viewer_s2s_differs", att=att, layer=layer, err=f"{err:.3g}")
        entry[att] = part
    return entry


def trace_pair(model, source: str, target: str):
    """One (source, target) traced with :func:`view_names` (one text: explain's numbers bit for bit)."""
    return model.trace([source], [target], names=view_names(model.config))


def seq2seq_view_data(model, source: str, target: str, *, decimals: int = 4, check: bool = True) -> dict:
    """The page data of one (source, target) pair; see the module docstring."""
    return build_pairs(model, [(source, target)], decimals=decimals, check=check)


def build_pairs(model, pairs: Sequence[tuple[str, str]], *, decimals: int = 4, check: bool = True) -> dict:
    """The page data of several (source, target) pairs, each traced on its own."""
    if not is_seq2seq(model):
        raise error(InputError, "errors.viewer_not_seq2seq", name=model.name)
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= MAX_DECIMALS:
        raise error(InputError, "errors.viewer_decimals", most=MAX_DECIMALS, value=repr(decimals))
    if not pairs:
        raise error(InputError, "errors.viewer_no_pair")
    for source, target in pairs:
        if source is None or not str(source).strip():
            raise error(InputError, "errors.viewer_source_empty")
        if target is None:
            raise error(InputError, "errors.viewer_needs_target")
        check_lengths(model, str(source), str(target))
    cfg = model.config
    factor = R.operand_factor(cfg.scoring, int(cfg.d_head))
    bias = bias_tables(model)
    texts = [_entry(trace_pair(model, s, t), model, factor, bias, check) for s, t in pairs]
    config = {"n_layers": cfg.n_layers, "n_decoder_layers": cfg.n_decoder_layers, "n_heads": cfg.n_heads,
              "d_model": cfg.d_model, "d_head": cfg.d_head, "scoring": cfg.scoring, "factor": factor, "bias": bias}
    return page_frame(model.name, model.family, config, decimals, texts, seq2seq=True)


def check_lengths(model, source: str, target: str) -> None:
    """InputError naming ``source`` or ``target`` when it has more tokens than its stack reads: the
    encoder the tokenizer's limit, the decoder one fewer than its positions (its start token comes
    first, :meth:`attnscope.models.seq2seq_model.Seq2SeqModel.target_batch`). The trace's own
    sentence says "the text" and "max_length", which neither the page's two boxes nor ``attnscope view
    TEXT --target`` name."""
    tok = model.tokenizer
    if tok is None:  # the trace says in one sentence that a target text needs one
        return
    decoder = min(int(model.config.max_positions) - 1, tok.max_length)
    for what, text, limit in (("source", source, tok.max_length), ("target", target, decoder)):
        n = len(tok.backend.encode(text).ids)  # the tokens encode() counts, special ones included
        if n > limit:
            raise error(InputError, f"errors.viewer_{what}_too_long", n=n, limit=limit)
