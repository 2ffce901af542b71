"""The exact twin of :mod:`attnscope.reference` for hand-sized calculations (explain, check).

A worked calculation promises every shown digit. float64 cannot keep that promise: 0.1·0.2 −
0.2·0.1 is 1.7e-18 there, and 4.445 comes out as 4.444999…, which rounds to 4.44. So the toy
problems and the checker compute here, in :mod:`decimal` with :data:`PREC` significant digits:

* the linear steps (Q = X·W_Q, K, V, the scores q·k, the products w·v of the weighted sum, the
  output projection) are *exact*: the inputs are read as the decimals they were written as
  (:func:`dec`), and sums and products of terminating decimals are terminating decimals, held
  exactly at this precision — an exact zero is 0 and 4.445 is 4.445;
* the transcendental steps (√d_k, exp, the softmax, QK-norm's RMS, rotary cos/sin) are correct
  to about :data:`PREC` digits. Their values are irrational (a weight is rational only when every
  score of its row is the same, and is then computed as exactly 1/n), so none of them sits on a
  half-way point and rounding them for display gives the true digits. Where the mathematics is
  exact although cos and sin are not — a query and a key turned by the same angle, whose rotations
  cancel — the score is computed from the offset (:func:`rotary_scores`), so a half-way score is
  recognised as one.

Arrays are NumPy object arrays of :class:`~decimal.Decimal` (masked scores are
``Decimal('-Infinity')``); :func:`floats` turns one into float64, correctly rounded. Every
function computes inside :data:`CTX` (the thread's default context has 28 digits).

Shapes follow :mod:`.reference`: ``q (L, d_k)``, ``k (S, d_k)``, ``v (S, d_v)``, rows of scores ``(L, S)``.
"""

from __future__ import annotations

import functools
import math
from decimal import Context, Decimal, DivisionByZero, InvalidOperation, localcontext
from fractions import Fraction
from typing import Optional, Sequence, Union

import numpy as np

from .reference import EXP_SHOW_LIMIT

__all__ = ["PREC", "CTX", "NOISE_DIGITS", "dec", "dec_binary", "array", "floats", "matmul", "exp", "score_factor", "prepare_qk",
           "exp_shift", "softmax_parts", "weighted_sum", "rms_norm", "rope_inv_freq", "rotate", "rotary_scores", "ZERO", "ONE",
           "NEG_INF"]

#: Significant digits of every Decimal operation. Hand inputs have at most ~17 digits, so a product of
#: two has at most ~34 and a score (a product of two such sums) ~70: held exactly.
PREC = 100

#: The context every operation runs in (exponents are practically unbounded: e^-1000 is no 0).
CTX = Context(prec=PREC, Emax=999_999_999, Emin=-999_999_999, traps=[InvalidOperation, DivisionByZero])

ZERO, ONE = Decimal(0), Decimal(1)
NEG_INF = Decimal("-Infinity")


def dec(x) -> Decimal:
    """A number as the decimal it was written as: a float by its shortest form (0.1 is 1/10, not
    the binary 0.1000000000000000055…), an int exactly, a Fraction to :data:`PREC` digits."""
    if isinstance(x, Decimal):
        return x
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("a bool is not a number here")
    if isinstance(x, (int, np.integer)):
        return Decimal(int(x))
    if isinstance(x, Fraction):
        return _fraction(x)
    x = float(x)
    if math.isnan(x):
        raise ValueError("NaN has no decimal value")
    if math.isinf(x):
        return Decimal("Infinity") if x > 0 else NEG_INF
    return Decimal(repr(x))


def dec_binary(x) -> Decimal:
    """A float64 result (a model's number) by its exact binary value."""
    if isinstance(x, Decimal):
        return x
    x = float(x)
    if math.isnan(x):
        raise ValueError("NaN has no decimal value")
    return Decimal(x)  # exact, ±Infinity included


def _fraction(f: Fraction) -> Decimal:
    """Exact when the denominator divides a power of ten, else to PREC digits."""
    n, d = f.numerator, f.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d == 1:
        k = max(twos, fives)
        return Decimal(n * 2 ** (k - twos) * 5 ** (k - fives)).scaleb(-k)
    return CTX.divide(Decimal(f.numerator), Decimal(f.denominator))


def array(a, binary: bool = False) -> np.ndarray:
    """An object array of Decimals from any array-like (inputs by :func:`dec`; ``binary``: float64
    results by :func:`dec_binary`)."""
    return _map(dec_binary if binary else dec, np.asarray(a, dtype=object))


def floats(a) -> np.ndarray:
    """float64 of an object array of Decimals (each correctly rounded)."""
    return np.asarray(a, dtype=object).astype(np.float64)


