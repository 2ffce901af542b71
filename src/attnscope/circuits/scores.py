"""The OV copying score and the Q-, K- and V-composition scores (Elhage et al. 2021, "A Mathematical
Framework for Transformer Circuits"; Olsson et al. 2022, "In-context Learning and Induction Heads").

**Copying score.** The full OV circuit of a head is what attending to token a does to the logit of
token b, through the embedding and the unembedding: ``W_E W_OV W_U`` (V, V), row convention
(:func:`.model_parts.embedding_rows`, :func:`.model_parts.unembedding`; with ``fold_norm`` the
pre-attention norm's γ is in W_V and the final norm's γ in W_U — :mod:`.heads`). A head that copies
raises the logit of the token it attends to: the matrix has mostly positive eigenvalues. The score is
Elhage et al.'s summary statistic (their "positive eigenvalue" histograms; Olsson et al.'s copying
evidence, TransformerLens' ARENA exercises compute the same)::

    copying = Σ_i λ_i / Σ_i |λ_i|        λ_i: the eigenvalues of W_E W_OV W_U

in [−1, 1] (1: every eigenvalue positive; Σ λ_i is real, complex eigenvalues come in conjugate
pairs). Never formed at V × V: with X = W_E W_V (V, r) and Y = W_O W_U (r, V), the non-zero
eigenvalues of X Y are those of Y X = W_O (W_U W_E) W_V (r, r), and W_U W_E (d, d) is computed once
per model (one d × V × d product).

**Composition scores** between head h1 of layer l1 and head h2 of a later layer l2: how much of what
h1 writes lands in the subspace h2 reads with its queries, keys or values. Elhage et al. (column
vectors) define ``‖W_QK^{h2}ᵀ W_OV^{h1}‖_F / (‖W_QK^{h2}ᵀ‖_F ‖W_OV^{h1}‖_F)`` for Q, W_QK^{h2} W_OV^{h1}
for K and W_OV^{h2} W_OV^{h1} for V. In this package's row convention (W_OV = W_V W_O, the transpose
of theirs; the same W_QK) the same numbers are (TransformerLens' ``all_composition_scores``)::

    Q:  ‖W_OV^{h1} W_QK^{h2}‖  / (‖W_OV^{h1}‖ ‖W_QK^{h2}‖)     h1's output read as h2's query
    K:  ‖W_OV^{h1} W_QK^{h2}ᵀ‖ / (…)                            … as h2's key
    V:  ‖W_OV^{h1} W_OV^{h2}‖  / (‖W_OV^{h1}‖ ‖W_OV^{h2}‖)     … as h2's value

(Frobenius norms, all through r × r matrices: :class:`.factored.Factored`). A rotary model's QK
circuit is the plain W_Q W_Kᵀ (offset 0) unless ``offset`` is given.
"""

from __future__ import annotations

from typing import Optional

import torch

from ..errors import InputError
from ..i18n import error
from .factored import Factored
from .heads import check_layer_head, head_weights, ov_circuit, qk_circuit
from .model_parts import embedding_rows, unembedding

Tensor = torch.Tensor

#: The composition kinds, the side of the later head that reads the earlier head's output.
KINDS = ("q", "k", "v")


def embed_unembed(model, *, fold_norm: bool = True, dtype: torch.dtype = torch.float64) -> Tensor:
    """W_U W_E (d, d): the one d × V × d product the copying scores share."""
    W_U = unembedding(model, fold_norm=fold_norm, dtype=dtype)  # (d, V)
    W_E = embedding_rows(model, dtype).to(W_U.device)  # (V, d)
    return W_U @ W_E  # (d, d)


def ov_eigenvalues(model, layer: int, head: int, *, fold_norm: bool = True, dtype: torch.dtype = torch.float64,
                   UE: Optional[Tensor] = None) -> Tensor:
    """The r = d_head eigenvalues of W_O (W_U W_E) W_V (complex, (r,)): every non-zero eigenvalue
    of the full OV circuit W_E W_OV W_U. ``UE``: :func:`embed_unembed`, when already computed."""
    w = head_weights(model, layer, head, fold_norm=fold_norm, dtype=dtype)
    G = embed_unembed(model, fold_norm=fold_norm, dtype=dtype) if UE is None else UE  # (d, d)
    return torch.linalg.eigvals(w.W_O @ G.to(w.W_O.device) @ w.W_V)  # (r,)


def copying_from_eigenvalues(lam: Tensor) -> float:
    """Σ λ / Σ |λ| (the real part: the imaginary parts cancel in conjugate pairs); NaN for a circuit
    with no non-zero eigenvalue (a zeroed W_O or W_V), whose copying is undefined, not 0."""
    total = lam.abs().sum()
    return float((lam.sum().real / total) if total > 0 else float("nan"))


def copying_score(model, layer: int, head: int, *, fold_norm: bool = True, dtype: torch.dtype = torch.float64,
                  UE: Optional[Tensor] = None) -> float:
    """Σ λ_i / Σ |λ_i| over the eigenvalues of the head's full OV circuit (module docstring)."""
    return copying_from_eigenvalues(ov_eigenvalues(model, layer, head, fold_norm=fold_norm, dtype=dtype, UE=UE))


