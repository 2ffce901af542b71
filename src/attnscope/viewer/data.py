"""The data an attnscope viewer page carries, and its compact encoding.

**What is stored.** For each text: its tokens, and q, k, v of every layer as float32, exactly as
traced: q of every query head, k and v of every key/value head (grouped-query models store fewer;
query head h reads k/v head ``h // kv_group``). The page recomputes attention from them in
JavaScript in float64: ``weights = softmax(factor · q·kᵀ)`` with the layer's mask (causal models
hide later keys, sliding-window layers keys ``window`` or more positions back). For rotary models
(Llama, Qwen2, Mistral, Gemma 3) q and k are stored *before* the rotation (after QK-norm, where the
model has it) with the layer's frequencies, and the page turns them itself in float64, pair
(i, i + d/2) by position · θ_i, exactly as ``attnscope explain`` does; the factor is the model's
(Gemma's query_pre_attn_scalar^−½). Products of two float32
numbers are exact in float64, so the page's scores agree with a float64 computation in Python to
~1e-15 relative: every number the step view shows is the one ``attnscope explain`` prints at the
same decimals (rounding half-up on the shortest decimal form; only a value within ~1e-15 of a
rounding boundary could differ). Storing q, k, v (3·d_model floats per token and layer) instead
of the weights (n_heads·n floats per token and layer) is also the smaller choice once a text has
more than 3·d_head tokens, e.g. at 512 tokens it is 5× smaller for all-MiniLM-L6-v2.

Thumbnails for the model view are stored too: each head's weights averaged into at most 64×64
cells, scaled to the head's largest cell and quantised to uint8 (colour only, no numbers are read
from them; error ≤ 1/510 of that maximum).

**Encoding.** Arrays are little-endian; float32 bytes are shuffled (all first bytes, then all
second bytes, …) and deflated (zlib), then base64. The browser inflates with the standard
``DecompressionStream`` (Chromium 80+, Firefox 113+, Safari 16.4+), no library.
"""

from __future__ import annotations

import base64
import zlib
from typing import Callable, Collection, Optional, Sequence, Union

import numpy as np

from .. import reference as R
from ..errors import AttnscopeError, InputError
from ..i18n import error
from ..positions import causal_window_mask, get_position, layer_inv_freq, rotates
from .context import context_comparison, require_names

FORMAT = "attnscope.view"
VERSION = 2
#: Thumbnails have at most this many cells a side.
THUMB = 64
#: The page offers 0..MAX_DECIMALS decimals (float64 shows ~15 significant digits; the numbers of
#: interest are below 1, so 8 decimals already show what float32 inputs can say).
MAX_DECIMALS = 8
#: Largest |weights from q, k − traced weights| accepted (float32 round-off is ~1e-7).
REPRODUCE_TOL = 1e-4


def reproduce_tol(dtype) -> float:
    """The largest |weights from q, k − traced weights| accepted for weights traced in ``dtype``:
    :data:`REPRODUCE_TOL`, or 8 units of a half-precision type's round-off (a bfloat16 model's own
    weights are 8-bit numbers: 0.014 from the float64 recomputation is SmolLM2's, float16's 0.002)."""
    import torch

    return max(REPRODUCE_TOL, 8 * torch.finfo(dtype).eps)


def encode(a: np.ndarray) -> dict:
    """``{"dtype", "shape", "codec", "b64"}`` for float32 or uint8 arrays (see the module doc)."""
    a = np.ascontiguousarray(a)
    if a.dtype == np.float32:
        raw = a.astype("<f4").view(np.uint8).reshape(-1, 4).T.tobytes()  # byte planes
        codec = "shuffle4+zlib"
    elif a.dtype == np.uint8:
        raw = a.tobytes()
        codec = "zlib"
    else:
        raise TypeError(f"encode: float32 or uint8 only, got {a.dtype}")
    return {"dtype": str(a.dtype), "shape": list(a.shape), "codec": codec,
            "b64": base64.b64encode(zlib.compress(raw, 6)).decode("ascii")}


def decode(d: dict) -> np.ndarray:
    """Inverse of :func:`encode` (for tests and tools)."""
    raw = zlib.decompress(base64.b64decode(d["b64"]))
    if d["codec"] == "shuffle4+zlib":
        raw = np.frombuffer(raw, np.uint8).reshape(4, -1).T.tobytes()
        return np.frombuffer(raw, "<f4").reshape(d["shape"]).astype(np.float32)
    return np.frombuffer(raw, np.uint8).reshape(d["shape"]).copy()


