"""What the family battery (tests/models/test_family_battery.py) compares with: the texts each
registered tiny checkpoint reads, the trace-name templates it must have, transformers' forward of
attnscope's inputs, and the statistics and worked-path values computed another way."""

from __future__ import annotations

import inspect

import numpy as np
import torch

from attnscope.testing.tiny import TinyFamily
from tests.models.seq2seq.texts import PAIRS

TOL = 1e-5
LOGITS_TOL = 1e-4
#: Two texts per language: the first longer than every sliding window of the decoders (5, 6), the
#: second shorter, so that a batch of the two is padded. Every character is in every vocabulary
#: of that language (bert-base-chinese's ids of attnscope.testing.tiny included).
TEXTS = {
    "en": ["The quick brown fox jumps over the lazy dog because it was tired.", "Attention is all you need!"],
    "zh": ["我喜欢人工智能。北京是中国的首都。", "你好世界。"],
}
#: The core of every one-text model's trace names (templates); a family's registration adds its own.
CORE = ("embed.tokens", "embed.out", "layers.{i}.attn_in", "layers.{i}.attn.q", "layers.{i}.attn.k",
        "layers.{i}.attn.v", "layers.{i}.attn.scores", "layers.{i}.attn.scaled", "layers.{i}.attn.masked",
        "layers.{i}.attn.weights", "layers.{i}.attn.z", "layers.{i}.attn.merged", "layers.{i}.attn.out",
        "layers.{i}.attn_resid", "layers.{i}.ffn_in", "layers.{i}.ffn.hidden", "layers.{i}.ffn.out",
        "layers.{i}.ffn_resid", "layers.{i}.out")
_ATTN = ("q", "k", "v", "scores", "scaled", "masked", "weights", "z", "merged", "out")
_FFN = ("ffn_in", "ffn.hidden", "ffn.out", "ffn_resid", "out")
#: The core of an encoder–decoder model's names: the encoder's layer, the decoder's with its
#: causal self-attention and its cross-attention.
CORE_PAIR = ("encoder.embed.tokens", "encoder.embed.out", "encoder.layers.{i}.attn_in",
             *(f"encoder.layers.{{i}}.attn.{s}" for s in _ATTN), "encoder.layers.{i}.attn_resid",
             *(f"encoder.layers.{{i}}.{s}" for s in _FFN),
             "decoder.embed.tokens", "decoder.embed.out", "decoder.layers.{i}.self_attn_in",
             *(f"decoder.layers.{{i}}.self_attn.{s}" for s in _ATTN), "decoder.layers.{i}.self_attn_resid",
             "decoder.layers.{i}.cross_attn_in", *(f"decoder.layers.{{i}}.cross_attn.{s}" for s in _ATTN),
             "decoder.layers.{i}.cross_attn_resid", *(f"decoder.layers.{{i}}.{s}" for s in _FFN))


def templates(fam: TinyFamily) -> set[str]:
    """The trace-name templates the family must have: the core of its kind and its declared steps."""
    def one(step: str) -> str:
        return step if step.startswith("embed.") or step == "final_norm" else f"layers.{{i}}.{step}"
    if fam.reads == "text":
        return set(CORE) | {one(s) for s in fam.names}
    out = set(CORE_PAIR)
    for s in fam.names:
        out.add(f"encoder.{one(s)}")
        out.add(f"decoder.{one(s.replace('attn.', 'self_attn.'))}")
    return out


def texts_of(fam: TinyFamily, lang: str | None = None):
    lang = lang or fam.lang.split("+")[0]
    if fam.reads == "pair":
        sources, targets = PAIRS[lang]
        return list(sources[:2]), list(targets[:2])
    return TEXTS[lang]


def hf_one_text(hf, model, batch):
    """transformers' forward of an attnscope Batch: hidden states, attentions, logits (or None)."""
    kw = dict(input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_hidden_states=True,
              output_attentions=True)
    if getattr(model.config, "type_vocab_size", 0) > 0 and "token_type_ids" in inspect.signature(hf.forward).parameters:
        kw["token_type_ids"] = batch.token_type_ids
    if "use_cache" in inspect.signature(hf.forward).parameters:
        kw["use_cache"] = False
    with torch.no_grad():
        out = hf(**kw)
    return out.hidden_states, out.attentions, getattr(out, "logits", None)


def hf_pair(hf, tr):
    """transformers' forward of the inputs of a Seq2SeqTrace."""
    with torch.no_grad():
        return hf(input_ids=tr.input_ids, attention_mask=tr.attention_mask, decoder_input_ids=tr.decoder_input_ids,
                  decoder_attention_mask=tr.decoder_attention_mask, output_hidden_states=True,
                  output_attentions=True, use_cache=False)


