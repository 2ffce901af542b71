"""Traces of encoder–decoder models (T5, BART): :func:`run_seq2seq_trace` and :class:`Seq2SeqTrace`.

Names (:data:`~attnscope.trace.names.SEQ2SEQ_NAMES`): every encoder name under ``encoder.``
(``encoder.layers.{i}.attn.weights`` (B, H, S, S)), the decoder's causal self-attention under
``decoder.layers.{i}.self_attn.*`` (B, H, T, T) and its cross-attention under
``decoder.layers.{i}.cross_attn.*`` (q (B, H, T, d), k and v (B, H, S, d), weights (B, H, T, S):
target rows, source columns). T5 records its relative position bias as ``…attn.bias`` /
``…self_attn.bias`` (B, H, L, L), the same tensor in every layer of a stack.

``trace.tokens`` / ``trace.lengths`` are the source's, ``trace.target_tokens`` /
``trace.target_lengths`` the decoder's (start token first). The read methods take ``attention=``
"encoder" (default), "self" or "cross"::

    tr.weights(0, heads=2, attention="cross", text=0)     # (T, S) of text 0's real tokens
    tr.mask(1, attention="self")                          # (B, 1, T, T) causal ∧ real target keys
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

import torch

from ..errors import InputError
from .names import resolve
from .read import Index, check_index
from .record import Trace
from .run import hook_targets, record_pass

if TYPE_CHECKING:
    from ..modules.seq2seq import Seq2SeqConfig

Tensor = torch.Tensor

ATTENTIONS = ("encoder", "self", "cross")


class Seq2SeqTrace(Trace):
    """A :class:`Trace` with the target side too (see the module docstring)."""

    config: Seq2SeqConfig

    def __init__(self, tensors, *, target_tokens: Optional[list] = None, decoder_input_ids: Optional[Tensor] = None,
                 decoder_attention_mask: Optional[Tensor] = None, target_texts: Optional[list] = None, **kw) -> None:
        super().__init__(tensors, **kw)
        self.target_tokens = target_tokens or []
        self.decoder_input_ids = decoder_input_ids
        self.decoder_attention_mask = decoder_attention_mask
        self.target_texts = target_texts or []

    @property
    def target_lengths(self) -> list[int]:
        return [len(t) for t in self.target_tokens]

    # ------------------------------------------------------------------------------------------
    def _which(self, attention: str) -> str:
        if attention not in ATTENTIONS:
            raise InputError(f"attention must be one of {', '.join(ATTENTIONS)}, got {attention!r}")
        return attention

    def prefix(self, layer: int, attention: str = "encoder") -> str:
        """The name of one attention block: ``encoder.layers.{l}.attn``, ``decoder.layers.{l}.self_attn``
        or ``decoder.layers.{l}.cross_attn``."""
        attention = self._which(attention)
        n = self.config.n_layers if attention == "encoder" else self.config.n_decoder_layers
        layer = check_index("layer", layer, n, "layer")
        return {"encoder": f"encoder.layers.{layer}.attn", "self": f"decoder.layers.{layer}.self_attn",
                "cross": f"decoder.layers.{layer}.cross_attn"}[attention]

    def _lengths(self, attention: str) -> tuple[list[int], list[int]]:
        """(query lengths, key lengths) per text."""
        src, tgt = self.lengths, self.target_lengths
        return {"encoder": (src, src), "self": (tgt, tgt), "cross": (tgt, src)}[attention]

    def step(self, layer: int, step: str, head: Optional[int] = None, *, text: Optional[int] = None,
             attention: str = "encoder") -> Tensor:
        """``{prefix}.{step}``: (B, H, L, …) or one head's (B, L, …); ``text`` cuts to its real tokens."""
        name = f"{self.prefix(layer, attention)}.{step}"
        if head is not None:
            head = self.check_head(head)
        if name in self:
            t = self[name] if head is None else self[name][:, head]
        elif head is not None and f"{name}[{head}]" in self:
            t = self[f"{name}[{head}]"]
        else:
            raise InputError(f"the trace has no {name}; trace with names=None (everything) or names=[{name!r}]")
        if text is None:
            return t
        text = self.check_text(text)
        nq, nk = (x[text] for x in self._lengths(attention))
        if attention == "cross" and step in ("k", "v"):  # cross-attention keys and values are the source's
            return t[text][..., :nk, :]
        t = t[text][..., :nq, :]
        return t[..., :nk] if step in ("scores", "scaled", "masked", "weights", "bias") else t

    def qkv(self, layer: int, head: Optional[int] = None, *, text: Optional[int] = None,
            attention: str = "encoder") -> tuple[Tensor, Tensor, Tensor]:
        q, k, v = (self.step(layer, s, head, text=text, attention=attention) for s in ("q", "k", "v"))
        return q, k, v

    def mask(self, layer: int, *, text: Optional[int] = None, attention: str = "encoder") -> Tensor:
        """Bool (B, 1, L, S), True = the query may see the key: real source keys (encoder, cross),
        real earlier target keys (self). (1, n_q, n_k) for one text."""
        self.prefix(layer, attention)
        src = self.attention_mask.bool()  # (B, S)
        assert self.decoder_attention_mask is not None  # every traced or loaded Seq2SeqTrace has it
        tgt = self.decoder_attention_mask.bool()  # (B, T)
        keys = tgt if attention == "self" else src
        Lq = (src if attention == "encoder" else tgt).shape[-1]
        allowed = keys[:, None, None, :].expand(-1, 1, Lq, -1)  # (B, 1, L, S)
        if attention == "self":
            allowed = allowed & torch.ones(Lq, Lq, dtype=torch.bool).tril()
        if text is None:
            return allowed
        text = self.check_text(text)
        nq, nk = (x[text] for x in self._lengths(attention))
        return allowed[text, :, :nq, :nk]

    def weights(self, layer: int, heads: Index = None, queries: Index = None, *, text: Optional[int] = None,
                attention: str = "encoder", block_size=None) -> Tensor:
        """Attention weights of one block, (B, h, l, S) (int selections drop their axis): the recorded
        ``…weights`` sliced, or computed from the recorded q, k (and T5's ``bias``) with the mask."""
        from ..blockwise import attention_weights

        name = f"{self.prefix(layer, attention)}.weights"
        heads = self._check_selection("head", heads, self.n_heads)
        head = heads if isinstance(heads, int) else None  # one head: its int
        one = head is not None
        if name in self or (one and f"{name}[{heads}]" in self):
            w = self.step(layer, "weights", head, attention=attention)
            if not one and heads is not None:
                w = w[:, heads]
        else:
            q = self.step(layer, "q", head, attention=attention)
            k = self.step(layer, "k", head, attention=attention)
            if one:
                q, k = q.unsqueeze(1), k.unsqueeze(1)
            elif heads is not None:
                q, k = q[:, heads], k[:, heads]
            m = self.mask(layer, attention=attention)  # (B, 1, L, S)
            mask: Union[Tensor, None] = m
            if attention != "cross" and getattr(self.config, "score_bias", False):
                bias = self.step(layer, "bias", head, attention=attention)
                bias = bias.unsqueeze(1) if one else (bias[:, heads] if heads is not None else bias)
                mask = bias.masked_fill(~m, float("-inf"))
            w = attention_weights(q, k, mask, scoring=self.config.scoring, block_size=block_size)
            if one:
                w = w[:, 0]
        if text is not None:
            text = self.check_text(text)
            nq, nk = (x[text] for x in self._lengths(attention))
            w = w[text][..., :nq, :nk]
        if queries is None:
            return w
        queries = self._check_selection("query", queries, w.shape[-2])
        return w[..., queries, :]

    def __repr__(self) -> str:
        assert self.decoder_input_ids is not None  # every traced or loaded Seq2SeqTrace has it
        return (f"Seq2SeqTrace(model={self.model_name!r}, texts={len(self.tokens)}, source length="
                f"{self.input_ids.shape[-1]}, target length={self.decoder_input_ids.shape[-1]}, "
                f"names={len(self)}, {self.nbytes / 2**20:.1f} MiB)")

    def _repr_html_(self) -> str:
        """A summary; the viewer of a (source, target) pair is made from the model (it reads T5's bias table)."""
        import html
        return (f"<pre>{html.escape(repr(self))}\nsource: {html.escape(' '.join(self.tokens[0]))}\n"
                f"target: {html.escape(' '.join(self.target_tokens[0]))}</pre>"
                "<p>For the encoder, decoder and cross views: <code>attnscope.viewer.seq2seq_page.save_html(model, "
                "source, target, 'page.html')</code> or <code>attnscope view SOURCE --target TARGET</code>; read the "
                "weights with <code>trace.weights(layer, attention='encoder'|'self'|'cross')</code>.</p>")

    # ------------------------------------------------------------------------------------------
    def save(self, folder: Union[str, Path], *, overwrite: bool = False) -> Path:
        folder = super().save(folder, overwrite=overwrite)
        meta_file = Path(folder) / "trace.json"
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        assert self.decoder_input_ids is not None and self.decoder_attention_mask is not None  # as in mask()
        meta["seq2seq"] = {"target_tokens": self.target_tokens, "target_texts": self.target_texts,
                           "decoder_input_ids": self.decoder_input_ids.tolist(),
                           "decoder_attention_mask": self.decoder_attention_mask.tolist()}
        meta_file.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        return folder

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "Seq2SeqTrace":
        tr = super().load(folder)
        meta = json.loads((Path(folder) / "trace.json").read_text(encoding="utf-8"))
        s = meta.get("seq2seq")
        if not isinstance(s, dict):
            raise InputError(f"{folder} is not the trace of an encoder–decoder model (no target side)")
        tr.target_tokens, tr.target_texts = s["target_tokens"], s.get("target_texts") or []
        tr.decoder_input_ids = torch.tensor(s["decoder_input_ids"], dtype=torch.long)
        tr.decoder_attention_mask = torch.tensor(s["decoder_attention_mask"], dtype=torch.long)
        return tr