def add_per_text(data: dict, key: str, texts: Sequence[Optional[str]], view: Callable[[str, int], dict]) -> dict:
    """Put ``view(text, n)`` (``n``: the entry's token count) under ``key`` of each text entry of page
    ``data``, one per text of ``texts`` in order. A text None (its ids are not what the text tokenizes
    to: a generation's, sometimes) gets ``{"left_out": "tokens", "n"}``, one the view refuses
    ``{"left_out": "error", "n", "why"}``: the page's other views stand, and this one says why it is empty."""
    for entry, text in zip(data["texts"], texts):
        n = len(entry["tokens"])
        if text is None:
            entry[key] = {"left_out": "tokens", "n": n}
            continue
        try:
            entry[key] = view(text, n)
        except AttnscopeError as e:
            entry[key] = {"left_out": "error", "n": n, "why": str(e)}
    return data


def thumbnails(w: np.ndarray, size: int = THUMB) -> np.ndarray:
    """(H, n, n) weights → (H, T, T) uint8, T = min(n, size): cell means scaled to each head's max."""
    H, n, _ = w.shape
    T = min(n, size)
    edges = np.linspace(0, n, T + 1).round().astype(int)[:-1]
    counts = np.diff(np.append(edges, n)).astype(np.float64)  # (T,)
    pooled = np.add.reduceat(np.add.reduceat(w, edges, axis=1), edges, axis=2)  # (H, T, T)
    pooled /= counts[None, :, None] * counts[None, None, :]
    top = pooled.reshape(H, -1).max(-1)[:, None, None]
    return np.rint(255.0 * pooled / np.where(top > 0, top, 1.0)).astype(np.uint8)


def _check_weights(trace, layer: int, index: int, w: np.ndarray) -> None:
    """Compare ``w`` (H, n, n) with whatever weights of ``layer`` the trace recorded (all heads,
    or single heads recorded as ``weights[h]``); InputError when they differ."""
    name = f"layers.{layer}.attn.weights"
    pairs = []
    if name in trace:
        pairs.append((trace.step(layer, "weights", text=index), w))
    for h in range(w.shape[0]):
        if f"{name}[{h}]" in trace:
            pairs.append((trace.step(layer, "weights", h, text=index), w[h]))
    for traced, ours in pairs:
        err = float(np.max(np.abs(traced.detach().cpu().double().numpy() - ours)))
        if not err <= reproduce_tol(traced.dtype):
            raise error(InputError, "errors.viewer_not_dot_product", layer=layer, err=f"{err:.3g}")


def operand_steps(config) -> tuple[str, str]:
    """The trace steps the page stores as q and k: ``q``/``k`` (the dot product's operands), or
    for rotary models the operands before the rotation (``q_normed``/``k_normed`` with QK-norm,
    else ``q_proj``/``k_proj``), which the page turns itself."""
    if not rotates(config):
        return "q", "k"
    return ("q_normed", "k_normed") if getattr(config, "qk_norm", False) else ("q_proj", "k_proj")


def rope_tables(config, n: int) -> Optional[list]:
    """Per layer, what the page needs to turn q and k: ``{"base", "inv_freq" (d/2 float64),
    "scaling", "pairing": "half"}``; None for models without rotary positions."""
    if not rotates(config):
        return None
    out = []
    for layer in range(config.n_layers):
        inv, base, scaling = layer_inv_freq(config, layer, n)
        out.append({"base": base, "inv_freq": [float(x) for x in inv], "scaling": scaling, "pairing": "half"})
    return out