def _map(fn, a: np.ndarray) -> np.ndarray:
    out = np.empty(a.shape, dtype=object)
    for idx, x in np.ndenumerate(a):
        out[idx] = fn(x)
    return out


#: A sum this many digits smaller than its largest term is cancellation noise of the 100-digit
#: transcendental steps (two rotated vectors whose dot product is 0): it is 0. Exact terms cannot
#: get there (hand inputs have ≤ ~17 digits, so an exact sum is 0 or ≥ 10^-70 of its terms).
NOISE_DIGITS = PREC - 10

_ROUGH = Context(prec=6, Emax=CTX.Emax, Emin=CTX.Emin, traps=[])

#: CTX without the InvalidOperation trap, for products inside NumPy: a learner's −∞ times 0 is NaN
#: there (nothing follows from it), not an exception raised through an object matmul.
_QUIET = Context(prec=PREC, Emax=CTX.Emax, Emin=CTX.Emin, traps=[DivisionByZero])


def _denoise(out: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Entries of ``out`` at most 10^-NOISE_DIGITS of ``bound`` (the sum of |terms|) become 0."""
    with localcontext(_ROUGH):
        for idx, x in np.ndenumerate(out):
            if x.is_finite() and x != 0 and abs(x) <= bound[idx].scaleb(-NOISE_DIGITS):
                out[idx] = ZERO
    return out


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of Decimal arrays, exact for terminating decimals (see :data:`NOISE_DIGITS`)."""
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if a.shape[-1] == 0:
        return np.full(a.shape[:-1] + b.shape[-1:], ZERO, dtype=object)
    with localcontext(_QUIET):
        out = a @ b
    with localcontext(_ROUGH):
        bound = np.abs(a) @ np.abs(b)
    return _denoise(out, bound)


def exp(a: np.ndarray) -> np.ndarray:
    """e^x entrywise: e^−∞ = 0 and e^0 = 1 exactly."""
    return _map(lambda x: ZERO if x == NEG_INF else CTX.exp(x), np.asarray(a, dtype=object))


# ----------------------------------------------------------------------------------------------
# scorings
# ----------------------------------------------------------------------------------------------

def score_factor(scoring: str, d_k: int, temperature=None, query_pre_attn_scalar=None) -> Decimal:
    """The factor on q'·k' as a Decimal: 1/√d_k ("scaled", "qknorm"; exact 1/8 at d_k = 64),
    1 ("unscaled"), 1/d_k ("inv_d"), 1/τ ("cosine"), query_pre_attn_scalar^(−½) when given. A
    scoring registered elsewhere is taken at its float64 factor."""
    from .scorings import DEFAULT_COSINE_TEMPERATURE, get_scoring
    d = max(int(d_k), 1)
    if query_pre_attn_scalar is not None:
        return CTX.divide(ONE, CTX.sqrt(dec(query_pre_attn_scalar)))
    if scoring in ("scaled", "qknorm"):
        return CTX.divide(ONE, CTX.sqrt(Decimal(d)))
    if scoring == "unscaled":
        return ONE
    if scoring == "inv_d":
        return CTX.divide(ONE, Decimal(d))
    if scoring == "cosine":
        return CTX.divide(ONE, dec(DEFAULT_COSINE_TEMPERATURE if temperature is None else temperature))
    return dec_binary(float(get_scoring(scoring).factor_for(d, temperature)))


def prepare_qk(q: np.ndarray, k: np.ndarray, scoring: str, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """q', k' as the scoring prepares them: cosine x / max(‖x‖, ε), qknorm (x − mean)/√(var + ε)
    (biased variance, no affine), else unchanged. A scoring registered elsewhere with a preparation
    is prepared in float64 (:mod:`.reference`)."""
    from .scorings import get_scoring
    if scoring == "cosine":
        return _unit_rows(q, dec(eps)), _unit_rows(k, dec(eps))
    if scoring == "qknorm":
        return _layer_norm_rows(q, dec(eps)), _layer_norm_rows(k, dec(eps))
    if get_scoring(scoring).prepare_np is None:
        return q, k
    from . import reference as R
    qf, kf = R.prepare_qk(floats(q), floats(k), scoring, eps)
    return array(qf, binary=True), array(kf, binary=True)


def _unit_rows(x: np.ndarray, eps: Decimal) -> np.ndarray:
    out = np.empty(x.shape, dtype=object)
    with localcontext(CTX):
        for i, row in enumerate(x):
            norm = CTX.sqrt(sum((a * a for a in row), ZERO))
            out[i] = [a / max(norm, eps) for a in row]
    return out


def _layer_norm_rows(x: np.ndarray, eps: Decimal) -> np.ndarray:
    out = np.empty(x.shape, dtype=object)
    n = Decimal(x.shape[1])
    with localcontext(CTX):
        for i, row in enumerate(x):
            mean = sum(row, ZERO) / n
            var = sum(((a - mean) ** 2 for a in row), ZERO) / n
            spread = CTX.sqrt(var + eps)
            out[i] = [(a - mean) / spread for a in row]
    return out


# ----------------------------------------------------------------------------------------------
# softmax and the weighted sum
# ----------------------------------------------------------------------------------------------

def exp_shift(masked: np.ndarray) -> np.ndarray:
    """(L,) what a worked calculation subtracts before exp in each row: its largest finite score
    when that is beyond ±:data:`~.reference.EXP_SHOW_LIMIT`, else 0 (see :func:`.reference.exp_shift`)."""
    out = np.empty(masked.shape[0], dtype=object)
    for i, row in enumerate(masked):
        finite = [x for x in row if x.is_finite()]
        m = max(finite) if finite else ZERO
        out[i] = m if abs(m) > EXP_SHOW_LIMIT else ZERO
    return out


def softmax_parts(masked: np.ndarray, shift: Optional[np.ndarray] = None) -> dict:
    """The softmax of each row of ``masked (L, S)`` as a learner writes it: ``shift (L,)``
    (:func:`exp_shift` unless given), ``exp`` = e^(masked − shift) (0 where −∞), ``sum (L,)``
    and ``weights`` (L, S). A row whose visible scores are all equal gets exactly 1/n; a row that
    sees no key gets 0."""
    masked = np.asarray(masked, dtype=object)
    shift = exp_shift(masked) if shift is None else np.asarray(shift, dtype=object)
    with localcontext(CTX):
        shifted = np.empty(masked.shape, dtype=object)
        for idx, x in np.ndenumerate(masked):
            shifted[idx] = x if x == NEG_INF else x - shift[idx[0]]
    e = exp(shifted)
    sums = np.empty(masked.shape[0], dtype=object)
    weights = np.full(masked.shape, ZERO, dtype=object)
    with localcontext(CTX):
        for i, row in enumerate(masked):
            sums[i] = sum(e[i], ZERO)
            seen = [j for j, x in enumerate(row) if x != NEG_INF]
            if not seen:
                continue
            if len({row[j] for j in seen}) == 1:  # e^(s−s) = 1 for every key: exactly 1/n
                for j in seen:
                    weights[i, j] = ONE / Decimal(len(seen))
            else:
                for j in seen:
                    weights[i, j] = e[i, j] / sums[i]
    return {"shift": shift, "exp": e, "sum": sums, "weights": weights}


def weighted_sum(weights: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(products, out)``: products[i, j, c] = weights[i, j]·v[j, c] (L, S, d_v) and their sums
    over j, out (L, d_v)."""
    weights, v = np.asarray(weights, dtype=object), np.asarray(v, dtype=object)
    with localcontext(CTX):
        prods = weights[:, :, None] * v[None, :, :]  # (L, S, d_v)
        out = prods.sum(axis=1) if prods.shape[1] else np.full((weights.shape[0], v.shape[1]), ZERO, dtype=object)
    if prods.shape[1]:
        with localcontext(_ROUGH):
            out = _denoise(out, np.abs(prods).sum(axis=1))
    return prods, out


# ----------------------------------------------------------------------------------------------
# today's decoders: RMSNorm and rotary positions
# ----------------------------------------------------------------------------------------------

def rms_norm(x: np.ndarray, weight=None, eps: float = 1e-6, offset: float = 0.0) -> np.ndarray:
    """``x / √(mean(x²) + ε) · (offset + w)`` over each row (w = 1 when None and offset 0)."""
    x = np.asarray(x, dtype=object)
    n = Decimal(x.shape[1])
    off = dec(offset)
    w = None if weight is None else [dec(a) for a in np.asarray(weight, dtype=object).ravel()]
    out = np.empty(x.shape, dtype=object)
    with localcontext(CTX):
        for i, row in enumerate(x):
            r = CTX.sqrt(sum((a * a for a in row), ZERO) / n + dec(eps))
            scale = [off + (w[c] if w is not None else (ZERO if off else ONE)) for c in range(len(row))]
            out[i] = [a / r * s for a, s in zip(row, scale)]
    return out


def rope_inv_freq(d: int, base: float) -> list:
    """``base^(−2i/d)`` for i = 0 … d/2 − 1."""
    b = dec(base)
    return [CTX.power(b, CTX.divide(Decimal(-2 * i), Decimal(d))) if i else ONE for i in range(d // 2)]


def rotate(x: np.ndarray, positions: Union[Sequence, np.ndarray], inv_freq: Sequence, pairs: tuple) -> np.ndarray:
    """Each pair (a[i], b[i]) of row l of ``x`` turned by positions[l]·inv_freq[i] (pairs from
    :func:`.reference.rope_pairs`)."""
    x = np.asarray(x, dtype=object)
    a, b = pairs
    out = np.empty(x.shape, dtype=object)
    with localcontext(CTX):
        for l, row in enumerate(x):
            p = dec(positions[l])
            for i in range(len(a)):
                phi = p * inv_freq[i]
                c, s = _cos(phi), _sin(phi)
                xa, xb = row[a[i]], row[b[i]]
                out[l, a[i]] = xa * c - xb * s
                out[l, b[i]] = xa * s + xb * c
    return out


def rotary_scores(q: np.ndarray, k: np.ndarray, q_pos: Union[Sequence, np.ndarray],
                  k_pos: Union[Sequence, np.ndarray], inv_freq: Sequence, pairs: tuple) -> np.ndarray:
    """``q'_m · k'_n`` of q (L, d) and k (S, d) *before* the rotation, from their offset alone
    (L, S): the turns by m·θ and n·θ combine into one by (n − m)·θ (R(mθ)ᵀR(nθ) = R((n − m)θ)),

        Σ_i (q_a k_a + q_b k_b)·cos((n − m)θ_i) + (q_b k_a − q_a k_b)·sin((n − m)θ_i),

    so a query and a key at the same position give the plain dot product q·k, exactly — the 100-digit
    rotated vectors multiplied out miss it by ~1e-100, which decides a half-way score's rounding.
    Elsewhere the value is irrational (Lindemann–Weierstrass: cos and sin of a nonzero algebraic
    angle are transcendental) unless every pair's coefficients vanish, which are exact here too."""
    q, k = np.asarray(q, dtype=object), np.asarray(k, dtype=object)
    a, b = pairs
    trig: dict = {}  # (offset, pair) -> (cos, sin)
    out = np.empty((q.shape[0], k.shape[0]), dtype=object)
    bound = np.empty(out.shape, dtype=object)
    with localcontext(CTX):
        for m, qr in enumerate(q):
            for n, kr in enumerate(k):
                off = dec(k_pos[n]) - dec(q_pos[m])
                total, size = ZERO, ZERO
                for i in range(len(a)):
                    qa, qb, ka, kb = qr[a[i]], qr[b[i]], kr[a[i]], kr[b[i]]
                    c, s = qa * ka + qb * kb, qb * ka - qa * kb  # exact
                    if off == 0 or (c == 0 and s == 0):
                        total += c
                    else:
                        if (off, i) not in trig:
                            phi = off * inv_freq[i]
                            trig[(off, i)] = (_cos(phi), _sin(phi))
                        cos, sin = trig[(off, i)]
                        total += c * cos + s * sin
                    size += abs(qa * ka) + abs(qb * kb) + abs(qb * ka) + abs(qa * kb)
                out[m, n], bound[m, n] = total, size
    return _denoise(out, bound)


@functools.cache
def _pi() -> Decimal:
    """π to PREC + 20 digits (the decimal module's recipe), computed once."""
    with localcontext(Context(prec=PREC + 20)):
        lasts, t, s, n, na, d, da = Decimal(0), Decimal(3), Decimal(3), 1, 0, 0, 24
        while s != lasts:
            lasts = s
            n, na = n + na, na + 8
            d, da = d + da, da + 32
            t = (t * n) / d
            s += t
        return +s


def _reduce(x: Decimal) -> Decimal:
    """x mod 2π into (−π, π]."""
    with localcontext(Context(prec=PREC + 20, Emax=CTX.Emax, Emin=CTX.Emin)):
        two_pi = 2 * _pi()
        return x - two_pi * (x / two_pi).to_integral_value()


def _cos(x: Decimal) -> Decimal:
    return ONE if x == 0 else _taylor(_reduce(x), odd=False)


def _sin(x: Decimal) -> Decimal:
    return ZERO if x == 0 else _taylor(_reduce(x), odd=True)


def _taylor(x: Decimal, *, odd: bool) -> Decimal:
    """sin (odd powers) or cos (even powers) of a reduced x, summed until a term no longer
    changes the sum at ten guard digits."""
    with localcontext(Context(prec=PREC + 10)):
        first = x if odd else Decimal(1)
        i, lasts, s, fact, num, sign = (1 if odd else 0), Decimal(0), first, 1, first, 1
        while s != lasts:
            lasts = s
            i += 2
            fact *= i * (i - 1)
            num *= x * x
            sign *= -1
            s += num / fact * sign
    return CTX.plus(s)