def hidden_names(fam: TinyFamily, model) -> list[str]:
    """Our names of transformers' hidden_states: what enters layer 0, each layer's output, the last
    one after the final norm where the model has one (transformers' convention)."""
    L = model.config.n_layers
    names = [fam.first_hidden] + [f"layers.{i}.out" for i in range(L)]
    if "final_norm" in fam.names:
        names[-1] = "final_norm"
    return names


def max_err(a, b) -> float:
    return float((a.double() - b.double()).abs().max())


def float64_forward(fam, model):
    """The float64 reference of the family's first text (pair) and the model's float32 trace of it."""
    from attnscope import reference_model, reference_model_seq2seq
    if fam.reads == "pair":
        sources, targets = texts_of(fam)
        return (reference_model_seq2seq.forward_seq2seq(model, sources[0], targets[0]),
                model.trace(sources[:1], targets[:1]))
    text = texts_of(fam)[0]
    return reference_model.forward(model, text), model.trace(text)


def reference_name(name: str) -> str:
    """The float64 reference's key of a trace name: the same, but for the decoders' ``attn.mask``
    (True = may attend), which it keeps as ``attn.allowed`` ((L, L), without the batch axes)."""
    return name[: -len(".mask")] + ".allowed" if name.endswith(".attn.mask") else name


def step_error(ref: np.ndarray, traced: torch.Tensor) -> float:
    """max |ref − traced| over the finite entries, relative to max(1, |ref|); the infinite ones
    (masked scores) must be where the reference has them."""
    theirs = traced.double().cpu().numpy()
    if traced.dtype == torch.bool:  # (1, L, S) or (L, S) of one text
        assert np.array_equal(theirs.reshape(ref.shape).astype(bool), ref.astype(bool))
        return 0.0
    assert theirs.shape == ref.shape, (theirs.shape, ref.shape)
    fin = np.isfinite(ref)
    assert np.array_equal(fin, np.isfinite(theirs)) and np.array_equal(ref[~fin], theirs[~fin])
    scale = max(1.0, float(np.abs(ref[fin]).max(initial=0.0)))
    return float(np.abs(ref[fin] - theirs[fin]).max(initial=0.0)) / scale


def path_matches(values: dict, f: dict, model, pos: int, rows: dict) -> int:
    """How many of the path's values (keyed by trace names, ``[h]`` for a head; ``rows``: the
    query's attention rows, path key → (trace name, head)) were compared with the float64
    reference ``f``; each must equal it to 1e-9 relative. Every row of ``rows`` must be there."""
    H, H_kv = model.config.n_heads, getattr(model.config, "kv_heads", model.config.n_heads)
    assert set(rows) <= set(values), sorted(values)
    checked = 0
    for key, ours in values.items():
        base, h = key.split("[")[0], int(key.split("[")[1].rstrip("]")) if "[" in key else None
        if key in rows:
            base, h = rows[key]
        if ours is None or base not in f:
            continue
        ours = np.asarray(ours, dtype=np.float64)
        theirs = np.asarray(f[base], dtype=np.float64)
        if h is not None:
            kv = base.rsplit(".", 1)[1] in ("k", "v", "k_proj", "k_normed")
            theirs = theirs[h // (H // H_kv) if kv and theirs.shape[0] == H_kv else h]
        if theirs.ndim == ours.ndim + 1:
            theirs = theirs[pos]
        if theirs.shape != ours.shape:
            assert key not in rows, (key, theirs.shape, ours.shape)
            continue
        scale = max(1.0, float(np.abs(theirs[np.isfinite(theirs)]).max(initial=0.0)))
        fin = np.isfinite(theirs)
        assert np.array_equal(fin, np.isfinite(ours)), key
        assert np.abs(ours[fin] - theirs[fin]).max(initial=0.0) <= 1e-9 * scale, key
        checked += 1
    return checked


def page_mask(cfg: dict, layer: int, n: int) -> np.ndarray:
    """Bool (n, n): the keys each query sees on the page: all, causal, and within the layer's window."""
    d = np.arange(n)[:, None] - np.arange(n)[None, :]
    ok = d >= 0 if cfg["causal"] else np.ones((n, n), dtype=bool)
    w = cfg["windows"][layer]
    return ok & (d < w) if w else ok


def row_sums(w: torch.Tensor) -> tuple[np.ndarray, np.ndarray, int]:
    """Per head, the sums over the rows of ``w (H, n_q, n_k)`` of the entropy −Σ w ln w and the
    distance Σ w |i − j|, and the number of rows."""
    w = w.double()
    ent = -(torch.where(w > 0, w * w.clamp_min(1e-300).log(), torch.zeros_like(w))).sum(-1)  # (H, n_q)
    i = torch.arange(w.shape[1], dtype=torch.float64)[:, None]
    j = torch.arange(w.shape[2], dtype=torch.float64)[None, :]
    dist = (w * (i - j).abs()).sum(-1)  # (H, n_q)
    return ent.sum(-1).numpy(), dist.sum(-1).numpy(), w.shape[1]