def page_weights(q: np.ndarray, k: np.ndarray, factor: float, mask: np.ndarray, rope: Optional[dict],
                 bias: Optional[np.ndarray] = None) -> np.ndarray:
    """The page's arithmetic in float64: q (H, n, d), k (H_kv, n, d) as stored, turned at positions
    0 … n − 1 when ``rope`` is given, k/v head h // group for query head h, ``bias (H, n, n)`` (a
    position scheme's score term, ALiBi's) added to the scaled scores → weights (H, n, n)."""
    q, k = R.as_f64(q), R.as_f64(k)
    if rope is not None:
        pos = np.arange(q.shape[1])
        q, k = (R.rotate(x, pos, rope["inv_freq"], rope["pairing"]) for x in (q, k))
    k = np.repeat(k, q.shape[0] // k.shape[0], axis=0)  # (H, n, d)
    if bias is not None:
        mask = np.where(mask, bias, -np.inf)  # (H, n, n), added
    return R.attention_weights(q, k, factor, mask=mask)


def bias_rows(trace, n: int) -> Optional[dict]:
    """What the page adds to the scaled scores, for texts of up to ``n`` tokens: ``{"scheme",
    "rows" (H × n float64: head h adds rows[h][j] at key j, whatever the query)}`` for a position
    scheme whose term depends on the key only (ALiBi: slope_h · j), else None. InputError for a
    term that depends on the query too (the page cannot carry it yet)."""
    from ..positions import score_bias_np

    b = score_bias_np(trace.config, n)  # (H, n, n) or None
    if b is None:
        return None
    if not np.array_equal(b, np.broadcast_to(b[:, -1:, :], b.shape)):
        raise error(InputError, "errors.viewer_position_query", scheme=repr(trace.config.position))
    return {"scheme": trace.config.position, "rows": b[:, -1, :].tolist()}


def _text_entry(trace, index: int, check: bool, rope: Optional[list] = None) -> dict:
    toks = trace.text_labels(index)  # as a person reads them (attnscope.pieces)
    qs, ks = operand_steps(trace.config)
    require_names(trace, [f"layers.{i}.attn.{s}" for i in range(trace.n_layers) for s in (qs, ks, "v")])
    factor = R.trace_factor(trace)
    arrays: dict = {"q": [], "k": [], "v": []}
    thumbs = []
    for layer in range(trace.n_layers):
        q, k, v = (trace.step(layer, s, text=index).detach().cpu().float().numpy() for s in (qs, ks, "v"))
        for name, x in (("q", q), ("k", k), ("v", v)):
            arrays[name].append(x)  # (H | H_kv, n, d_head)
        w = page_weights(q, k, factor, trace.mask(layer, text=index).cpu().numpy(), rope[layer] if rope else None,
                         R.position_bias(trace, layer, index))
        if check:
            _check_weights(trace, layer, index, w)
        thumbs.append(thumbnails(w))
    text = (getattr(trace, "texts", None) or [None] * (index + 1))
    entry = {"text": text[index] if index < len(text) else None, "tokens": toks,
             "thumbs": encode(np.stack(thumbs))}  # (L, H, T, T)
    for name, xs in arrays.items():
        entry[name] = encode(np.stack(xs).astype(np.float32))  # (L, H | H_kv, n, d_head)
    return entry


def build(trace, *, texts: Union[None, int, Sequence[int]] = None, compare=None, token: Optional[str] = None,
          decimals: int = 4, check: bool = True, normal: Optional[Callable[[str], str]] = None,
          special: Collection[str] = ()) -> dict:
    """The page data for ``trace``.

    Args:
        trace: a Trace holding q, k, v of every layer (and embed.out/layers.*.out for a
            comparison), or a list of Traces (their first texts; see below).
        texts: which texts of a single trace to include, a list of indices or one (default: all).
        compare: True compares the first two texts in the "context awareness" view of ``token``
            (default: the first token they share); a Trace compares the first text with its first.
        decimals: decimals the page starts with (explain's default is 4).
        check: verify that q and k reproduce the traced weights (when any were recorded).
        normal: the tokenizer's normaliser, so that ``token`` is found as it is typed (``，`` for ``,``).
        special: the tokenizer's special tokens, which the default ``token`` never is.

    For numbers bit for bit equal to ``attnscope explain``, trace each text on its own (a list of
    Traces, as ``attnscope view`` does): a padded batch computes the same model with different
    float32 rounding (~1e-6 relative).
    """
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= MAX_DECIMALS:
        raise error(InputError, "errors.viewer_decimals", most=MAX_DECIMALS, value=repr(decimals))
    if isinstance(trace, (list, tuple)):
        if not trace:
            raise error(InputError, "errors.viewer_no_trace")
        if texts is not None:
            raise error(InputError, "errors.viewer_texts_with_list")
        pairs = [(t, 0) for t in trace]
    else:
        chosen = [texts] if isinstance(texts, int) or hasattr(texts, "__index__") else texts  # one index, or some
        idx = list(range(len(trace.tokens))) if chosen is None else [trace.check_text(i) for i in chosen]
        if not idx:
            raise error(InputError, "errors.viewer_no_texts", n=len(trace.tokens))
        pairs = [(trace, i) for i in idx]
    data = page_header(pairs, decimals)
    rope = data["config"]["rope"]
    data["texts"] = [_text_entry(t, i, check, rope) for t, i in pairs]
    if compare is True:
        if len(pairs) < 2:
            raise error(InputError, "errors.viewer_compare_two")
        (ta, ia), (tb, ib) = pairs[0], pairs[1]
        data["compare"] = context_comparison(ta, tb if tb is not ta else None, token=token, index_a=ia, index_b=ib,
                                             normal=normal, special=special)
    elif compare is not None:
        data["compare"] = context_comparison(pairs[0][0], compare, token=token, index_a=pairs[0][1],
                                             normal=normal, special=special)
    return data


def page_header(pairs: list, decimals: int) -> dict:
    """Everything of the page data but its texts, for the texts ``pairs`` [(trace, text index)]:
    format, model, the config the page computes with (factor, mask, rotary frequencies of the
    longest text), decimals. InputError when the traces come from different models, or when
    dynamic RoPE scaling would need a table per text length."""
    first = pairs[0][0]
    factor = R.trace_factor(first)
    cfg = first.config
    n_max = max(t.length(i) for t, i in pairs)
    rope = rope_tables(cfg, n_max)
    if rope is not None and cfg.rope_scaling and cfg.rope_scaling.get("rope_type") == "dynamic" and \
            len({t.length(i) for t, i in pairs}) > 1:
        raise error(InputError, "errors.viewer_dynamic_rope")
    for t, _ in pairs[1:]:
        if t.config != cfg or _model_name(t) != _model_name(first):
            raise error(InputError, "errors.viewer_same_model")
    config = {"n_layers": cfg.n_layers, "n_heads": cfg.n_heads, "d_model": cfg.d_model,
              "d_head": cfg.d_head, "scoring": cfg.scoring, "factor": factor,
              "causal": bool(cfg.causal), "n_kv_heads": int(getattr(cfg, "kv_heads", cfg.n_heads)),
              "query_scale": getattr(cfg, "query_scale", None),
              "windows": [first.window(i) for i in range(cfg.n_layers)], "masks": layer_masks(cfg, n_max),
              "rope": rope, "qk_norm": bool(getattr(cfg, "qk_norm", False)),
              "bias": bias_rows(first, n_max),
              "operands": list(operand_steps(cfg))}
    return page_frame(_model_name(first), getattr(first, "family", None), config, decimals, [])


def page_frame(model: str, family: Optional[str], config: dict, decimals: int, texts: list, **marks) -> dict:
    """The page data of every model kind around its ``texts``: format and version, then ``marks``
    (an encoder–decoder page's ``seq2seq=True``), the model, the ``config`` the page computes with,
    the decimals it starts with; no comparison yet."""
    return {"format": FORMAT, "version": VERSION, **marks, "model": model, "family": family, "config": config,
            "exp_show_limit": R.EXP_SHOW_LIMIT, "decimals": decimals, "max_decimals": MAX_DECIMALS,
            "texts": texts, "compare": None}


def layer_masks(config, n: int) -> Optional[list[str]]:
    """The mask scheme of each layer, its layer type (``full``, ``sliding``, …: what
    ``config.layer_types`` names; None for a model without layer types), for texts of up to ``n``
    tokens. The page hides keys by the causal window ``windows[layer]``; InputError for a layer
    whose scheme's float64 mask on ``n`` tokens is not that window (the page would draw it wrong)."""
    kind = getattr(config, "layer_type", None)
    if not callable(kind):
        return None
    names = [kind(i) for i in range(config.n_layers)]
    for i, name in enumerate(names):
        if not _draws_window(get_position(name), config.window(i), n):
            raise error(InputError, "errors.viewer_mask_scheme", layer=i, name=repr(name))
    return names


def _draws_window(scheme, window: Optional[int], n: int, rows: int = 256) -> bool:
    """Whether ``scheme.mask_np`` on ``n`` tokens is the causal window the page draws (key ≤ query,
    fewer than ``window`` back), ``rows`` queries at a time: never an (n, n) array of a long text.
    The built-in schemes are that window (their mask is :func:`causal_window_mask`)."""
    if scheme.mask is causal_window_mask:
        return True
    pos = np.arange(n)
    for q0 in range(0, n, rows):
        d = pos[q0:q0 + rows, None] - pos[None, :]  # (rows, n): query − key
        page = (d >= 0) & (d < window) if window is not None else d >= 0
        if not np.array_equal(scheme.mask_np(pos[q0:q0 + rows], pos, window), page):
            return False
    return True


def _model_name(trace) -> str:
    return str(getattr(trace, "model_name", "") or "model")


def all_text(data: dict) -> str:
    """Every string the page shows from the data (for the font subset)."""
    parts = [data.get("model") or ""]
    for t in data["texts"]:  # an encoder–decoder page's texts are pairs (attnscope.viewer.seq2seq)
        for key in ("tokens", "source_tokens", "target_tokens", "source_pieces", "target_pieces"):
            parts += t.get(key, [])
        parts += [t.get(key) or "" for key in ("text", "source", "target")]
    if data.get("compare"):
        parts += data["compare"]["tokens_a"] + data["compare"]["tokens_b"]
    for t in data["texts"]:  # the lens view's predicted tokens (attnscope.viewer.lens_view)
        parts += (t.get("lens") or {}).get("words", {}).values()
    return "".join(parts)
