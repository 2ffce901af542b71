"""The read API of a :class:`~attnscope.trace.Trace`: heads, weights, tokens and masks by index.

Everything that draws or explains a trace (viewer, plots, server, CLI) reads it through these
methods instead of building trace names itself::

    tr = model.trace(text, names=["layers.3.attn.q", "layers.3.attn.k", "layers.3.attn.v"])
    q, k, v = tr.qkv(3, head=5, text=0)        # (n, d_head) each: text 0, its n real tokens
    w = tr.weights(3, heads=5, queries=slice(0, 4), text=0)   # (4, n), computed from q and k
    tr.mask(3, text=0)                         # (1, n, n) bool: True = query may see key

Heads are query heads everywhere: with grouped-query attention (k and v have fewer heads),
``tr.qkv(3, head=5)`` gives query head 5 and the k/v head it shares, ``5 // (n_heads / n_kv_heads)``.
Masks include sliding windows (``mask(layer)`` of a windowed layer hides keys ``window`` or more
positions back). Indices are checked (an InputError names the valid range). With ``text=None`` results keep the
batch axis and every (padded) position; with ``text=i`` the batch axis is dropped and positions
are cut to that text's real tokens. Weights that were not recorded are computed on demand from
the recorded q and k, blockwise (only the requested rows exist at any time), with the mask the
model used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

import torch

from ..config import DecoderConfig, TransformerConfig
from ..errors import InputError
from ..i18n import error, word
from ..positions import causal_window_mask, get_position, real_positions, score_bias_np
from .names import KV_STEPS

Tensor = torch.Tensor
Index = Union[None, int, slice, Sequence[int]]

#: Per-head steps whose last two axes are (query, key) positions; the others end in (position, d).
SCORE_STEPS = ("scores", "scaled", "masked", "weights", "scores_c2c", "scores_c2p", "scores_p2c", "bias")


def check_index(what: str, i, n: int, unit: str) -> int:
    """``i`` as an int in ``range(n)``, else InputError("layer 7 is out of range: …")."""
    if isinstance(i, bool) or not hasattr(i, "__index__"):
        raise error(InputError, "errors.not_integer", what=word(what), value=repr(i))
    i = int(i.__index__())
    if not 0 <= i < n:
        raise error(InputError, "errors.index_there_one" if n == 1 else "errors.index_there", what=word(what), value=i,
                    n=n, unit=word(unit if n == 1 else unit + "s"), last=n - 1)
    return i


class TraceReader:
    """Mixin of :class:`~attnscope.trace.Trace` (needs ``self[name]``, ``name in self``, ``tokens``,
    ``config``, ``attention_mask``)."""

    tokens: list[list[str]]
    attention_mask: Tensor
    config: TransformerConfig

    if TYPE_CHECKING:  # the container's own, defined by Trace (declared here only for the checker)
        def __contains__(self, name: object) -> bool: ...
        def __getitem__(self, name: str) -> Tensor: ...

    # ------------------------------------------------------------------------------------------
    @property
    def n_layers(self) -> int:
        return int(self.config.n_layers)

    @property
    def n_heads(self) -> int:
        return int(self.config.n_heads)

    def check_layer(self, layer) -> int:
        return check_index("layer", layer, self.n_layers, "layer")

    def check_head(self, head) -> int:
        return check_index("head", head, self.n_heads, "head")

    def check_text(self, text) -> int:
        return check_index("text", text, len(self.tokens), "text")

    def text_tokens(self, text: int = 0) -> list[str]:
        """The token strings of text ``text`` (no padding)."""
        return list(self.tokens[self.check_text(text)])

    def text_labels(self, text: int = 0) -> list[str]:
        """The tokens of text ``text`` as a person reads them (``trace.labels``; :mod:`attnscope.pieces`)."""
        labels = getattr(self, "labels", None) or self.tokens
        return list(labels[self.check_text(text)])

    def length(self, text: int = 0) -> int:
        """Real tokens of text ``text``."""
        return len(self.tokens[self.check_text(text)])

    # ------------------------------------------------------------------------------------------
    # The attention blocks: one a layer here (``attention`` None); an encoder–decoder trace names
    # which of its stacks' blocks (Seq2SeqTrace: "encoder", "self", "cross") and overrides these three.
    def prefix(self, layer: int, attention: Optional[str] = None) -> str:
        """The name of one attention block: ``layers.{layer}.attn``."""
        if attention is not None:
            raise error(InputError, "errors.trace_attention_one", value=repr(attention))
        return f"layers.{self.check_layer(layer)}.attn"

    def _lengths(self, attention: Optional[str]) -> tuple[list[int], list[int]]:
        """(query lengths, key lengths) of each text in a block of ``attention``."""
        n = [len(t) for t in self.tokens]
        return n, n

    def _sides(self, layer: int, attention: Optional[str]) -> tuple[Tensor, Tensor, bool, Optional[int]]:
        """(query mask (B, L), key mask (B, S), causal, window) of a block: True = real token."""
        am = self.attention_mask.bool()
        return am, am, bool(self.config.causal), self.window(layer)

    def step(self, layer: int, step: str, head: Optional[int] = None, *, text: Optional[int] = None,
             attention: Optional[str] = None) -> Tensor:
        """``layers.{layer}.attn.{step}``: (B, H, L, …), or one head's (B, L, …); ``text`` as above.

        Found under the full name or, for one head, under ``…{step}[h]`` when only that head was
        traced. InputError naming what to trace when neither is recorded.
        """
        name = f"{self.prefix(layer, attention)}.{step}"
        if head is not None:
            head = self.check_head(head)
        if name in self:
            t = self[name]
            t = t if head is None else t[:, head // self._group(step)]
        elif head is not None and f"{name}[{head}]" in self:
            t = self[f"{name}[{head}]"]
        else:
            raise error(InputError, "errors.trace_no_step_head", name=name, head=head, quoted=repr(name)) \
                if head is not None else error(InputError, "errors.trace_no_step", name=name, quoted=repr(name))
        return t if text is None else self._cut(t, text, step, attention)

    def _group(self, step: str) -> int:
        """Query heads per head of ``step``'s tensor: n_heads / n_kv_heads for k and v, else 1."""
        return int(getattr(self.config, "kv_group", 1)) if step in KV_STEPS else 1

    def qkv(self, layer: int, head: Optional[int] = None, *, text: Optional[int] = None,
            attention: Optional[str] = None) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v of ``layer``: q (B, H, L, d_head), k and v (B, H_kv, L, d_head); for one (query)
        head h, each (B, L, d_head) — k and v of the k/v head that h reads."""
        q, k, v = (self.step(layer, s, head, text=text, attention=attention) for s in ("q", "k", "v"))
        return q, k, v

    def key_mask(self, text: Optional[int] = None) -> Tensor:
        """Bool (B, S), True at real tokens (keys that may be attended); (n,) for one text."""
        am = self.attention_mask.bool()
        if text is None:
            return am
        text = self.check_text(text)
        return am[text, : self.length(text)]

    def window(self, layer: int) -> Optional[int]:
        """The sliding window of ``layer`` (keys fewer than this many positions back), or None."""
        fn = getattr(self.config, "window", None)
        return fn(self.check_layer(layer)) if callable(fn) else None

    def _window_mask(self, layer: int) -> Callable[..., Tensor]:
        """The torch mask ``(q_pos, k_pos, window)`` of ``layer``'s mask scheme (its layer type's)."""
        kind = getattr(self.config, "layer_type", None)
        return (get_position(kind(layer)).mask if callable(kind) else None) or causal_window_mask

    def mask(self, layer: int, *, text: Optional[int] = None, attention: Optional[str] = None) -> Tensor:
        """The boolean mask ``layer`` used, True = the query may see the key: (B, 1, L, S) —
        padded keys, in causal models later keys, and on sliding-window layers keys ``window`` or
        more positions back are False; in the decoders' stacks a padded query sees its own key
        too, as the model lets it. (1, n, n) for one text."""
        self.prefix(layer, attention)
        queries, keys, causal, window = self._sides(layer, attention)  # (B, L), (B, S)
        Lq, S = queries.shape[-1], keys.shape[-1]
        allowed = keys[:, None, None, :].expand(-1, 1, Lq, S)  # (B, 1, L, S)
        if causal:
            pos = torch.arange(S, device=keys.device)
            allowed = allowed & self._window_mask(layer)(pos[:Lq], pos, window)
            if self._sees_itself(attention):  # a padded query sees its own key (no row is empty)
                allowed = allowed | (pos[:Lq, None] == pos[None, :])
        if text is None:
            return allowed
        text = self.check_text(text)
        nq, nk = (x[text] for x in self._lengths(attention))
        return allowed[text, :, :nq, :nk]

    def _sees_itself(self, attention: Optional[str]) -> bool:
        """Does a padded query of this causal block see its own key besides the real ones? The
        decoders' stacks let it (:meth:`attnscope.modules.decoder.TransformerDecoder.mask_for`);
        GPT-2's masks padded keys only."""
        return isinstance(self.config, DecoderConfig)

    def position_bias(self, layer: int, *, text: int = 0):
        """The float64 term ``(H, n, n)`` that the model's position scheme adds to the scaled scores
        of text ``text`` in ``layer`` (ALiBi: slope_h · key position, positions 0 … n − 1), or None
        for a scheme without a fixed term (:func:`attnscope.positions.score_bias_np`)."""
        self.check_layer(layer)
        return score_bias_np(self.config, self.length(self.check_text(text)))

    def weights(self, layer: int, heads: Index = None, queries: Index = None, *, text: Optional[int] = None,
                attention: Optional[str] = None, block_size: Union[None, int, tuple[int, int]] = None) -> Tensor:
        """Attention weights of ``layer``: (B, h, l, S), dims of int selections dropped.

        ``heads`` and ``queries``: None (all), an int, a slice or a list. The recorded
        ``layers.{layer}.attn.weights`` (or ``…weights[h]``) is sliced when present; otherwise the
        requested rows are computed from the recorded q and k, blockwise, with the padding mask and
        causality the model used — a long text's weights never need to fit in memory at once.
        Keys at padding get 0. With ``text``, the batch axis is dropped and positions are cut to
        the text's tokens (queries then index those tokens).
        """
        name = f"{self.prefix(layer, attention)}.weights"
        heads = self._check_selection("head", heads, self.n_heads)
        if name in self or (isinstance(heads, int) and f"{name}[{heads}]" in self):
            w = self.step(layer, "weights", heads if isinstance(heads, int) else None, attention=attention)
            if not isinstance(heads, int) and heads is not None:
                w = w[:, heads]
            return self._rows(w, queries, text, attention)
        return self._weights_from_qk(layer, heads, queries, text, block_size, attention)

    # ------------------------------------------------------------------------------------------
    def _check_selection(self, what: str, sel: Index, n: int) -> Index:
        if sel is None or isinstance(sel, slice):
            return sel
        if isinstance(sel, int) and not isinstance(sel, bool):
            return check_index(what, sel, n, what)
        try:
            return [check_index(what, i, n, what) for i in sel]  # type: ignore[union-attr]
        except TypeError:
            raise error(InputError, "errors.trace_selection", what=what, value=repr(sel)) from None

    def _cut(self, t: Tensor, text: int, step: str, attention: Optional[str] = None) -> Tensor:
        """Text ``text`` of a per-head tensor ``t`` (batch first), its position axes cut to its
        tokens: the position axis (-2) of every step (the keys' for k and v), and the key axis
        (-1) of the score steps."""
        text = self.check_text(text)
        nq, nk = (x[text] for x in self._lengths(attention))
        t = t[text][..., :(nk if step in KV_STEPS else nq), :]  # (…, n, d | S)
        return t[..., :nk] if step in SCORE_STEPS else t

    def _rows(self, w: Tensor, queries: Index, text: Optional[int], attention: Optional[str] = None) -> Tensor:
        if text is not None:
            text = self.check_text(text)
            nq, nk = (x[text] for x in self._lengths(attention))
            w = w[text][..., :nq, :nk]
        if queries is None:
            return w
        queries = self._check_selection("query", queries, w.shape[-2])
        return w[..., queries, :]

    def _score_bias(self, layer: int, head: Optional[int], attention: Optional[str] = None) -> Optional[Tensor]:
        """The recorded additive score term of ``layer`` (T5's relative position bias, DeBERTa's
        relative terms), (B, H|1, L, S), for families that have one; None for the others (and
        for cross-attention)."""
        if not getattr(self.config, "score_bias", False) or attention == "cross":
            return None
        name = f"{self.prefix(layer, attention)}.bias"
        if name not in self and not (head is not None and f"{name}[{head}]" in self):
            fixed = get_position(self.config.position).bias  # ALiBi: from the positions, as the model adds it
            if fixed is not None:
                k_pos = real_positions(self.key_mask())  # (B, S)
                b = fixed(self.config.n_heads, k_pos, k_pos, torch.float32, k_pos.device)  # (B, H, L, S)
                return b if head is None else b[:, head:head + 1]
            raise error(InputError, "errors.trace_score_term", family=getattr(self, 'family', 'model'), name=name,
                        quoted=repr(name))
        b = self.step(layer, "bias", head, attention=attention)
        return b.unsqueeze(1) if head is not None else b

    def _weights_from_qk(self, layer: int, heads: Index, queries: Index, text: Optional[int],
                         block_size, attention: Optional[str] = None) -> Tensor:
        from ..blockwise import attention_weights

        head = heads if isinstance(heads, int) else None  # one head: its int
        one = head is not None
        q = self.step(layer, "q", head, attention=attention)
        k = self.step(layer, "k", head, attention=attention)
        if one:
            q, k = q.unsqueeze(1), k.unsqueeze(1)  # (B, 1, L, d)
        scoring = self.config.scoring
        scale = getattr(self.config, "query_scale", None)  # Gemma 3's query_pre_attn_scalar^-½
        _, keys, causal, window = self._sides(layer, attention)  # keys (B, S): True = real
        if scoring == "cosine":
            raise error(InputError, "errors.trace_cosine", prefix=self.prefix(layer, attention))
        if scoring == "qknorm":
            scoring = "scaled"  # the recorded q, k are after the LayerNorm; what remains is ÷√d_head
        bias = self._score_bias(layer, head, attention)  # (B, h, L, S) or None
        if text is not None:
            t = self.check_text(text)
            nq, nk = (x[t] for x in self._lengths(attention))
            q, k = q[t:t + 1, :, :nq], k[t:t + 1, :, :nk]  # (1, h, n, d)
            mask = None if bias is None else bias[t:t + 1, :, :nq, :nk]
        else:
            am = keys.to(q.device)  # (B, S)
            if causal and not bool(am.all()) and self._sees_itself(attention):
                # the mask the model used, a padded query seeing itself besides the real keys (with causality and window)
                mask, causal, window = self.mask(layer, attention=attention).to(q.device), False, None  # (B, 1, L, S)
            else:
                mask = None if bool(am.all()) else am[:, None, None, :]  # (B, 1, 1, S)
            if bias is not None:
                mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))  # (B, h, L, S)
        L = q.shape[-2]
        if window is not None and causal:  # the window as a mask; causality comes with it
            pos = torch.arange(L, device=q.device)
            win = self._window_mask(layer)(pos, pos, window)[None, None]  # (1, 1, L, L)
            mask, causal = (win if mask is None else win & mask), False
        queries = self._check_selection("query", queries, L)
        w = attention_weights(q, k, mask, heads=0 if one else heads, queries=queries, causal=causal,
                              scoring=scoring, scale=scale, block_size=block_size)
        return w[0] if text is not None else w
