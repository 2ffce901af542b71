"""The numbers of one token's attribution row, float64, for ``explain --attribution`` and ``check``.

Pure functions: every matrix comes from the float64 twins (:mod:`attnscope.reference.attribution`
for rollout, :mod:`attnscope.reference.attribution_blocks` for norm and ALTI) on the float64 forward
from the model's weights (:func:`attnscope.reference_model.forward`; T5/BART: the encoder's, from
:func:`attnscope.reference_model_seq2seq.forward_seq2seq`); nothing here formats anything
(:mod:`.attribution_doc` writes the lesson).

One row of an accumulated method by hand. Rollout is ``R = M_top · … · M_1 · M_0`` (``M_l`` = Ã_l, or
ALTI's matrix of layer l), so row i of R is ``e_i · M_top · M_{top−1} ⋯ M_0``. Multiplied from the
left, every step is one row times a matrix — a weighted sum of that matrix's rows —::

    u_top = M_top[i, :]            (L,)
    u_l   = Σ_j u_{l+1, j} · M_l[j, :]    for l = top − 1, …, 0
    row i of R = u_0

and only the rows j with ``u_{l+1, j} ≠ 0`` of each lower matrix are needed (all of them in an
encoder; j ≤ i under a causal mask). The same product as the twin's ``R_l = M_l · R_{l−1}``, summed
in another order: the rows agree to float64 rounding (≤ 1e-15), and each ``M_l`` is the twin's own.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..config import is_seq2seq
from ..errors import InputError
from ..i18n import error
from ..reference import attribution as RA
from ..reference import attribution_blocks as RB
from ..reference.arrays import as_f64
from . import inputs

#: The methods a lesson works by hand.
METHODS = ("rollout", "norm", "alti")


def check_method(method) -> str:
    """``method`` if a lesson works it, else one sentence listing the choices."""
    if method not in METHODS:
        raise error(InputError, "errors.attribution_lesson_method", method=repr(method), choices=", ".join(METHODS))
    return str(method)


def stack_layers(model) -> int:
    """The number of layers the methods attribute (an encoder–decoder's encoder)."""
    return len(model.encoder.layers) if is_seq2seq(model) else int(model.config.n_layers)


def forward64(model, text: str, upto: int) -> tuple[dict, str]:
    """The float64 forward of ``text`` through layers 0 … ``upto`` and the prefix of its names
    (``"encoder."`` for T5/BART, whose source runs through the encoder)."""
    if is_seq2seq(model):
        from ..reference_model_seq2seq import forward_seq2seq
        return forward_seq2seq(model, text, encoder_upto=upto), "encoder."
    from ..reference_model import forward
    return forward(model, text, upto=upto), ""


def top_down(mats: np.ndarray, qpos: int, top: int) -> dict:
    """Row ``qpos`` of ``mats[top] ⋯ mats[0]`` (``mats`` (n_layers, L, L)) one row at a time (module
    docstring): ``u`` {layer: (L,)} and ``rows`` {layer: the rows of ``mats[layer]`` the step needs}."""
    u = {top: mats[top, qpos].copy()}  # (L,)
    rows = {top: np.array([qpos])}
    for l in range(top - 1, -1, -1):
        rows[l] = np.flatnonzero(u[l + 1] != 0.0)
        u[l] = u[l + 1][rows[l]] @ mats[l, rows[l]]  # (L,): Σ_j u_j · M_l[j, :]
    return {"u": u, "rows": rows, "row": u[0]}


def rollout_values(model, text: str, qpos: int, layer: int) -> dict:
    """Rollout of row ``qpos`` up to ``layer``: ``heads`` (H, L) the top layer's per-head weights of
    the row; per layer ``A`` (n, L, L) the head means, ``half`` = ½·A + ½·I, ``sums`` (n, L) its row
    sums, ``tilde`` = Ã (the twin's, rows renormalised); the top-down ``u``/``rows``; ``row`` (L,) the
    rollout row; ``twin`` (L,) the twin's row of R_layer (the same to ≤ 1e-15)."""
    f, prefix = forward64(model, text, layer)
    n = layer + 1
    A = RA.mean_weights(f, n, prefix)  # (n, L, L)
    L = A.shape[-1]
    half = 0.5 * A + 0.5 * np.eye(L)  # (n, L, L)
    tilde = RA.residual_attention(A)  # (n, L, L)
    twin = RA.rollout(tilde)[layer, qpos]  # (L,)
    heads = np.asarray(f[f"{prefix}layers.{layer}.attn.weights"], dtype=np.float64)[:, qpos]  # (H, L)
    return dict(top_down(tilde, qpos, layer), A=A, half=half, sums=half.sum(-1), tilde=tilde, twin=twin, heads=heads)


def norm_values(model, text: str, qpos: int, layer: int) -> dict:
    """Kobayashi's norms of row ``qpos`` in ``layer``: ``alpha`` (H, L) the weights α^h_ij, ``fnorm``
    (H, L) ‖f^h(x_j)‖ with f^h(x_j) = v^h_j W_O^h, ``heads`` (H, L) α·‖f‖ (the twin's), ``vec`` (L, d)
    Σ_h α^h_ij f^h(x_j), ``row`` (L,) its norm (the twin's ``norm`` row), ``mean`` (L,) the head mean
    of α, ``d`` the model width."""
    if is_seq2seq(model):
        raise error(InputError, "errors.attribution_lesson_seq2seq", method="norm", model=model.name)
    f, _ = forward64(model, text, layer)
    p = f"layers.{layer}.attn"
    v, w = f[f"{p}.v"], np.asarray(f[f"{p}.weights"], dtype=np.float64)  # (H_kv, L, d_head), (H, L, L)
    W_O = as_f64(model.layers[layer].attn.W_O.weight)  # (d, H·d_head)
    heads, summed = RB.kobayashi(v, w, W_O)  # (H, L, L), (L, L)
    H, dh = w.shape[0], v.shape[-1]
    # f^h(x_j) as the twin forms it (the same expression, so the same float64 digits)
    fv = np.einsum("hjd,ehd->hje", np.repeat(v, H // v.shape[0], axis=0), W_O.reshape(-1, H, dh))  # (H, L, d)
    vec = np.einsum("hj,hje->je", w[:, qpos], fv)  # (L, d)
    return {"alpha": w[:, qpos], "fnorm": np.linalg.norm(fv, axis=-1), "heads": heads[:, qpos], "vec": vec,
            "row": summed[qpos], "mean": w[:, qpos].mean(axis=0), "d": int(W_O.shape[0])}


def alti_values(model, text: str, qpos: int, layer: int) -> dict:
    """ALTI of row ``qpos`` up to ``layer``: for the top layer ``y1`` ‖y_i‖₁, ``dist`` (L,)
    ‖y_i − T_i(x_j)‖₁, ``raw`` (L,) max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁), ``rowsum``; ``C`` (n, L, L) every
    layer's ALTI matrix (the twin's, rows normalised); the top-down ``u``/``rows``; ``row`` (L,);
    ``twin`` (L,) the twin's rollout row (the same to ≤ 1e-15)."""
    if is_seq2seq(model):
        raise error(InputError, "errors.attribution_lesson_seq2seq", method="alti", model=model.name)
    f, _ = forward64(model, text, layer)
    parts = [RB.decompose_layer(model, f, i) for i in range(layer + 1)]  # [(T (L, L, d), y (L, d))]
    C = np.stack([RB.alti_layer(T, y) for T, y in parts])  # (n, L, L)
    T, y = parts[layer]
    y1 = float(np.abs(y[qpos]).sum())
    dist = np.abs(y[qpos][None, :] - T[qpos]).sum(-1)  # (L,)
    raw = np.maximum(y1 - dist, 0.0)  # (L,)
    return dict(top_down(C, qpos, layer), C=C, y1=y1, dist=dist, raw=raw, rowsum=float(raw.sum()),
                twin=RB.rollout(C, layer)[qpos])


def torch_row(model, text: str, method: str, qpos: int, layer: int) -> np.ndarray:
    """The same row from ``model.attribute`` (the torch method on the float32 trace), float64 (L,)."""
    a = model.attribute(text, method, layer=layer)
    return a.scores[qpos].detach().to("cpu").double().numpy()


def query_of(model, text: str, token: Optional[str], position: Optional[int]) -> tuple[list, list, int, list]:
    """(tokens, labels, qpos, notes) of the query named by ``token`` or ``position`` (the row lesson's
    rules: :func:`attnscope.explain.row.resolve_query`)."""
    from .row import resolve_query
    tokens = list(model.encode(text).tokens[0])
    pieces = model.tokenizer.pieces(tokens)
    qpos, notes = resolve_query(tokens, token, position, text, pieces)
    return tokens, list(pieces.labels), qpos, notes


def lesson_values(model, text: Optional[str], method: str, token: Optional[str] = None, position: Optional[int] = None,
                  layer: Optional[int] = None) -> dict:
    """Everything a lesson shows: the method's numbers (above) with ``tokens``, ``labels``, ``qpos``,
    ``notes``, ``layer``, ``method`` and ``torch`` (the torch method's row, (L,))."""
    method = check_method(method)
    if not isinstance(text, str) or not text.strip():
        raise error(InputError, "errors.text_empty")
    n = stack_layers(model)
    layer = n - 1 if layer is None else inputs.check_index("layer", layer, n, "layers")
    tokens, labels, qpos, notes = query_of(model, text, token, position)
    fn = {"rollout": rollout_values, "norm": norm_values, "alti": alti_values}[method]
    vals = fn(model, text, qpos, layer)
    return dict(vals, tokens=tokens, labels=labels, qpos=qpos, notes=notes, layer=layer, method=method,
                n_layers=n, torch=torch_row(model, text, method, qpos, layer))
