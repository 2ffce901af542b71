"""Alignment-style statistics of cross-attention, as streaming sums, from the weights alone.

Cross-attention weights ``(B, H, T, S)``: row t is target token t (a decoder query), column j a
source token (an encoder key). Only real tokens count (``target_mask (B, T)``, ``source_mask
(B, S)``). For text b with T_b target and S_b source tokens, the source token "at the same
relative position" as target token t is

    a(t) = ⌊t · (S_b − 1) / (T_b − 1) + ½⌋          (halves rounded up; a(t) = 0 when T_b = 1)

so that the first target token maps to the first source token and the last to the last (the
decoder's start token to the source's first token, its last input to the source's ``</s>``). A
monotone alignment of two texts of similar length, such as a copy or a word-for-word
translation, puts its weight near a(t).

=====================  =============================================================  ==================
statistic              value of one target query t                                    queries counted
=====================  =============================================================  ==================
``entropy``            ``-Σ_j w_tj ln w_tj`` over the source (nats)                   all (see below)
``entropy_norm``       ``entropy / ln S_b``: 1 = even over the source, 0 = one token  S_b ≥ 2
``to_diagonal``        ``w_{t, a(t)}``                                                all
``diagonal_band``      ``Σ_{|j − a(t)| ≤ window} w_tj``                               all
``argmax_diagonal``    1 if the row's largest weight is within ±window of a(t)         all
``diagonal_offset``    ``Σ_j w_tj |j/(S_b − 1) − t/(T_b − 1)|``: 0 on the diagonal,    S_b ≥ 2, T_b ≥ 2
                       at most 1 (fractions of each text's length)
``to_source_end``      weight on the last real source token (``</s>``)                 all
``monotonic``          1 if argmax of row t ≥ argmax of row t − 1                      t ≥ 1
=====================  =============================================================  ==================

"all" is every real target token, or those of ``queries`` where given (``analyze
--no-special-queries`` leaves out the decoder's start token and other special tokens; a(t) still
counts every real token). Per head the mean is ``Σ value / Σ count`` over the counted queries of
the corpus, as in :mod:`.stats`. Ties in an argmax go to the first (lowest) source position.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch

from ..errors import ShapeError, shape_or_type
from ..i18n import error

Tensor = torch.Tensor

CROSS_STATS = ("entropy", "entropy_norm", "to_diagonal", "diagonal_band", "argmax_diagonal", "diagonal_offset",
               "to_source_end", "monotonic")

CROSS_DOCS = {
    "entropy": "entropy -Σ w ln w of a target token's row over the source, in nats",
    "entropy_norm": "entropy / ln(source length): 1 = spread evenly, 0 = one source token",
    "to_diagonal": "weight on the source token at the same relative position, a(t) = round(t·(S−1)/(T−1)), halves up",
    "diagonal_band": "weight within ±window source tokens of a(t)",
    "argmax_diagonal": "fraction of target tokens whose most attended source token is within ±window of a(t)",
    "diagonal_offset": "mean |j/(S−1) − t/(T−1)| under the weights: distance from the diagonal, as a fraction",
    "to_source_end": "weight on the source's last token (</s>)",
    "monotonic": "fraction of target tokens whose most attended source position is not before the previous one's",
}


def aligned_positions(target_len: Tensor, source_len: Tensor, T: int) -> Tensor:
    """a(t) (B, T) int64 for texts of ``target_len``, ``source_len`` (B,) real tokens (see the module)."""
    t = torch.arange(T, device=target_len.device, dtype=torch.long)[None, :]  # (1, T)
    Tb = target_len.to(torch.long)[:, None]  # (B, 1)
    Sb = source_len.to(torch.long)[:, None]
    # round half up in integers: ⌊(2t(S − 1) + (T − 1)) / (2(T − 1))⌋ (in floats, t/(T − 1)·(S − 1) can
    # land just below a half, e.g. 7/10·45 = 31.4999…, and round down)
    den = (Tb - 1).clamp(min=1)  # (B, 1)
    a = torch.div(2 * t * (Sb - 1).clamp(min=0) + den, 2 * den, rounding_mode="floor")  # (B, T)
    return torch.where(Tb > 1, a, torch.zeros_like(a))


@torch.no_grad()
def cross_sums(weights: Tensor, target_mask: Tensor, source_mask: Tensor, *, window: int = 1,
               queries: Optional[Tensor] = None) -> dict[str, tuple[Tensor, Tensor]]:
    """``{stat: (sum (H,), count (H,))}`` float64 of one batch of cross-attention weights (B, H, T, S);
    ``queries`` (B, T) bool: the target rows to count (default every real one)."""
    if not isinstance(weights, Tensor) or weights.dim() != 4 or not weights.is_floating_point():
        raise error(ShapeError, "errors.analysis_cross_weights", got=shape_or_type(weights))
    B, H, T, S = weights.shape
    for name, m, n in (("target_mask", target_mask, T), ("source_mask", source_mask, S),
                       ("queries", target_mask if queries is None else queries, T)):
        if not isinstance(m, Tensor) or tuple(m.shape) != (B, n):
            raise error(ShapeError, "errors.analysis_mask_shape", name=name, B=B, n=n, got=shape_or_type(m))
    if window < 0:
        raise error(ShapeError, "errors.analysis_window", value=window)
    w = weights.to(torch.float64)
    tgt, src = target_mask.bool(), source_mask.bool()
    Tb, Sb = tgt.sum(-1), src.sum(-1)  # (B,)
    w = w.masked_fill(~src[:, None, None, :], 0.0)  # padded keys hold nothing
    a = aligned_positions(Tb, Sb, T).clamp(max=S - 1)  # (B, T); rows past a text's end are not counted
    j = torch.arange(S, device=w.device)
    t = torch.arange(T, device=w.device, dtype=torch.float64)
    entropy = -(w * torch.log(w.clamp_min(torch.finfo(torch.float64).tiny))).sum(-1)  # (B, H, T)
    log_s = torch.log(Sb.clamp(min=2).to(torch.float64))[:, None, None]
    diag = w.gather(-1, a[:, None, :, None].expand(B, H, T, 1)).squeeze(-1)  # (B, H, T)
    near = ((j[None, None, :] - a[:, :, None]).abs() <= window)  # (B, T, S)
    band = (w * near[:, None].to(w.dtype)).sum(-1)
    top = w.argmax(-1)  # (B, H, T): ties → the first
    arg_diag = ((top - a[:, None, :]).abs() <= window).to(w.dtype)
    jf = j.to(torch.float64)[None, :] / (Sb.to(torch.float64)[:, None] - 1).clamp(min=1)  # (B, S)
    tf = t[None, :] / (Tb.to(torch.float64)[:, None] - 1).clamp(min=1)  # (B, T)
    offset = (w * (jf[:, None, None, :] - tf[:, None, :, None]).abs()).sum(-1)
    last = (Sb - 1).clamp(min=0)
    end = w.gather(-1, last[:, None, None, None].expand(B, H, T, 1)).squeeze(-1)
    mono = torch.zeros(B, H, T, dtype=w.dtype, device=w.device)
    mono[..., 1:] = (top[..., 1:] >= top[..., :-1]).to(w.dtype)
    every = tgt if queries is None else tgt & queries.bool()  # (B, T)
    counted = {"entropy": every, "entropy_norm": every & (Sb >= 2)[:, None], "to_diagonal": every,
               "diagonal_band": every, "argmax_diagonal": every,
               "diagonal_offset": every & ((Sb >= 2) & (Tb >= 2))[:, None], "to_source_end": every,
               "monotonic": every & (torch.arange(T, device=w.device) >= 1)[None, :]}
    values = {"entropy": entropy, "entropy_norm": entropy / log_s, "to_diagonal": diag, "diagonal_band": band,
              "argmax_diagonal": arg_diag, "diagonal_offset": offset, "to_source_end": end, "monotonic": mono}
    out = {}
    for name in CROSS_STATS:
        c = counted[name]  # (B, T)
        v = values[name].masked_fill(~c[:, None, :], 0.0)
        out[name] = (v.sum(dim=(0, 2)), c.sum().to(torch.float64).expand(H).clone())
    return out


def cross_means(weights: Tensor, target_mask: Tensor, source_mask: Tensor, *, window: int = 1,
                queries: Optional[Tensor] = None) -> dict[str, Tensor]:
    """``{stat: mean (H,)}`` of one batch (NaN where nothing counts)."""
    return {k: s / c for k, (s, c) in cross_sums(weights, target_mask, source_mask, window=window,
                                                  queries=queries).items()}


def special_kinds(tokens: list[list[str]], specials: set, L: int, punct: Optional[Callable[[str], bool]] = None) -> dict:
    """Token kinds (B, L) of right-padded texts for :func:`attnscope.analysis.stats.attention_sums`:
    ``cls`` a special token first, ``sep`` a special token last, ``special``, ``punct``."""
    B = len(tokens)
    out = {k: torch.zeros(B, L, dtype=torch.bool) for k in ("cls", "sep", "special", "punct")}
    for b, toks in enumerate(tokens):
        for i, tok in enumerate(toks):
            if tok in specials:
                out["special"][b, i] = True
            elif punct is not None and punct(tok):
                out["punct"][b, i] = True
        if toks and toks[0] in specials:
            out["cls"][b, 0] = True
        if len(toks) > 1 and toks[-1] in specials:
            out["sep"][b, len(toks) - 1] = True
    return out
