"""One run: train a (task, variant, d_k, seed) and measure it every ``eval_every`` steps."""

from __future__ import annotations

import math
import time
from typing import cast

import torch
import torch.nn.functional as F

from ..base import torch_threads
from ..tasks import IGNORE, eval_set, make_task
from .model import Probe, build_model, encoder_layers
from .settings import Settings
from .verdicts import mean_finite, run_flags


def lr_factor(step: int, steps: int, warmup_frac: float, final_frac: float) -> float:
    """Linear warm-up to 1 over ``warmup_frac·steps`` steps, then cosine decay to ``final_frac``."""
    warm = max(1, round(warmup_frac * steps))
    if step < warm:
        return (step + 1) / warm
    t = (step - warm) / max(1, steps - warm)
    return final_frac + (1 - final_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))


def loss_fn(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of logits (B, L, V) against targets (B, L), positions marked IGNORE left out."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)


# ----------------------------------------------------------------------------------------------
# one run
# ----------------------------------------------------------------------------------------------

def train_one(spec: dict) -> dict:
    """Train one (task, variant, d_k, seed) and return its measurements (JSON-able).

    ``spec`` holds ``task`` (options from :func:`tasks.task_options`), ``variant``, ``d_k``,
    ``seed``, ``eval_seed`` and ``settings`` (a dict of :class:`Settings` with scalars per task).
    Runs on one thread (restored afterwards) so that the numbers are bit-reproducible.
    """
    with torch_threads(1):
        return _train_one(spec)


def _train_one(spec: dict) -> dict:
    t0 = time.perf_counter()
    task = make_task(**spec["task"])
    s = Settings(**{**spec["settings"], "tasks": (task.name,)})
    variant, d_k, seed = spec["variant"], spec["d_k"], spec["seed"]
    steps, B = spec["steps"], spec["batch"]
    model = build_model(task, variant, d_k, s, seed)
    probe = Probe(model, task.causal)
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=s.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: lr_factor(i, steps, s.warmup_frac, s.final_lr_frac))
    data_g = torch.Generator().manual_seed(seed * 7919 + 17)
    ev_ids, ev_tgt = eval_set(task, spec["eval_size"], spec["eval_seed"])
    ev_rows = ev_tgt != IGNORE  # (N, L) rows whose attention we summarise

    qk_rows = [slice(0, 2 * layer.attn.d_model) for layer in encoder_layers(model)]
    curve: dict[str, list] = {k: [] for k in ("step", "eval_loss", "eval_acc", "train_loss", "entropy", "entropy_norm",
                             "uniform_entropy", "max_weight", "grad_scores", "grad_qk", "lr")}
    diverged = False
    train_sum, train_n = 0.0, 0
    pending_grad = (math.nan, math.nan)

    def evaluate(step: int) -> float:
        model.eval()
        probe.rows, probe.stats = ev_rows, []
        with torch.no_grad():
            logits = model(ev_ids)  # (N, L, n_out)
            loss = float(loss_fn(logits, ev_tgt))
            acc = float((logits.argmax(-1)[ev_rows] == ev_tgt[ev_rows]).double().mean())
        probe.rows = None
        model.train()
        st = probe.stats
        curve["step"].append(step)
        curve["eval_loss"].append(loss)
        curve["eval_acc"].append(acc)
        curve["train_loss"].append(train_sum / train_n if train_n else math.nan)
        for k in ("entropy", "entropy_norm", "uniform_entropy", "max_weight"):
            curve[k].append(sum(x[k] for x in st) / len(st))
        curve["grad_scores"].append(pending_grad[0])
        curve["grad_qk"].append(pending_grad[1])
        curve["lr"].append(opt.param_groups[0]["lr"])
        return loss

    for step in range(steps + 1):
        logged = step % s.eval_every == 0 or step == steps
        if step == steps:
            if logged:
                pending_grad = (math.nan, math.nan)
                if not math.isfinite(evaluate(step)):
                    diverged = True
            break
        ids, tgt = task.batch(B, data_g)
        probe.want_grad, probe.grad_sq = logged, []
        loss = loss_fn(model(ids), tgt)
        if not torch.isfinite(loss):
            diverged = True
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        probe.want_grad = False
        if logged:
            g_scores = math.sqrt(float(sum(probe.grad_sq))) if probe.grad_sq else math.nan
            # cast: loss.backward() just gave every W_qkv its .grad
            g_qk = math.sqrt(sum(float(cast(torch.Tensor, layer.attn.W_qkv.weight.grad)[r].double().pow(2).sum())
                                 for layer, r in zip(encoder_layers(model), qk_rows)))
            pending_grad = (g_scores, g_qk)
            # The evaluation at step t is of the weights after t updates; the gradient is the one
            # that the t-th batch produces at those weights.
            if not math.isfinite(evaluate(step)):
                diverged = True
                break
            train_sum, train_n = 0.0, 0
        train_sum += float(loss.detach())
        train_n += 1
        torch.nn.utils.clip_grad_norm_(params, s.clip)
        opt.step()
        sched.step()

    thr, base = task.threshold, task.baseline
    flags = run_flags(curve["step"], curve["eval_loss"], thr, base, crashed=diverged)
    return {
        "task": task.name, "variant": variant, "d_k": d_k, "n_heads": s.d_model // d_k, "seed": seed,
        "steps": steps, "threshold": thr, "baseline": base, **flags,
        "final_acc": curve["eval_acc"][-1] if curve["eval_acc"] and not diverged else math.nan,
        "init_entropy": curve["entropy"][0] if curve["entropy"] else math.nan,
        "final_entropy": curve["entropy"][-1] if curve["entropy"] else math.nan,
        "init_entropy_norm": curve["entropy_norm"][0] if curve["entropy_norm"] else math.nan,
        "final_entropy_norm": curve["entropy_norm"][-1] if curve["entropy_norm"] else math.nan,
        "init_max_weight": curve["max_weight"][0] if curve["max_weight"] else math.nan,
        "init_grad_scores": curve["grad_scores"][0] if curve["grad_scores"] else math.nan,
        "mean_grad_scores": mean_finite(curve["grad_scores"]),
        "init_grad_qk": curve["grad_qk"][0] if curve["grad_qk"] else math.nan,
        "n_params": sum(p.numel() for p in params),
        "curve": curve,
        "seconds": time.perf_counter() - t0,
    }
