"""A low-rank matrix kept as its two factors: ``M = left @ right`` with left (m, r), right (r, n).

A head's circuits are d_model × d_model matrices of rank at most d_head (W_QK = W_Q W_Kᵀ, W_OV =
W_V W_O); a product of circuits keeps that rank. Everything here is computed through r × r
matrices, so the d × d (or vocab × vocab) product is formed only by :meth:`Factored.full`:

* the Frobenius norm: ‖L R‖²_F = tr(Rᵀ Lᵀ L R) = Σ_ab (LᵀL)_ab (R Rᵀ)_ab (both Gram matrices are
  symmetric, so the trace of their product is the sum of their element-wise product);
* the singular values: L = Q_L T_L and Rᵀ = Q_R T_R (reduced QR), so L R = Q_L (T_L T_Rᵀ) Q_Rᵀ and
  the SVD of the r × r core gives those of L R;
* the eigenvalues (square M): the non-zero eigenvalues of L R are those of R L (r × r) — for any
  A (m, r), B (r, m), AB and BA have the same non-zero eigenvalues with the same multiplicities;
  L R has m − r more zeros.

Shapes are (m, r) and (r, n) (no batch axis); the factors keep their dtype and device.
"""

from __future__ import annotations

from typing import Union

import torch

from ..errors import ShapeError
from ..i18n import error

Tensor = torch.Tensor


class Factored:
    """``left @ right`` without forming it: left (m, r), right (r, n)."""

    def __init__(self, left: Tensor, right: Tensor) -> None:
        if left.dim() != 2 or right.dim() != 2 or left.shape[1] != right.shape[0]:
            raise error(ShapeError, "errors.qkov_factors", left=tuple(left.shape), right=tuple(right.shape))
        self.left, self.right = left, right

    @property
    def shape(self) -> tuple[int, int]:
        """(m, n) of the product."""
        return (int(self.left.shape[0]), int(self.right.shape[1]))

    @property
    def inner(self) -> int:
        """r, the inner size (an upper bound of the rank)."""
        return int(self.left.shape[1])

    def full(self) -> Tensor:
        """The product itself, (m, n): the one place it is formed."""
        return self.left @ self.right  # (m, n)

    @property
    def T(self) -> "Factored":
        """The transpose: rightᵀ (n, r) @ leftᵀ (r, m)."""
        return Factored(self.right.T, self.left.T)

    def __matmul__(self, other: Union["Factored", Tensor]) -> "Factored":
        """(L₁ R₁)(L₂ R₂) = L₁ ((R₁ L₂) R₂): the left factor and the inner size stay those of ``self``;
        a plain matrix is multiplied into the right factor."""
        if isinstance(other, Factored):
            return Factored(self.left, (self.right @ other.left) @ other.right)  # (m, r₁), (r₁, n)
        return Factored(self.left, self.right @ other)

    def __rmatmul__(self, other: Tensor) -> "Factored":
        return Factored(other @ self.left, self.right)

    def entry(self, i: int, j: int) -> Tensor:
        """M[i, j] = Σ_k left[i, k] · right[k, j] (a 0-d tensor)."""
        return self.left[i] @ self.right[:, j]

    def grams(self) -> tuple[Tensor, Tensor]:
        """(LᵀL, R Rᵀ), each (r, r): what the norm is made of."""
        return self.left.T @ self.left, self.right @ self.right.T  # (r, r), (r, r)

    def norm(self) -> Tensor:
        """The Frobenius norm ‖L R‖_F = √(Σ_ab (LᵀL)_ab (R Rᵀ)_ab), through r × r matrices."""
        a, b = self.grams()
        return (a * b).sum().clamp_min(0).sqrt()

    def svd(self) -> tuple[Tensor, Tensor, Tensor]:
        """``U (m, r), S (r,), Vh (r, n)`` with ``L R = U diag(S) Vh``, S descending (module docstring)."""
        q_l, t_l = torch.linalg.qr(self.left)  # (m, r), (r, r)
        q_r, t_r = torch.linalg.qr(self.right.T)  # (n, r), (r, r)
        u, s, vh = torch.linalg.svd(t_l @ t_r.T)  # (r, r), (r,), (r, r)
        return q_l @ u, s, vh @ q_r.T

    def eigenvalues(self) -> Tensor:
        """The r eigenvalues of R L (complex, (r,)): every non-zero eigenvalue of the square L R
        (which has m − r more zeros)."""
        if self.shape[0] != self.shape[1]:
            raise error(ShapeError, "errors.qkov_not_square", shape=self.shape)
        return torch.linalg.eigvals(self.right @ self.left)  # (r,)

    def __repr__(self) -> str:
        return f"Factored({self.shape[0]}×{self.inner} @ {self.inner}×{self.shape[1]}, {self.left.dtype})"
