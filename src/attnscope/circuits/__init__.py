"""QK and OV circuits of attention heads, the OV copying score and the Q-, K- and V-composition
scores (issue 28; Elhage et al. 2021, Olsson et al. 2022), every matrix kept factored.

    >>> from attnscope.circuits import qk_circuit, ov_circuit, copying_score, composition_score
    >>> W_QK = qk_circuit(model, layer=1, head=0)            # Factored: W_Q (d, r) @ W_Kᵀ (r, d)
    >>> W_QK.norm(), W_QK.svd()[1], W_QK.entry(3, 5)          # through r × r matrices
    >>> copying_score(model, 1, 0)                            # Σλ/Σ|λ| of W_E W_OV W_U
    >>> composition_score(model, "k", (0, 3), (1, 0))         # how much 0.3 feeds 1.0's keys

Conventions (row vectors, norms folded or not, rotary offsets, grouped-query heads, biases):
:mod:`.heads`; the scores' definitions: :mod:`.scores`; the factored matrix: :mod:`.factored`.
"""

from .factored import Factored
from .heads import HeadWeights, head_weights, ov_circuit, qk_circuit, rotation
from .scores import (
    KINDS,
    composition_score,
    composition_scores,
    copying_score,
    copying_scores,
    embed_unembed,
    ov_eigenvalues,
)

__all__ = ["Factored", "HeadWeights", "head_weights", "qk_circuit", "ov_circuit", "rotation", "KINDS",
           "copying_score", "copying_scores", "ov_eigenvalues", "embed_unembed", "composition_score",
           "composition_scores"]