def copying_scores(model, heads=None, *, fold_norm: bool = True, dtype: torch.dtype = torch.float64) -> dict:
    """``{(layer, head): copying score}`` for ``heads`` (an iterable of (layer, head); None: every
    head), sharing one W_U W_E."""
    c = model.config
    heads = [(l, h) for l in range(c.n_layers) for h in range(c.n_heads)] if heads is None else list(heads)
    if not heads:
        return {}
    UE = embed_unembed(model, fold_norm=fold_norm, dtype=dtype)
    return {(int(l), int(h)): copying_score(model, l, h, fold_norm=fold_norm, dtype=dtype, UE=UE) for l, h in heads}


def check_kind(kind) -> str:
    if kind not in KINDS:
        raise error(InputError, "errors.qkov_kind", kind=repr(kind), choices=", ".join(KINDS))
    return str(kind)


def reader(model, kind: str, layer: int, head: int, *, offset: Optional[int] = None, fold_norm: bool = True,
           dtype: torch.dtype = torch.float64) -> Factored:
    """The later head's matrix the earlier output is multiplied with: W_QK (q), W_QKᵀ (k), W_OV (v)."""
    kind = check_kind(kind)
    if kind == "v":
        return ov_circuit(model, layer, head, fold_norm=fold_norm, dtype=dtype)
    qk = qk_circuit(model, layer, head, offset=offset, fold_norm=fold_norm, dtype=dtype)
    return qk if kind == "q" else qk.T


def composition_parts(model, kind: str, sender: tuple[int, int], receiver: tuple[int, int], *,
                      offset: Optional[int] = None, fold_norm: bool = True,
                      dtype: torch.dtype = torch.float64) -> tuple[Factored, Factored, Factored]:
    """(A = W_OV of the sender, B = the receiver's matrix, A @ B), after checking the two heads."""
    l1, h1 = check_layer_head(model, *sender)
    l2, h2 = check_layer_head(model, *receiver)
    if l2 <= l1:
        raise error(InputError, "errors.qkov_order", l1=l1, h1=h1, l2=l2, h2=h2)
    A = ov_circuit(model, l1, h1, fold_norm=fold_norm, dtype=dtype)
    B = reader(model, kind, l2, h2, offset=offset, fold_norm=fold_norm, dtype=dtype)
    return A, B, A @ B


def composition_score(model, kind: str, sender: tuple[int, int], receiver: tuple[int, int], *,
                      offset: Optional[int] = None, fold_norm: bool = True, dtype: torch.dtype = torch.float64) -> float:
    """‖A B‖_F / (‖A‖_F ‖B‖_F), A = the sender's W_OV, B = :func:`reader` (module docstring)."""
    A, B, AB = composition_parts(model, kind, sender, receiver, offset=offset, fold_norm=fold_norm, dtype=dtype)
    return float(AB.norm() / (A.norm() * B.norm()))


def composition_scores(model, kind: str, *, fold_norm: bool = True, dtype: torch.dtype = torch.float64) -> Tensor:
    """Every pair at once, ``(n_layers, H, n_layers, H)``: [l1, h1, l2, h2] the score of sender
    (l1, h1) and receiver (l2, h2), NaN where l2 ≤ l1. Batched over the Gram matrices: with
    A = L_A R_A and B = L_B R_B, ‖A B‖² = Σ (L_AᵀL_A) ∘ (M G_B Mᵀ), M = R_A L_B, G_B = R_B R_Bᵀ (r × r each)."""
    kind = check_kind(kind)
    c = model.config
    n, H = int(c.n_layers), int(c.n_heads)
    A = [[ov_circuit(model, l, h, fold_norm=fold_norm, dtype=dtype) for h in range(H)] for l in range(n)]
    B = A if kind == "v" else [[reader(model, kind, l, h, fold_norm=fold_norm, dtype=dtype) for h in range(H)]
                               for l in range(n)]
    LA = torch.stack([a.left for row in A for a in row])  # (N, d, r)
    RA = torch.stack([a.right for row in A for a in row])  # (N, r, d)
    LB = torch.stack([b.left for row in B for b in row])  # (N, d, r)
    RB = torch.stack([b.right for row in B for b in row])  # (N, r, d)
    GA = LA.transpose(1, 2) @ LA  # (N, r, r)
    GB = RB @ RB.transpose(1, 2)  # (N, r, r)
    normA = (GA * (RA @ RA.transpose(1, 2))).sum((1, 2)).sqrt()  # (N,)
    normB = ((LB.transpose(1, 2) @ LB) * GB).sum((1, 2)).sqrt()  # (N,)
    out = torch.full((n, H, n, H), float("nan"), dtype=dtype, device=LA.device)
    for l1 in range(n - 1):
        s = slice(l1 * H, (l1 + 1) * H)
        later = slice((l1 + 1) * H, n * H)
        M = torch.einsum("ard,bde->abre", RA[s], LB[later])  # (H, N', r, r)
        P = torch.einsum("abre,bef,abgf->abrg", M, GB[later], M)  # (H, N', r, r): M G_B Mᵀ
        num = (GA[s][:, None] * P).sum((2, 3)).clamp_min(0).sqrt()  # (H, N')
        scores = num / (normA[s][:, None] * normB[later][None])  # (H, N')
        out[l1, :, l1 + 1:, :] = scores.reshape(H, n - l1 - 1, H)
    return out