def run_seq2seq_trace(model, source, target, names=None, hooks=None, *, truncate: bool = False, grad: bool = False,
                      bwd_hooks=None) -> Seq2SeqTrace:
    """Run ``source`` through the encoder and ``target`` through the decoder, recording ``names``
    (exact names or globs, ``[h]`` allowed) and applying ``hooks``; as :func:`attnscope.trace.run_trace`."""
    wanted = resolve(names, model.hook_names, model.config.n_heads)
    fwd = hook_targets(model, hooks, "hooks")
    src = model.source_batch(source, truncate=truncate)
    dec_ids, dec_mask, dec_tokens = model.target_batch(target, len(src))
    tensors, output = record_pass(model, wanted, fwd, bwd_hooks, grad, src.input_ids.shape[0],
                                  lambda: model(src.input_ids, src.attention_mask, decoder_input_ids=dec_ids.to(model.device),
                                                decoder_attention_mask=dec_mask.to(model.device)))  # (B, T, d)
    return Seq2SeqTrace(tensors, tokens=src.tokens, input_ids=src.input_ids.cpu(),
                        attention_mask=src.attention_mask.cpu(), model_name=model.name, family=model.family,
                        config=model.config, texts=src.texts, output=output if grad else output.detach(),
                        target_tokens=dec_tokens, decoder_input_ids=dec_ids, decoder_attention_mask=dec_mask,
                        target_texts=[target] if isinstance(target, str) else list(target))
