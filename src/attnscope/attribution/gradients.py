"""Gradient methods: gradient × input, integrated gradients, gradient-weighted rollout (issue 27).

Where the input is: the **embedding output** (hook point ``embed.out``; T5/BART
``encoder.embed.out``), the vector each position hands to the first layer (token + position +
segment rows, scaled and LayerNorm-ed as the family does). Not the token rows themselves: in BERT
and DeBERTa they go straight into a LayerNorm, which is scale-invariant, so ``x · ∂f/∂x`` there is
(exactly, for DeBERTa-v3 without position rows) zero and says nothing. A zero baseline there is
"the first layer sees nothing". In pre-norm models (Llama, Qwen, Gemma, T5) the target is not
continuous there — the RMSNorms scale any tiny input back up (a tiny Llama in float64: f(0) = 0,
f(10⁻⁹·x) = 2.78, f(x) = 4.02) — so no number of steps closes the completeness gap; the check
reports it. ``baseline=token_id`` (that token at every position, positions kept) is continuous
there: tiny Gemma 3 and Llama complete to 4e-5 and 3e-6 at 200 steps.

* ``grad_input``: ``s_j = Σ_d x_jd · ∂f/∂x_jd`` (``details["l2"]``: ``‖x_j ⊙ ∂f/∂x_j‖₂``);
* ``integrated_gradients`` (Sundararajan, Taly & Yan 2017, "Axiomatic attribution for deep
  networks"): ``IG_j = Σ_d (x − b)_jd · ∫₀¹ ∂f/∂x_jd (b + α(x − b)) dα`` with ``steps`` intervals of
  the midpoint (default) or trapezoid rule, in batches; ``power`` p > 1 places the points as
  ``α = u^p`` (u on the rule's grid, weights times ``p·u^(p−1)``: the same integral, with its points
  crowded near the baseline, where a pre-norm model's target moves fastest); completeness
  ``Σ_j IG_j = f(x) − f(b)`` is checked (the gap in ``details``, a warning past 1 %);
* ``attn_grad`` (Chefer, Gur & Wolf 2021, "Generic attention-model explainability for interpreting
  bi-modal and encoder-decoder transformers", ICCV 2021 — the self-attention rule, eqs. 5–6):
  per layer ``Ā = E_h[(∇A ⊙ A)⁺]``, ``R ← R + Ā·R`` from ``R = I``; ``scores`` the rows of R
  normalised to sum 1 (``details["relevance"]``: R itself). T5/BART: the encoder's self-attention
  only (the cross-attention rules of that paper are not implemented), for the decoder's first logit.

``f`` is the target of :mod:`attnscope.attribution.target`. The model is left as it was: its
parameters are not touched (gradients are taken with ``torch.autograd.grad`` w.r.t. the rows,
never accumulated into ``.grad``) and every hook goes however the call ends.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Optional

import torch
from tqdm.auto import tqdm

from ..config import is_seq2seq
from ..errors import InputError
from ..i18n import error
from .base import Attribution, AttributionMethod, check_grad, register_method
from .target import Target, resolve_target, target_values

Tensor = torch.Tensor

#: |Σ IG − (f(x) − f(b))| above this share of |f(x) − f(b)| is reported as a warning
COMPLETENESS_TOLERANCE = 0.01


def check_options(method: str, options: dict, allowed: tuple) -> None:
    extra = sorted(set(options) - set(allowed))
    if extra:
        known = ", ".join(allowed) or "none"
        raise error(InputError, "errors.attribution_unknown_option", method=method, option=repr(extra[0]), known=known)


def rows_name(model) -> str:
    """The hook point of the embedding output that the gradients are taken at."""
    return "encoder.embed.out" if is_seq2seq(model) else "embed.out"


class Prepared:
    """One text read once: its batch ``(1, L)``, its rows ``x (L, d)`` and the resolved target."""

    def __init__(self, model, text: str, target, method: str) -> None:
        check_grad(model, method)
        batch = model.encode(text)
        self.tokens: list[str] = batch.tokens[0]
        self.ids = batch.input_ids.to(model.device)  # (1, L)
        self.mask = batch.attention_mask.to(model.device)  # (1, L)
        tt = batch.token_type_ids
        self.tt: Optional[Tensor] = None if tt is None or is_seq2seq(model) else tt.to(model.device)  # (1, L)
        kept: list[Tensor] = []

        def keep(t: Tensor, name: str) -> None:
            kept.append(t.detach())  # (1, L, d)

        with model.hooks({rows_name(model): keep}):
            self.target: Target = resolve_target(model, self.ids, self.mask, self.tt, target)
        self.x = kept[0][0]  # (L, d)
        self.model = model

    def values(self, rows: Tensor) -> Tensor:
        """The target ``(n,)`` of ``n`` copies whose embedding outputs are ``rows (n, L, d)``, no gradient."""
        n = rows.shape[0]
        with torch.no_grad(), self.model.hooks({rows_name(self.model): lambda t, name: rows}):
            tt = None if self.tt is None else self.tt.expand(n, -1)
            return target_values(self.model, self.target, self.ids.expand(n, -1), self.mask.expand(n, -1), tt)  # (n,)

    def run(self, rows: Tensor) -> tuple[Tensor, Tensor]:
        """The target ``(n,)`` of ``n`` copies of the text whose embedding outputs are ``rows (n, L, d)``, and
        its gradient w.r.t. them ``(n, L, d)``."""
        n = rows.shape[0]
        rows = rows.detach().requires_grad_(True)  # the one leaf: parameters' .grad stay untouched
        with torch.enable_grad(), self.model.hooks({rows_name(self.model): lambda t, name: rows}):
            tt = None if self.tt is None else self.tt.expand(n, -1)
            values = target_values(self.model, self.target, self.ids.expand(n, -1), self.mask.expand(n, -1), tt)  # (n,)
            (grad,) = torch.autograd.grad(values.sum(), rows)  # (n, L, d): the copies do not interact
        return values.detach(), grad


def output_attribution(method: str, p: Prepared, scores: Tensor, meaning: str, details: dict) -> Attribution:
    details = {"target": p.target.words, "input": rows_name(p.model), **details}
    return Attribution(method=method, kind="output", tokens=p.tokens, scores=scores, meaning=meaning,
                       target=p.target.value, details=details)


def no_layer(method: str, layer) -> None:
    if layer is not None:
        raise error(InputError, "errors.attribution_output_no_layer", method=method)


def grad_input(model, text: str, *, layer: Optional[int] = None, target=None, **options) -> Attribution:
    """Gradient × input at the embedding output: ``scores (L,)`` = ``Σ_d x ⊙ ∂f/∂x``;
    ``details``: ``l2 (L,)`` the L2 norm of ``x ⊙ ∂f/∂x`` per token, ``value`` = f(x)."""
    no_layer("grad_input", layer)
    check_options("grad_input", options, ())
    p = Prepared(model, text, target, "grad_input")
    value, grad = p.run(p.x.unsqueeze(0))  # (1,), (1, L, d)
    gx = p.x * grad[0]  # (L, d)
    return output_attribution("grad_input", p, gx.sum(-1),
                              "gradient × input summed over the embedding features: the first-order change of the "
                              "target when the position's embedding output is zeroed (positive: the token raises it)",
                              {"l2": gx.norm(dim=-1), "value": float(value[0])})


def check_steps(steps, batch_size) -> None:
    for name, v in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise error(InputError, "errors.attribution_positive_int", name=name, value=repr(v))


def baseline_rows(p: Prepared, baseline) -> Tensor:
    """The baseline ``(L, d)`` at the embedding output: zero (None/"zero"); a token id (int): the
    embedding output of the text with every token replaced by that one (positions kept); or a tensor
    ``(d,)`` (every position) or ``(L, d)``."""
    x = p.x
    if baseline is None or (isinstance(baseline, str) and baseline == "zero"):
        return torch.zeros_like(x)  # (L, d)
    if isinstance(baseline, int) and not isinstance(baseline, bool):
        V = p.model.config.vocab_size
        if not 0 <= baseline < V:
            raise error(InputError, "errors.attribution_baseline_token", token=baseline, last=V - 1)
        kept: list[Tensor] = []
        def keep(t: Tensor, name: str) -> None:
            kept.append(t.detach())  # (1, L, d)

        with torch.no_grad(), p.model.hooks({rows_name(p.model): keep}):
            target_values(p.model, p.target, torch.full_like(p.ids, baseline), p.mask, p.tt)
        return kept[0][0]  # (L, d)
    if not isinstance(baseline, torch.Tensor):
        raise error(InputError, "errors.attribution_baseline_kind", baseline=repr(baseline))
    if tuple(baseline.shape) not in (tuple(x.shape), tuple(x.shape[1:])):
        raise error(InputError, "errors.attribution_baseline_shape", row=str(tuple(x.shape[1:])), full=str(tuple(x.shape)),
                    got=str(tuple(baseline.shape)))
    if not bool(torch.isfinite(baseline).all()):
        raise error(InputError, "errors.attribution_baseline_nan")
    return baseline.to(device=x.device, dtype=x.dtype).expand_as(x)  # (L, d)


#: the quadrature rules integrated gradients takes (``rule=``)
IG_RULES = ("midpoint", "trapezoid")


def ig_points(steps: int, rule: str = "midpoint", power: float = 1.0) -> tuple[Tensor, Tensor]:
    """The points ``α (n,)`` on the path and their weights ``(n,)`` (float64, summing to 1):
    ``steps`` intervals of ``rule`` on u ∈ [0, 1] — midpoint: ``u = (k + ½) / steps``, weight
    ``1 / steps``; trapezoid: ``u = k / steps`` (k = 0..steps), weight ``1 / steps``, halved at both
    ends — then ``α = u^power`` with the weights times ``power · u^(power − 1)``. A point of weight 0
    (u = 0 when power > 1) is left out: no gradient is taken there."""
    if rule not in IG_RULES:
        raise error(InputError, "errors.attribution_ig_rule", rule=repr(rule), rules=", ".join(IG_RULES))
    if isinstance(power, bool) or not isinstance(power, (int, float)) or not 1 <= power <= 16:
        raise error(InputError, "errors.attribution_ig_power", power=repr(power))
    if rule == "midpoint":
        u = (torch.arange(steps, dtype=torch.float64) + 0.5) / steps  # (steps,)
        w = torch.full((steps,), 1.0 / steps, dtype=torch.float64)
    else:
        u = torch.arange(steps + 1, dtype=torch.float64) / steps  # (steps + 1,)
        w = torch.full((steps + 1,), 1.0 / steps, dtype=torch.float64)
        w[0] = w[-1] = 0.5 / steps
    w = w * power * u ** (power - 1)  # 0⁰ = 1: power 1 keeps the rule's own weights
    keep = w > 0
    return u[keep] ** power, w[keep]


def integrated_gradients(model, text: str, *, layer: Optional[int] = None, target=None, steps: int = 50,
                         baseline=None, batch_size: int = 16, rule: str = "midpoint", power: float = 1.0,
                         progress: Optional[bool] = None, **options) -> Attribution:
    """Integrated gradients from ``baseline`` (default: a zero embedding output) to the text.

    ``steps`` intervals of ``rule`` (``"midpoint"``: ``α_k = (k + ½) / steps``, weight ``1/steps``
    each; ``"trapezoid"``: ``k / steps``, the ends halved) with the points at ``u^power``
    (:func:`ig_points`); ``batch_size`` points per pass, then one pass for f(b) and f(x).
    ``details``: ``value`` f(x), ``baseline_value`` f(b), ``completeness_gap`` Σ IG − (f(x) − f(b)),
    ``relative_gap`` its share of |f(x) − f(b)|, ``steps``, ``rule``, ``power``, ``gradients`` (the
    points a gradient was taken at). ``progress``: a progress bar (None: only on a terminal and when
    more than one pass is needed).
    """
    no_layer("integrated_gradients", layer)
    check_options("integrated_gradients", options, ())
    check_steps(steps, batch_size)
    alphas, weights = ig_points(steps, rule, power)  # (n,) each
    p = Prepared(model, text, target, "integrated_gradients")
    if isinstance(baseline, numbers.Integral) and not isinstance(baseline, bool):
        baseline = int(baseline)  # a token id from NumPy (np.int64) as the int it is
    b = baseline_rows(p, baseline)  # (L, d)
    delta = p.x - b  # (L, d)
    # the midpoint rule never takes the gradient at the baseline itself, where a zero embedding output
    # meets the first RMSNorm of a pre-norm model at its singular point (nor does power > 1)
    mean_grad = torch.zeros_like(p.x)  # (L, d): ∫₀¹ ∂f/∂x dα
    chunks = range(0, alphas.shape[0], batch_size)
    show = None if progress is None and len(chunks) > 1 else bool(progress)
    for k in tqdm(chunks, desc="integrated gradients", unit="batch", disable=None if show is None else not show):
        a = alphas[k:k + batch_size].to(device=p.x.device, dtype=p.x.dtype)  # (n,)
        w = weights[k:k + batch_size].to(device=p.x.device, dtype=p.x.dtype)  # (n,)
        _, grad = p.run(b + a[:, None, None] * delta)  # (n, L, d)
        mean_grad += (w[:, None, None] * grad).sum(0)  # (L, d)
    scores = (delta * mean_grad).sum(-1)  # (L,)
    f = p.values(torch.stack([b, p.x]))  # (2,): f(baseline), f(x)
    change = float(f[-1] - f[0])
    gap = float(scores.sum()) - change
    rel = abs(gap) / abs(change) if change != 0 else (0.0 if gap == 0 else float("inf"))
    if rel > COMPLETENESS_TOLERANCE:
        warnings.warn(f"integrated gradients: the scores sum to {float(scores.sum()):.6g} but f(x) − f(baseline) = "
                      f"{change:.6g} (gap {100 * rel:.2g} % of it, steps={steps}, rule={rule}, power={power}); use more "
                      f"steps, power=3 (points crowded near the baseline), or "
                      f"baseline=<a token id> where the target jumps at a zero embedding (pre-norm models)", stacklevel=2)
    return output_attribution(
        "integrated_gradients", p, scores,
        "integrated gradients: the share of f(x) − f(baseline) that the position's embedding brings along the straight path "
        "from the baseline (the scores sum to that difference)",
        {"value": float(f[-1]), "baseline_value": float(f[0]), "completeness_gap": gap, "relative_gap": rel,
         "steps": steps, "rule": rule, "power": power, "gradients": int(alphas.shape[0]),
         "baseline": ("zero embedding output" if baseline is None or isinstance(baseline, str)
                                        else f"token {baseline} at every position" if isinstance(baseline, int) else "given")})


def attn_grad(model, text: str, *, layer: Optional[int] = None, target=None, **options) -> Attribution:
    """Gradient-weighted rollout (Chefer et al. 2021, the self-attention rule): ``scores (L, L)`` the
    row-normalised relevance R up to ``layer``; ``per_layer (n_layers, L, L)`` each layer's
    ``Ā = E_h[(∇A ⊙ A)⁺]`` (grouped-query models: the mean over the query heads; windowed and causal
    layers: A is 0 outside the mask, so Ā is too); ``details["relevance"]`` R before the rows are
    normalised."""
    check_options("attn_grad", options, ())
    p = Prepared(model, text, target, "attn_grad")
    prefix = "encoder." if is_seq2seq(model) else ""
    n_layers = model.config.n_layers
    names = [f"{prefix}layers.{i}.attn.weights" for i in range(n_layers)]
    kept: dict[str, Tensor] = {}

    def keep(t: Tensor, name: str) -> None:
        if name in kept:  # a layer module run twice would hand back only its last weights
            raise error(InputError, "errors.attribution_layer_twice", name=name)
        kept[name] = t  # (1, H, L, L): the weights the output is computed from

    attn: list[Tensor] = []
    n = p.x.shape[0]
    eye = torch.eye(n, dtype=p.x.dtype, device=p.x.device)  # (L, L)
    with torch.enable_grad():
        rows = p.x.unsqueeze(0).detach().requires_grad_(True)  # (1, L, d)
        hooks = {rows_name(model): lambda t, name: rows, **{nm: keep for nm in names}}
        with model.hooks(hooks):
            value = target_values(model, p.target, p.ids, p.mask, p.tt)  # (1,)
            missing = [nm for nm in names if nm not in kept]
            if missing:
                raise error(InputError, "errors.attribution_no_weights", model=repr(model.name), name=missing[0])
            grads = torch.autograd.grad(value.sum(), [kept[nm] for nm in names], allow_unused=True)
    for nm, g in zip(names, grads):
        A = kept[nm].detach()[0]  # (H, L, L)
        g = torch.zeros_like(A) if g is None else g[0]  # (H, L, L); None: the layer does not reach the target
        attn.append((g * A).clamp(min=0).mean(0))  # (L, L)
    per_layer = torch.stack(attn)  # (n_layers, L, L)
    last = n_layers - 1 if layer is None else layer
    R = eye.clone()  # (L, L)
    for i in range(last + 1):
        R = R + per_layer[i] @ R  # (L, L)
    scores = R / R.sum(-1, keepdim=True)  # (L, L): R ≥ I, so every row sum is ≥ 1
    return Attribution(
        method="attn_grad", kind="tokens", tokens=p.tokens, scores=scores,
        meaning="gradient-weighted rollout (Chefer et al. 2021): the relevance of input token j to position i, "
                "positive gradient × attention averaged over heads and rolled out with the residual, rows summing to 1",
        per_layer=per_layer, layer=last, target=p.target.value,
        details={"relevance": R, "value": float(value.detach()[0]), "target": p.target.words,
                 "attention": "encoder self-attention" if prefix else "self-attention"})


SOURCE_IG = "Sundararajan, Taly & Yan 2017, Axiomatic attribution for deep networks (ICML)"
SOURCE_CHEFER = ("Chefer, Gur & Wolf 2021, Generic attention-model explainability for interpreting bi-modal and "
                 "encoder-decoder transformers (ICCV)")

register_method(AttributionMethod(
    "grad_input", "output", grad_input, needs_grad=True,
    words="gradient × input at the embedding output, summed over features",
    source="Shrikumar et al. 2016; Denil et al. 2014"))
register_method(AttributionMethod(
    "integrated_gradients", "output", integrated_gradients, needs_grad=True,
    words="integrated gradients from a zero embedding output (midpoint rule, steps=50), with the completeness check",
    source=SOURCE_IG))
register_method(AttributionMethod(
    "attn_grad", "tokens", attn_grad, needs_grad=True,
    words="gradient-weighted attention rollout: E_h[(∇A ⊙ A)+] per layer, R ← R + Ā·R from I, rows normalised",
    source=SOURCE_CHEFER))
