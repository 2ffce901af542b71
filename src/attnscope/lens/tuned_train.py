"""Training the tuned lens on the built-in corpus, and measuring it on held-out texts.

**The split** (:func:`split_builtin`): the distinct paragraphs of ``builtin:python-docs``
(:func:`attnscope.analysis.corpus.python_docs_paragraphs`, exact repeats dropped, the first kept)
are put in one random order drawn by NumPy's generator from ``seed``; the first ``held_out`` of
that order are held out, the next ``texts`` train. The held-out set depends only on the seed and
its size, never on how many texts train. Each text is cut to its first ``length`` tokens.

**The training** (:func:`train_tuned_lens`): every map but the last's (the identity: the final
distribution read through itself) by Adam (β = 0.9, 0.999; the default, peak rate 3e-4) or by SGD
with Nesterov momentum 0.9 (Belrose et al.'s choice — on SmolLM2 at rates 0.1 and 1.0 it sent the
middle layers' KL from ~15 to ~250 nats in one step, so it is not the default), no weight decay,
the rate rising linearly over the first tenth of the steps and falling linearly to zero after;
each step on ``batch`` texts taken in order from a seeded shuffle of the training texts
(reshuffled each pass). The loss of a point is the mean over the step's tokens of ``KL(P_final ‖ P_lens_p)`` in nats; the step's
loss is their sum over the points (each map only sees its own point's). Memory: the logits of one
point and ``chunk`` tokens at a time, (chunk, vocab) — never points × tokens × vocab.

**The measurement** (:func:`held_out_kl`): per held-out text and point, the mean over its tokens of
KL(P_final ‖ P_lens) for the logit lens and for the tuned lens.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from functools import partial
from typing import Callable, Iterator, Optional

import numpy as np
import torch

from ..analysis.corpus import python_docs_paragraphs
from ..errors import InputError
from ..i18n import error
from .stream import check_language_model, embed_value, points, read_out, stream_names
from .tuned import TunedLens, check_made_for, identity_lens

Tensor = torch.Tensor
CORPUS = "builtin:python-docs"
OPTIMIZERS = {"sgd": "SGD(momentum=0.9, nesterov=True, weight_decay=0)",
              "adam": "Adam(betas=(0.9, 0.999), eps=1e-8, weight_decay=0)"}


def split_builtin(texts: int, held_out: int, seed: int) -> tuple[list[int], list[int]]:
    """(training indices, held-out indices) into :func:`python_docs_paragraphs` (module docstring)."""
    paragraphs = python_docs_paragraphs()
    first: dict[str, int] = {}
    for i, (_, t) in enumerate(paragraphs):
        first.setdefault(t, i)
    distinct = sorted(first.values())
    if texts < 1 or held_out < 1 or texts + held_out > len(distinct):
        raise error(InputError, "errors.tuned_split", n=len(distinct), texts=texts, held=held_out)
    order = [distinct[int(i)] for i in np.random.default_rng(seed).permutation(len(distinct))]
    return order[held_out:held_out + texts], order[:held_out]


@contextmanager
def frozen(model) -> Iterator[None]:
    """The model's weights take no gradient inside (only the maps learn), as they were afterwards."""
    before = [(p, p.requires_grad) for p in model.parameters()]
    for p, _ in before:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, was in before:
            p.requires_grad_(was)


def stream_tokens(model, texts: list[str], length: int):
    """(every point's stream at the real tokens, each (N, d), in point order; final log-probabilities
    (N, V) float32; tokens per text) for ``texts`` cut to ``length`` tokens, run as one batch."""
    batch = model.encode(texts, truncate=True, max_length=length)
    with torch.no_grad():
        tr = model.trace(batch, names=stream_names(model))
        real = batch.attention_mask.to(model.device).bool()  # (B, L)
        hs = [(embed_value(tr, model) if p.name == "embed" else tr[p.name])[real] for p in points(model)]  # (N, d) each
        final_logp = torch.log_softmax(read_out(model, hs[-1]).float(), -1)  # (N, V)
    return hs, final_logp, [int(n) for n in batch.attention_mask.sum(1)]


def point_kl(model, h: Tensor, final_logp: Tensor, transform: Optional[Callable[[Tensor], Tensor]]) -> Tensor:
    """(n,) KL(P_final ‖ P_lens) in nats of ``h`` (n, d) read through ``transform`` (None: the logit lens)."""
    x = h if transform is None else transform(h).to(h.dtype)  # (n, d)
    logp = torch.log_softmax(read_out(model, x).float(), -1)  # (n, V)
    return (final_logp.exp() * (final_logp - logp)).sum(-1)  # (n,)


def affine(weight: Tensor, bias: Tensor, h: Tensor) -> Tensor:
    """``h @ weightᵀ + bias`` in float32 (the maps' precision): (n, d) → (n, d)."""
    return torch.nn.functional.linear(h.float(), weight, bias)  # (n, d)


def train_tuned_lens(model, *, texts: int = 400, held_out: int = 40, length: int = 64, steps: int = 300,
                     batch: int = 8, lr: float = 3e-4, optimizer: str = "adam", seed: int = 0, chunk: int = 256,
                     progress: Optional[Callable[[int, float], None]] = None) -> tuple[TunedLens, list[float]]:
    """Train a tuned lens for ``model`` (module docstring). Returns the lens (its ``settings`` say how
    it was made) and each step's loss: the mean over the trained points of the mean token KL, nats.
    ``progress(step, loss)`` is called after each step."""
    check_language_model(model, "the tuned lens")
    for name, value, low in (("texts", texts, 1), ("held_out", held_out, 1), ("length", length, 2),
                             ("steps", steps, 1), ("batch", batch, 1), ("chunk", chunk, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise error(InputError, "errors.tuned_setting", name=name, value=repr(value), low=low)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (math.isfinite(lr) and lr > 0):
        raise error(InputError, "errors.tuned_lr", value=repr(lr))
    if length > model.tokenizer.max_length:  # else the tokenizer's 'max_length must be …' names no option given
        raise error(InputError, "errors.tuned_length", value=length, model=model.name, n=model.tokenizer.max_length)
    if optimizer not in OPTIMIZERS:
        raise error(InputError, "errors.tuned_optimizer", value=repr(optimizer), known=", ".join(OPTIMIZERS))
    train_ids, held_ids = split_builtin(texts, held_out, seed)
    paragraphs = python_docs_paragraphs()
    settings = {"corpus": CORPUS, "split": f"distinct paragraphs in NumPy default_rng({seed}).permutation order: "
                f"the first {held_out} held out, the next {texts} train", "texts": texts, "held_out": held_out,
                "held_out_indices": held_ids, "length": length, "steps": steps, "batch": batch,
                "optimizer": OPTIMIZERS[optimizer], "lr": lr, "schedule": "linear warm-up over the first tenth "
                "of the steps, then linear decay to 0", "seed": seed,
                "loss": "sum over points of the mean token KL(P_final || P_lens), nats", "trained": "all points but the last"}
    lens = identity_lens(model, settings)
    weight = lens.weight.clone().requires_grad_(True)  # (P, d, d)
    bias = lens.bias.clone().requires_grad_(True)  # (P, d)
    opt: torch.optim.Optimizer
    if optimizer == "sgd":
        opt = torch.optim.SGD([weight, bias], lr=lr, momentum=0.9, nesterov=True)
    else:
        opt = torch.optim.Adam([weight, bias], lr=lr, betas=(0.9, 0.999), eps=1e-8)
    warm = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm
                                                 else (steps - s) / max(1, steps - warm))
    rng = np.random.default_rng(seed + 1)
    queue: list[int] = []
    losses: list[float] = []
    seen = 0
    started = time.perf_counter()
    with frozen(model):
        for step in range(steps):
            while len(queue) < batch:
                queue += [train_ids[int(i)] for i in rng.permutation(len(train_ids))]
            chosen, queue = queue[:batch], queue[batch:]
            hs, final_logp, _ = stream_tokens(model, [paragraphs[i][1] for i in chosen], length)
            n = final_logp.shape[0]
            seen += n
            total = 0.0
            for p in range(len(hs) - 1):
                for c in range(0, n, chunk):
                    with torch.enable_grad():
                        mapped = partial(affine, weight[p], bias[p])
                        loss = point_kl(model, hs[p][c:c + chunk], final_logp[c:c + chunk], mapped).sum() / n
                        loss.backward()
                    total += float(loss.detach())
            opt.step()
            schedule.step()
            opt.zero_grad(set_to_none=True)
            losses.append(total / (len(hs) - 1))
            if progress is not None:
                progress(step + 1, losses[-1])
    lens.weight, lens.bias = weight.detach(), bias.detach()
    lens.settings["train_seconds"] = round(time.perf_counter() - started, 1)
    lens.settings["tokens_seen"] = seen
    return lens, losses


def held_out_kl(model, lens: TunedLens, *, batch: int = 8, chunk: int = 256) -> dict:
    """Per held-out text (the lens's own ``held_out_indices``, cut to its ``length``) and point: the
    mean over the text's tokens of KL(P_final ‖ P_lens), nats, for the logit lens (``logit``) and
    the tuned lens (``tuned``). Returns ``{"points", "texts": [{index, where, tokens, logit, tuned}]}``."""
    check_made_for(lens, model)
    if "held_out_indices" not in lens.settings or "length" not in lens.settings:  # identity_lens, or a hand-made one
        raise error(InputError, "errors.tuned_no_held_out")
    paragraphs = python_docs_paragraphs()
    ids, length = lens.settings["held_out_indices"], int(lens.settings["length"])
    out = []
    with torch.no_grad():
        for s in range(0, len(ids), batch):
            chosen = ids[s:s + batch]
            hs, final_logp, counts = stream_tokens(model, [paragraphs[i][1] for i in chosen], length)
            per: dict[str, list[Tensor]] = {"logit": [], "tuned": []}  # P tensors (N,) each
            for p, h in enumerate(hs):
                for key, f in (("logit", None), ("tuned", partial(lens.apply, p))):
                    per[key].append(torch.cat([point_kl(model, h[c:c + chunk], final_logp[c:c + chunk], f)
                                               for c in range(0, len(h), chunk)]))
            bounds = np.cumsum([0] + counts)
            for j, i in enumerate(chosen):
                a, b = int(bounds[j]), int(bounds[j + 1])
                out.append({"index": i, "where": paragraphs[i][0], "tokens": counts[j],
                            **{k: [float(v[a:b].mean()) for v in rows] for k, rows in per.items()}})
    return {"points": lens.points, "texts": out}
