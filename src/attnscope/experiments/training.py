"""Experiment "training": train small Transformers with each way of scaling the scores, side by side.

The second article claims that with the 1/√d_k factor "training was over 3× faster", and that
without it, at d_k = 512, "the training loss got stuck". This experiment measures both.

Models are attnscope's own :class:`~attnscope.modules.TransformerEncoder` (pre-LN, a final
LayerNorm, GELU, no dropout) with a linear read-out. The width is fixed (``d_model`` = 512 by
default) and d_k changes through the number of heads (``n_heads = d_model / d_k``), so that every
variant has the same parameter count and cost per step and only d_k differs.

Variants (``config.scoring`` of the attention, plus one initialisation):

=========  =====================================================================================
scaled     q·k / √d_k (the Transformer's)
unscaled   q·k
inv_d      q·k / d_k
cosine     cos(q, k) / τ with a learnable τ per head, starting at 0.1 (Swin V2)
qknorm     LayerNorm(q)·LayerNorm(k) / √d_k with learnable affine (ViT-22B)
t5         q·k unscaled, with the 1/√d_k folded into the query weights at initialisation (T5):
           the rows of W_Q (and its bias) in the fused W_qkv start divided by √d_k, so the first
           forward pass equals "scaled" exactly; training then moves W_Q freely.
=========  =====================================================================================

Initialisation: every Linear weight ~ N(0, 1/fan_in) (LeCun), biases 0, embeddings ~ N(0, 1).
After the pre-attention LayerNorm the inputs have unit variance, so q and k start with
unit-variance entries — the premise of the article's variance argument. ``init="small"`` uses
std 0.02 everywhere instead (BERT/GPT-2), where scores start much smaller.

Every variant gets the same optimiser (AdamW, no weight decay, gradient clipping at norm 1) and the
same schedule (linear warm-up over the first 10 % of steps, cosine decay to 10 % of the peak),
the same batches and, for a given seed, the same initial weights. Each run is seeded
independently and runs on one thread, so results do not depend on ``jobs``.

Measured per run, every ``eval_every`` steps: the loss on a fixed held-out set, the attention
entropy (mean over the rows that carry a loss, in nats, and divided by ln(#keys)), the mean largest
attention weight, and, on that step's training batch, the norm of the gradient at the attention
scores (``‖∂loss/∂(scaled scores)‖_F`` over the batch, all heads and layers, read with a tensor hook
on the hook point ``layers.{i}.attn.scaled``) and at the query/key weights.

Flags:

* ``reached``: the held-out loss got to the task's threshold; ``steps_to_threshold`` is the
  first evaluation step where it did (a multiple of ``eval_every``).
* ``stalled``: the final loss is not below ``baseline − 0.1·(baseline − threshold)``, i.e. the run
  got less than 10 % of the way from what needs no attention (ln V for recall, the unigram loss
  for lm) towards the threshold: the loss "did not move" in the article's words.
* ``diverged``: a loss became NaN/inf, or the final loss is above the initial one.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..config import TransformerConfig
from ..errors import ConfigError
from ..modules import TransformerEncoder
from .base import (ExperimentResult, check_int_list, check_names, check_positive_int, check_seed, fmt_num,
                   md_table, progress_bar, torch_threads)
from .tasks import IGNORE, TASKS, eval_set, make_task, task_from_spec, task_options

VARIANTS = ("scaled", "unscaled", "inv_d", "cosine", "qknorm", "t5")
DEFAULT_D_KS = (16, 64, 256, 512)
INITS = ("lecun", "small")
STALL_FRACTION = 0.1


@dataclass
class Settings:
    """Everything that defines the training grid. ``steps``/``batch``/``eval_size``/``seeds`` per task."""

    tasks: tuple = TASKS
    variants: tuple = VARIANTS
    d_ks: tuple = DEFAULT_D_KS
    seeds: dict = field(default_factory=lambda: {"recall": 3, "lm": 2})
    steps: dict = field(default_factory=lambda: {"recall": 300, "lm": 200})
    batch: dict = field(default_factory=lambda: {"recall": 16, "lm": 16})
    eval_size: dict = field(default_factory=lambda: {"recall": 64, "lm": 32})
    d_model: int = 512
    n_layers: int = 1
    d_ff: int = 512
    lr: float = 1e-3
    warmup_frac: float = 0.1
    final_lr_frac: float = 0.1
    clip: float = 1.0
    eval_every: int = 10
    init: str = "lecun"

    @classmethod
    def quick(cls) -> "Settings":
        """The CI version: width 64, d_k 16 and 64, one seed, 60 steps."""
        return cls(d_ks=(16, 64), seeds={"recall": 1, "lm": 1}, steps={"recall": 60, "lm": 60},
                   batch={"recall": 16, "lm": 16}, eval_size={"recall": 32, "lm": 16},
                   d_model=64, d_ff=128)


def _per_task(name: str, value, tasks: Sequence[str], check) -> dict:
    """An int for every task, or a dict task -> int; validated with ``check``."""
    if isinstance(value, dict):
        missing = [t for t in tasks if t not in value]
        if missing:
            raise ConfigError(f"{name} has no value for task{'' if len(missing) == 1 else 's'} {', '.join(missing)}")
        return {t: check(f"{name}[{t}]", value[t]) for t in tasks}
    return {t: check(name, value) for t in tasks}


def make_settings(*, quick: bool = False, tasks=None, variants=None, d_ks=None, seeds=None, steps=None,
                  batch=None, eval_size=None, d_model=None, n_layers=None, d_ff=None, lr=None,
                  eval_every=None, init=None) -> Settings:
    """Defaults (or the quick ones) with the given options, checked; ConfigError names what is wrong."""
    s = Settings.quick() if quick else Settings()
    tasks = check_names("task", tasks if tasks is not None else s.tasks, TASKS)
    variants = check_names("variant", variants if variants is not None else s.variants, VARIANTS)
    d_model = check_positive_int("d_model", d_model if d_model is not None else s.d_model, high=4096)
    d_ks = check_int_list("d_k", d_ks if d_ks is not None else s.d_ks, low=1)
    for d in d_ks:
        if d > d_model or d_model % d:
            raise ConfigError(f"d_k = {d} does not divide d_model = {d_model}: each of the n_heads = "
                              f"d_model / d_k heads needs d_k dimensions (choose d_k from the divisors of "
                              f"{d_model}, or change --d-model)")
    at_most = lambda high: (lambda n, v: check_positive_int(n, v, high=high))  # noqa: E731
    seeds = _per_task("seeds", seeds if seeds is not None else s.seeds, tasks, at_most(100))
    steps = _per_task("steps", steps if steps is not None else s.steps, tasks, at_most(10**6))
    batch = _per_task("batch", batch if batch is not None else s.batch, tasks, at_most(4096))
    eval_size = _per_task("eval_size", eval_size if eval_size is not None else s.eval_size, tasks, at_most(4096))
    eval_every = check_positive_int("eval_every", eval_every if eval_every is not None else s.eval_every)
    for t in tasks:
        if eval_every > steps[t]:
            raise ConfigError(f"eval_every ({eval_every}) is larger than the {steps[t]} steps of task {t!r}: "
                              "the run would never be evaluated during training")
    lr = s.lr if lr is None else lr
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (0 < lr < 10) or not math.isfinite(lr):
        raise ConfigError(f"learning rate must be a number in (0, 10), got {lr!r}")
    init = s.init if init is None else init
    if init not in INITS:
        raise ConfigError(f"unknown init {init!r}; choose from {', '.join(INITS)}")
    return replace(s, tasks=tasks, variants=variants, d_ks=d_ks, seeds=seeds, steps=steps, batch=batch,
                   eval_size=eval_size, d_model=d_model,
                   n_layers=check_positive_int("n_layers", n_layers if n_layers is not None else s.n_layers, high=48),
                   d_ff=check_positive_int("d_ff", d_ff if d_ff is not None else s.d_ff, high=16384),
                   lr=float(lr), eval_every=eval_every, init=init)


# ----------------------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------------------

class TaskModel(nn.Module):
    """``TransformerEncoder`` + a linear read-out: ids ``(B, L)`` → logits ``(B, L, n_outputs)``."""

    def __init__(self, config: TransformerConfig, n_outputs: int) -> None:
        super().__init__()
        self.encoder = TransformerEncoder(config)
        self.head = nn.Linear(config.d_model, n_outputs)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(ids))  # (B, L, n_outputs)


def model_config(task, variant: str, d_k: int, settings: Settings) -> TransformerConfig:
    """The encoder config of one run; the "t5" variant uses unscaled scoring (see :func:`fold_scale`)."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    return TransformerConfig(
        vocab_size=task.vocab_size, d_model=settings.d_model, n_heads=settings.d_model // d_k,
        n_layers=settings.n_layers, d_ff=settings.d_ff, max_positions=task.seq_len, type_vocab_size=0,
        position=task.position, norm="pre", embed_norm=False, final_norm=True, activation="gelu",
        layer_norm_eps=1e-5, dropout=0.0, attn_dropout=0.0,
        scoring="unscaled" if variant == "t5" else variant, causal=task.causal)


def init_weights(model: nn.Module, generator: torch.Generator, init: str = "lecun") -> None:
    """LeCun-normal Linear weights (std 1/√fan_in), zero biases, N(0, 1) embeddings; or std 0.02.

    Parameters are visited in ``named_modules`` order, which does not depend on the scoring, so
    that every variant with the same seed starts from the same weights.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                std = m.in_features ** -0.5 if init == "lecun" else 0.02
                m.weight.normal_(0.0, std, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 1.0 if init == "lecun" else 0.02, generator=generator)


def fold_scale(model: TaskModel, d_k: int) -> None:
    """T5-style: divide the query rows of every fused ``W_qkv`` (weights and bias) by √d_k.

    With unscaled scoring, ``(W_Q x / √d_k)·k = (q·k)/√d_k``: the model starts exactly where the
    scaled one does, but the factor now lives in a trainable parameter.
    """
    with torch.no_grad():
        for layer in model.encoder.layers:
            d = layer.attn.d_model
            layer.attn.W_qkv.weight[:d].mul_(d_k ** -0.5)
            if layer.attn.W_qkv.bias is not None:
                layer.attn.W_qkv.bias[:d].mul_(d_k ** -0.5)


def build_model(task, variant: str, d_k: int, settings: Settings, seed: int) -> TaskModel:
    config = model_config(task, variant, d_k, settings)
    model = TaskModel(config, task.n_outputs)
    init_weights(model, torch.Generator().manual_seed(seed), settings.init)
    if variant == "t5":
        fold_scale(model, d_k)
    return model


class Probe:
    """Reads the attention of every layer through attnscope's hook points.

    A function on ``layers.{i}.attn.scaled`` registers a tensor hook that records
    ``‖∂loss/∂scaled‖²`` when ``want_grad`` is set; one on ``layers.{i}.attn.weights`` records
    entropy and largest weight when ``rows`` (a (B, L) mask of rows to average over) is set.
    The functions stay attached for the whole run, so every variant takes the same explicit
    attention path (softmax of materialised scores) at every step.
    """

    def __init__(self, model: TaskModel, causal: bool) -> None:
        self.causal = causal
        self.want_grad = False
        self.rows: Optional[torch.Tensor] = None
        self.grad_sq: list[torch.Tensor] = []
        self.stats: list[dict] = []
        for layer in model.encoder.layers:
            layer.attn.scaled.fns.append(self._on_scaled)
            layer.attn.weights.fns.append(self._on_weights)

    def _on_scaled(self, x: torch.Tensor, name: str) -> None:
        if self.want_grad and x.requires_grad:
            x.register_hook(lambda g: self.grad_sq.append(g.detach().double().pow(2).sum()))
        return None

    def _on_weights(self, p: torch.Tensor, name: str) -> None:
        if self.rows is None:
            return None
        with torch.no_grad():
            p = p.double()  # (B, H, L, S)
            L, S = p.shape[-2:]
            # Keys a row may see, from the mask's structure (a saturated softmax underflows to exact
            # zeros, so counting p > 0 would be wrong).
            seen = torch.arange(1, L + 1, dtype=torch.float64) if self.causal else torch.full((L,), float(S))
            n_keys = seen.expand(p.shape[:-1])  # (B, H, L)
            H = -torch.special.xlogy(p, p).sum(-1)  # (B, H, L)
            sel = self.rows[:, None, :].expand_as(H)  # (B, H, L)
            multi = sel & (n_keys > 1)
            self.stats.append({
                "entropy": float(H[sel].mean()), "uniform_entropy": float(n_keys.log()[sel].mean()),
                "entropy_norm": float((H[multi] / n_keys[multi].log()).mean()) if multi.any() else math.nan,
                "max_weight": float(p.amax(-1)[sel].mean())})
        return None


def lr_factor(step: int, steps: int, warmup_frac: float, final_frac: float) -> float:
    """Linear warm-up to 1 over ``warmup_frac·steps`` steps, then cosine decay to ``final_frac``."""
    warm = max(1, round(warmup_frac * steps))
    if step < warm:
        return (step + 1) / warm
    t = (step - warm) / max(1, steps - warm)
    return final_frac + (1 - final_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))


def _loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
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
    task = task_from_spec(spec["task"])
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

    qk_rows = [slice(0, 2 * layer.attn.d_model) for layer in model.encoder.layers]
    curve = {k: [] for k in ("step", "eval_loss", "eval_acc", "train_loss", "entropy", "entropy_norm",
                             "uniform_entropy", "max_weight", "grad_scores", "grad_qk", "lr")}
    diverged = False
    train_sum, train_n = 0.0, 0
    pending_grad = (math.nan, math.nan)

    def evaluate(step: int) -> float:
        model.eval()
        probe.rows, probe.stats = ev_rows, []
        with torch.no_grad():
            logits = model(ev_ids)  # (N, L, n_out)
            loss = float(_loss(logits, ev_tgt))
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
        loss = _loss(model(ids), tgt)
        if not torch.isfinite(loss):
            diverged = True
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        probe.want_grad = False
        if logged:
            g_scores = math.sqrt(float(sum(probe.grad_sq))) if probe.grad_sq else math.nan
            g_qk = math.sqrt(sum(float(layer.attn.W_qkv.weight.grad[r].double().pow(2).sum())
                                 for layer, r in zip(model.encoder.layers, qk_rows)))
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
        "mean_grad_scores": _mean(curve["grad_scores"]),
        "init_grad_qk": curve["grad_qk"][0] if curve["grad_qk"] else math.nan,
        "n_params": sum(p.numel() for p in params),
        "curve": curve,
        "seconds": time.perf_counter() - t0,
    }


# ----------------------------------------------------------------------------------------------
# the grid
# ----------------------------------------------------------------------------------------------

def run_specs(settings: Settings, seed: int, task_objs: dict) -> list[dict]:
    """One spec per (task, variant, d_k, seed index); seed i of every variant is the same seed."""
    sdict = asdict(settings)
    specs = []
    for t in settings.tasks:
        for d_k in settings.d_ks:
            for variant in settings.variants:
                for i in range(settings.seeds[t]):
                    specs.append({"task": task_options(task_objs[t]), "variant": variant, "d_k": d_k,
                                  "seed": seed * 1000 + i, "seed_index": i, "eval_seed": 10_000 + seed,
                                  "steps": settings.steps[t], "batch": settings.batch[t],
                                  "eval_size": settings.eval_size[t], "settings": sdict})
    return specs


def _train_indexed(item: tuple) -> tuple:
    """Worker entry point: ``(i, spec)`` → ``(i, train_one(spec))``."""
    i, spec = item
    return i, train_one(spec)


def _run_label(sp: dict) -> str:
    return f"{sp['task']['name']}-{sp['variant']}-dk{sp['d_k']}-s{sp['seed_index']}"


def execute(specs: list[dict], *, jobs: int = 1, progress: bool = True, store=None) -> list[dict]:
    """Run the specs (in ``jobs`` spawned processes when > 1); results in the order of ``specs``.

    ``store``: a :class:`~.runstore.RunStore`; runs found in it are not trained again, and every
    run is saved to it as soon as it finishes. SIGTERM stops the grid like Ctrl-C: the workers are
    terminated, the finished runs stay in the store, and KeyboardInterrupt propagates.
    """
    import os

    from .runstore import ignore_interrupts, sigterm_as_interrupt

    cpus = os.cpu_count() or 1
    jobs = check_positive_int("jobs", jobs, high=max(4 * cpus, 4))
    results: list[Optional[dict]] = [None] * len(specs)
    if store is not None:
        for i, sp in enumerate(specs):
            results[i] = store.load(sp, _run_label(sp))
    todo = [i for i, r in enumerate(results) if r is None]
    resumed = len(specs) - len(todo)
    bar = progress_bar(total=len(specs), desc="training", enabled=progress, unit="run")
    if resumed:
        import sys
        print(f"training: {resumed} of {len(specs)} runs already finished in {store.folder}/, "
              f"training the other {len(todo)}", file=sys.stderr, flush=True)
        bar.update(resumed)
    label = lambda sp: f"{sp['task']['name']} {sp['variant']} d_k={sp['d_k']} s{sp['seed_index']}"

    def finished(i: int, result: dict) -> None:
        results[i] = result
        if store is not None:
            store.save(specs[i], result, _run_label(specs[i]))
        bar.set_postfix_str(label(specs[i]))
        bar.update(1)

    try:
        with sigterm_as_interrupt():
            if jobs == 1 or len(todo) <= 1:
                for i in todo:
                    bar.set_postfix_str(label(specs[i]))
                    finished(i, train_one(specs[i]))
            else:
                import multiprocessing as mp

                # Longest runs first, so that the last ones to finish are short.
                order = sorted(todo, key=lambda i: -specs[i]["steps"] * specs[i]["batch"] *
                               (32 if specs[i]["task"]["name"] == "lm" else 12))
                pool = mp.get_context("spawn").Pool(min(jobs, len(todo)), initializer=ignore_interrupts)
                try:
                    for i, result in pool.imap_unordered(_train_indexed, [(i, specs[i]) for i in order]):
                        finished(i, result)
                    pool.close()
                except BaseException:
                    pool.terminate()  # stop the workers now; join() below reaps them
                    raise
                finally:
                    pool.join()
    finally:
        bar.close()
    return results  # type: ignore[return-value]


def _median_steps(xs: list[Optional[int]]) -> Optional[float]:
    """Median steps-to-threshold, counting a run that never got there as infinitely slow."""
    vals = sorted(math.inf if x is None else x for x in xs)
    m = statistics.median(vals)
    return None if math.isinf(m) else float(m)


def run_flags(steps: Sequence[int], losses: Sequence[float], threshold: float, baseline: float, *,
              crashed: bool = False) -> dict:
    """Steps to threshold and the reached/stalled/diverged flags of one run (see the module doc).

    ``crashed``: the training loss became NaN/inf (the run was stopped there).
    """
    finite = [l for l in losses if l is not None and math.isfinite(l)]
    reached_at = next((st for st, l in zip(steps, losses) if l is not None and math.isfinite(l) and l <= threshold),
                      None)
    final = losses[-1] if losses and not crashed else math.nan
    init_loss = losses[0] if losses else math.nan
    diverged = crashed or not math.isfinite(final) or (math.isfinite(init_loss) and final > init_loss)
    stall_line = baseline - STALL_FRACTION * (baseline - threshold)
    return {"steps_to_threshold": reached_at, "reached": reached_at is not None, "final_loss": final,
            "init_loss": init_loss, "min_loss": min(finite, default=math.nan),
            "stalled": (not diverged) and not (final < stall_line), "diverged": diverged}


def _n(n: int, noun: str) -> str:
    """``1 seed``, ``3 seeds``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _mean(xs) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return sum(xs) / len(xs) if xs else math.nan


def _sd(xs) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.stdev(xs) if len(xs) > 1 else math.nan


def summarise(runs: list[dict]) -> list[dict]:
    """One row per (task, variant, d_k): seeds aggregated."""
    groups: dict = {}
    for r in runs:
        groups.setdefault((r["task"], r["variant"], r["d_k"]), []).append(r)
    rows = []
    for (task, variant, d_k), rs in groups.items():
        rows.append({
            "task": task, "variant": variant, "d_k": d_k, "n_heads": rs[0]["n_heads"], "seeds": len(rs),
            "steps": rs[0]["steps"], "threshold": rs[0]["threshold"],
            "median_steps_to_threshold": _median_steps([r["steps_to_threshold"] for r in rs]),
            "reached": sum(r["reached"] for r in rs),
            "final_loss_mean": _mean([r["final_loss"] for r in rs]), "final_loss_sd": _sd([r["final_loss"] for r in rs]),
            "final_acc_mean": _mean([r["final_acc"] for r in rs]),
            "init_loss_mean": _mean([r["init_loss"] for r in rs]),
            "init_entropy_norm": _mean([r["init_entropy_norm"] for r in rs]),
            "final_entropy_norm": _mean([r["final_entropy_norm"] for r in rs]),
            "init_max_weight": _mean([r["init_max_weight"] for r in rs]),
            "init_grad_scores": _mean([r["init_grad_scores"] for r in rs]),
            "mean_grad_scores": _mean([r["mean_grad_scores"] for r in rs]),
            "init_grad_qk": _mean([r["init_grad_qk"] for r in rs]),
            "stalled": sum(r["stalled"] for r in rs), "diverged": sum(r["diverged"] for r in rs),
        })
    return rows


def _first_step_at_or_below(run: dict, loss: float) -> Optional[int]:
    return next((st for st, l in zip(run["curve"]["step"], run["curve"]["eval_loss"])
                 if l is not None and math.isfinite(l) and l <= loss), None)


def speedups(summary: list[dict], runs: list[dict], fast: str = "scaled", slow: str = "unscaled") -> list[dict]:
    """How many times the steps ``slow`` needed compared with ``fast``, per task and d_k, two ways.

    * ``ratio``: median steps to the task's threshold, slow ÷ fast. When ``slow`` never got there
      it is a lower bound (``bound`` = ">"): total steps ÷ fast's steps.
    * ``ratio_matched``: for each seed, the loss ``slow`` ended with (its final held-out loss), and
      the first evaluation step at which each run was at or below it; slow ÷ fast, median over
      seeds. Defined whenever ``fast`` gets down to that loss, so it also measures cells where
      ``slow`` never reaches the threshold. ``bound_matched`` = "<" when ``fast`` never got there.
    """
    out = []
    idx = {(r["task"], r["variant"], r["d_k"]): r for r in summary}
    by_run = {(r["task"], r["variant"], r["d_k"], r["seed_index"]): r for r in runs}
    for (task, variant, d_k), r in idx.items():
        if variant != fast or (task, slow, d_k) not in idx:
            continue
        u = idx[(task, slow, d_k)]
        sf, su = r["median_steps_to_threshold"], u["median_steps_to_threshold"]
        item = {"task": task, "d_k": d_k, "steps_" + fast: sf, "steps_" + slow: su, "ratio": None, "bound": None}
        if sf is not None and sf > 0 and su is not None:
            item["ratio"], item["bound"] = su / sf, "="
        elif sf is not None and sf > 0:  # slow never got there within its steps: a lower bound
            item["ratio"], item["bound"] = u["steps"] / sf, ">"
        matched, bounds, losses = [], [], []
        for key, rs in by_run.items():
            if key[:3] != (task, slow, d_k) or (task, fast, d_k, key[3]) not in by_run:
                continue
            rf = by_run[(task, fast, d_k, key[3])]
            target = rs["final_loss"]
            if target is None or not math.isfinite(target):
                continue
            s_slow = _first_step_at_or_below(rs, target)
            s_fast = _first_step_at_or_below(rf, target)
            losses.append(target)
            if s_fast is None:  # fast never got as low as slow's end: slow was faster
                matched.append(s_slow / rf["steps"])
                bounds.append("<")
            elif s_fast > 0:
                matched.append(s_slow / s_fast)
                bounds.append("=")
        if matched:
            m = statistics.median(matched)
            item["loss_matched"] = statistics.median(losses)
            item["ratio_matched"] = m
            item["bound_matched"] = "<" if bounds.count("<") * 2 > len(bounds) else "="
        else:
            item["loss_matched"] = item["ratio_matched"] = item["bound_matched"] = None
        out.append(item)
    return out


def claims(summary: list[dict], settings: Settings, runs: list[dict]) -> dict:
    """The article's two claims, answered from the data in one sentence each.

    The speed verdict uses the matched-loss ratio (see :func:`speedups`), which is defined even
    where unscaled never reaches the threshold; the threshold ratios are quoted beside it.
    """
    sp = speedups(summary, runs)
    idx = {(r["task"], r["variant"], r["d_k"]): r for r in summary}

    def fmt(ratio, bound):
        if ratio is None:
            return "n/a"
        return f"{bound if bound in ('>', '<') else ''}{ratio:.1f}×"

    parts, thr_parts, big, measured = [], [], [], []
    for t in settings.tasks:
        items = [x for x in sp if x["task"] == t]
        if not items:
            continue
        parts.append(f"{t} " + ", ".join(f"d_k={x['d_k']}: {fmt(x['ratio_matched'], x['bound_matched'])}"
                                         for x in items))
        thr_parts.append(f"{t} " + ", ".join(f"{x['d_k']}: {fmt(x['ratio'], x['bound'])}" for x in items))
        measured += [x for x in items if x["ratio_matched"] is not None]
        big += [x for x in items if x["ratio_matched"] is not None and x["ratio_matched"] >= 3
                and x["bound_matched"] != "<"]
    speed = None
    if sp:
        where = [f"{x['task']} d_k={x['d_k']}" for x in big]
        verdict = ("cannot be judged (no unscaled run finished)" if not measured else
                   "holds in every cell" if len(big) == len(measured) else
                   "does not hold anywhere" if not big else
                   "holds only at " + ", ".join(where))
        speed = (f"\"Scaling trained over 3× faster\" {verdict}: to reach the loss that unscaled ended with, "
                 f"unscaled needed this many times the steps of scaled — {'; '.join(parts)} (to reach the "
                 f"threshold: {'; '.join(thr_parts)}; '>' = unscaled never got there, a lower bound).")
    d_top = max(settings.d_ks)
    stall_parts = []
    for t in settings.tasks:
        u, s = idx.get((t, "unscaled", d_top)), idx.get((t, "scaled", d_top))
        if u is None:
            continue
        txt = (f"{t}: unscaled stalled in {u['stalled']}/{u['seeds']} seeds, loss {fmt_num(u['init_loss_mean'])} → "
               f"{fmt_num(u['final_loss_mean'])} (threshold {u['threshold']:.3g}, reached in {u['reached']}/{u['seeds']})")
        if s is not None:
            txt += f" vs scaled → {fmt_num(s['final_loss_mean'])} (reached {s['reached']}/{s['seeds']})"
        stall_parts.append(txt)
    stall = None
    if stall_parts:
        rows = [idx[(t, "unscaled", d_top)] for t in settings.tasks if (t, "unscaled", d_top) in idx]
        n_st = sum(r["stalled"] for r in rows)
        n_all = sum(r["seeds"] for r in rows)
        scaled_st = sum(idx[(t, "scaled", d_top)]["stalled"] for t in settings.tasks if (t, "scaled", d_top) in idx)
        verdict = ("is confirmed" if n_st == n_all else "is not confirmed" if n_st == 0 else "is partly confirmed")
        caveat = (f" — but scaled stalled too ({scaled_st} run{'' if scaled_st == 1 else 's'}), so this budget cannot tell the factor's effect"
                  if n_st and scaled_st >= n_st else "")
        stall = (f"\"Unscaled training at d_k = {d_top} stalled\" {verdict} ({n_st}/{n_all} runs stalled{caveat}): "
                 + "; ".join(stall_parts) + ".")
    return {"speedups": sp, "speed_sentence": speed, "stall_sentence": stall, "speed_cells": len(measured)}


# ----------------------------------------------------------------------------------------------
# entry point
# ----------------------------------------------------------------------------------------------

def run(*, quick: bool = False, seed: int = 0, progress: bool = True, jobs: int = 1, resume_dir=None,
        **options) -> ExperimentResult:
    """Train the grid of (task, variant, d_k, seed) and report.

    Args:
        quick: the CI version (:meth:`Settings.quick`): width 64, d_k ∈ {16, 64}, 1 seed, 60 steps.
        seed: base seed; run i of a cell uses seed ``1000·seed + i`` (the same for every variant).
        progress: show a progress bar over runs.
        jobs: worker processes (each run is single-threaded; results do not depend on jobs).
        resume_dir: a folder where each finished run is saved at once (one JSON file per run);
            a rerun with the same options reuses them and trains only the rest, so an interrupted
            grid (Ctrl-C, SIGTERM) resumes. The caller removes it when done (the CLI does).
        **options: any field of :func:`make_settings` (tasks, variants, d_ks, seeds, steps, batch,
            eval_size, d_model, n_layers, d_ff, lr, eval_every, init).
    Returns:
        ExperimentResult with tables ``summary``, ``runs``, ``curves``, ``speedups`` and figures
        ``summary`` and ``curves_<task>``.
    """
    t0 = time.perf_counter()
    seed = check_seed(seed)
    import inspect

    known = set(inspect.signature(make_settings).parameters) - {"quick"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"experiment 'training' does not take {'option' if len(unknown) == 1 else 'options'} {', '.join(unknown)}; "
                          f"it takes {', '.join(sorted(known | {'jobs'}))}")
    settings = make_settings(quick=quick, **options)
    task_objs = {t: make_task(t) for t in settings.tasks}
    specs = run_specs(settings, seed, task_objs)
    from .runstore import RunStore

    store = RunStore(resume_dir) if resume_dir is not None else None
    runs = execute(specs, jobs=jobs, progress=progress, store=store)
    t_train = time.perf_counter() - t0
    for r, sp in zip(runs, specs):
        r["seed_index"] = sp["seed_index"]
    seconds = {f"{r['task']}:{r['variant']}:{r['d_k']}:{r['seed_index']}": r.pop("seconds") for r in runs}
    params = {"quick": quick, "seed": seed, **{k: (list(v) if isinstance(v, tuple) else v)
                                                for k, v in asdict(settings).items()}}
    timing = {"train_s": t_train, "run_seconds_sum": sum(seconds.values()), "jobs": jobs,
              **{f"run:{k}": v for k, v in seconds.items()}}
    result = assemble(runs, params, {t: task_objs[t].describe() for t in settings.tasks}, timing)
    result.timing["total_s"] = time.perf_counter() - t0
    result.report = report(result, settings)
    return result


def settings_from_params(params: dict) -> Settings:
    """The :class:`Settings` that ``results.json``'s ``params`` were written from."""
    names = Settings.__dataclass_fields__
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in params.items() if k in names}
    return Settings(**kw)


def assemble(runs: list[dict], params: dict, tasks_desc: dict, timing: dict) -> ExperimentResult:
    """Summary, claims, tables, figures and report from the runs (also used to re-render a folder)."""
    settings = settings_from_params(params)
    summary = summarise(runs)
    answer = claims(summary, settings, runs)
    data = {"tasks": tasks_desc, "runs": runs, "summary": summary, "claims": answer}
    tables = {"summary": summary, "speedups": answer["speedups"],
              "runs": [{k: v for k, v in r.items() if k != "curve"} for r in runs],
              "curves": [{"task": r["task"], "variant": r["variant"], "d_k": r["d_k"], "seed": r["seed"],
                          **{k: r["curve"][k][i] for k in r["curve"]}}
                         for r in runs for i in range(len(r["curve"]["step"]))]}
    figures = {"summary": summary_figure(summary, settings)}
    for t in settings.tasks:
        figures[f"curves_{t}"] = curves_figure(runs, settings, t, tasks_desc[t])
    result = ExperimentResult("training", params, data, tables=tables, figures=figures, timing=dict(timing))
    result.report = report(result, settings)
    return result


def load(folder) -> ExperimentResult:
    """Rebuild a training result from a folder it was written to (``results.json``, ``timing.json``).

    Nothing is retrained: the summary, claims, tables, figures and report are recomputed from the
    stored runs, so a change to the reporting does not need a new 20-minute run.
    """
    import json
    from pathlib import Path

    folder = Path(folder)
    path = folder / "results.json"
    if not path.is_file():
        raise ConfigError(f"no results.json in {str(folder)!r} to re-render")
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError(f"cannot read {str(path)!r}: {e}") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("data"), dict):
        raise ConfigError(f"{str(path)!r} is not an attnscope results file (expected an object with 'data')")
    if saved.get("experiment") != "training":
        raise ConfigError(f"{str(path)!r} holds experiment {saved.get('experiment')!r}, not 'training'")
    timing_path = folder / "timing.json"
    try:
        timing = json.loads(timing_path.read_text(encoding="utf-8")) if timing_path.is_file() else {}
    except (OSError, UnicodeDecodeError, ValueError):
        timing = {}  # wall-clock times only: the report says "0 s" rather than refusing to re-render
    runs = saved["data"].get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise ConfigError(f"{str(path)!r}: data.runs must be a list of runs")
    if not isinstance(saved.get("params"), dict) or not isinstance(saved["data"].get("tasks"), dict):
        raise ConfigError(f"{str(path)!r} lacks params or data.tasks (written by another version of attnscope?); "
                          "run the experiment again")
    needed = {"task", "variant", "d_k", "seed", "seed_index", "curve", "steps_to_threshold", "final_loss",
              "init_entropy_norm", "init_grad_scores", "mean_grad_scores", "stalled", "diverged"}
    missing = sorted(needed - set(runs[0])) if runs else ["runs"]
    if missing:
        raise ConfigError(f"{str(path)!r} lacks {', '.join(missing)} (written by another version of "
                          "attnscope?); run the experiment again")
    for r in runs:  # JSON null back to NaN where the code expects floats
        for k, v in list(r.items()):
            if v is None and k not in ("steps_to_threshold",):
                r[k] = math.nan
        r["curve"] = {k: [math.nan if x is None else x for x in xs] for k, xs in r["curve"].items()}
    return assemble(runs, saved["params"], saved["data"]["tasks"], timing)


# ----------------------------------------------------------------------------------------------
# figures and report
# ----------------------------------------------------------------------------------------------

COLORS = {"scaled": "tab:blue", "unscaled": "tab:red", "inv_d": "tab:purple", "cosine": "tab:green",
          "qknorm": "tab:orange", "t5": "tab:brown"}


def _mean_curve(rs: list[dict], key: str) -> tuple[list, list]:
    steps = rs[0]["curve"]["step"]
    ys = []
    for i in range(len(steps)):
        vals = [r["curve"][key][i] for r in rs if i < len(r["curve"][key])]
        ys.append(_mean(vals))
    return steps, ys


def curves_figure(runs: list[dict], settings: Settings, task: str, task_desc: dict):
    """Rows: held-out loss, normalised attention entropy, gradient norm at the scores; columns: d_k."""
    from matplotlib.figure import Figure

    ds = settings.d_ks
    fig = Figure(figsize=(3.2 * len(ds) + 1, 8), layout="constrained")
    axes = fig.subplots(3, len(ds), squeeze=False, sharex=True)
    for j, d_k in enumerate(ds):
        for v in settings.variants:
            rs = [r for r in runs if r["task"] == task and r["variant"] == v and r["d_k"] == d_k]
            if not rs:
                continue
            for i, key in enumerate(("eval_loss", "entropy_norm", "grad_scores")):
                st, ys = _mean_curve(rs, key)
                axes[i][j].plot(st, ys, color=COLORS[v], label=v, lw=1.5)
        axes[0][j].axhline(task_desc["threshold"], color="k", ls=":", lw=1, label="threshold")
        axes[0][j].axhline(task_desc["baseline"], color="gray", ls="--", lw=1, label="baseline (stall level)")
        n_heads = settings.d_model // d_k
        axes[0][j].set_title(f"d_k = {d_k} ({n_heads} head{'s' if n_heads > 1 else ''})")
        axes[1][j].set_ylim(-0.02, 1.02)
        axes[2][j].set_yscale("log")
        axes[2][j].set_xlabel("step")
    axes[0][0].set_ylabel("held-out loss (nats)")
    axes[1][0].set_ylabel("attention entropy / ln(#keys)")
    axes[2][0].set_ylabel("‖∂loss/∂scores‖")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(f"task {task}: mean over {_n(settings.seeds[task], 'seed')}", fontsize=10)
    return fig


def summary_figure(summary: list[dict], settings: Settings):
    """Per task: final loss and steps to threshold against d_k, one line per variant."""
    from matplotlib.figure import Figure

    tasks = settings.tasks
    fig = Figure(figsize=(10, 3.4 * len(tasks)), layout="constrained")
    axes = fig.subplots(len(tasks), 2, squeeze=False)
    nv = len(settings.variants)
    for i, t in enumerate(tasks):
        for j, v in enumerate(settings.variants):
            rs = sorted((r for r in summary if r["task"] == t and r["variant"] == v), key=lambda r: r["d_k"])
            if not rs:
                continue
            # a small sideways offset per variant, so that equal values do not hide each other
            ds = [r["d_k"] * 2 ** (0.07 * (j - (nv - 1) / 2)) for r in rs]
            axes[i][0].errorbar(ds, [r["final_loss_mean"] for r in rs],
                                yerr=[0 if math.isnan(r["final_loss_sd"]) else r["final_loss_sd"] for r in rs],
                                fmt="o-", color=COLORS[v], label=v, ms=4, capsize=2)
            steps = [r["median_steps_to_threshold"] if r["median_steps_to_threshold"] is not None
                     else r["steps"] * 1.1 for r in rs]
            axes[i][1].plot(ds, steps, "o-", color=COLORS[v], label=v, ms=4)
        thr = next(r["threshold"] for r in summary if r["task"] == t)
        axes[i][0].axhline(thr, color="k", ls=":", lw=1, label="threshold")
        axes[i][0].set(xscale="log", xlabel="d_k", ylabel="final held-out loss", title=f"{t}: final loss")
        axes[i][1].axhline(settings.steps[t] * 1.1, color="gray", ls="--", lw=1)
        axes[i][1].text(min(settings.d_ks), settings.steps[t] * 1.12, "never reached", fontsize=7, color="gray")
        axes[i][1].set(xscale="log", xlabel="d_k", ylabel="steps (median over seeds)",
                       title=f"{t}: steps to loss {thr:.3g}", ylim=(0, settings.steps[t] * 1.25))
        for ax in axes[i]:
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(settings.d_ks), [str(d) for d in settings.d_ks])
            ax.minorticks_off()
        axes[i][0].legend(fontsize=7)
    return fig


def report(result: ExperimentResult, settings: Settings) -> str:
    d = result.data
    s = settings
    c = d["claims"]
    lines = [
        "# Experiment: training with and without 1/√d_k",
        "",
        "## The article's claims",
        "",
        f"1. {c['speed_sentence'] or 'not measured (scaled or unscaled missing from the variants)'}",
        f"2. {c['stall_sentence'] or 'not measured (unscaled missing from the variants)'}",
        "",
        "## Set-up",
        "",
        f"- Model: attnscope TransformerEncoder, {_n(s.n_layers, 'pre-LN layer')}, d_model = {s.d_model}, "
        f"d_ff = {s.d_ff}, n_heads = d_model / d_k, no dropout, linear read-out; init {s.init} "
        "(LeCun: q and k entries start with unit variance).",
        f"- Optimiser: AdamW (lr {s.lr:g}, no weight decay, clip 1.0), {int(100 * s.warmup_frac)} % linear warm-up, "
        f"cosine decay to {int(100 * s.final_lr_frac)} %; identical for every variant, and identical batches "
        "and initial weights for a given seed.",
        f"- Evaluation every {s.eval_every} steps on a fixed held-out set.",
    ]
    for t in s.tasks:
        td = d["tasks"][t]
        if t == "recall":
            lines.append(f"- recall: {td['n_pairs']} key-value pairs + {td['n_queries']} queries, {td['n_keys']} keys × "
                         f"{td['n_values']} values; baseline ln {td['n_values']} = {td['baseline']:.3f}; threshold "
                         f"{td['threshold']:.3g}; {_n(s.steps[t], 'step')} × batch {s.batch[t]}; {_n(s.seeds[t], 'seed')}.")
        else:
            lines.append(f"- lm: {td['corpus']} ({td['corpus_chars']} chars, sha256 {td['corpus_sha256']}…), "
                         f"{td['vocab_size']} symbols, windows of {td['seq_len']}; count-model losses on the "
                         f"held-out text: unigram {td['unigram_loss']:.3f} (baseline), bigram {td['bigram_loss']:.3f} "
                         f"(threshold), trigram {td['trigram_loss']:.3f}; {s.steps[t]} steps × batch {s.batch[t]}; "
                         f"{_n(s.seeds[t], 'seed')}.")
    lines += [
        f"- stalled: final loss above baseline − {STALL_FRACTION}·(baseline − threshold); diverged: NaN/inf "
        "or final > initial loss. Steps to threshold: median over seeds (a run that never got there counts "
        "as infinitely slow; — = median not reached).",
        "",
    ]
    for t in s.tasks:
        rows = [r for r in d["summary"] if r["task"] == t]
        lines += [f"## Task {t}", "",
                  md_table(["variant", "d_k", "steps to thr.", "reached", "final loss", "final acc",
                            "entropy/ln n: init → final", "max w init", "‖∂L/∂scores‖ init, mean",
                            "stalled", "diverged"],
                           [[r["variant"], r["d_k"], fmt_num(r["median_steps_to_threshold"]),
                             f"{r['reached']}/{r['seeds']}",
                             fmt_num(r["final_loss_mean"]) + ("" if math.isnan(r["final_loss_sd"]) else f" ± {r['final_loss_sd']:.2g}"),
                             fmt_num(r["final_acc_mean"]),
                             f"{fmt_num(r['init_entropy_norm'], 2)} → {fmt_num(r['final_entropy_norm'], 2)}",
                             fmt_num(r["init_max_weight"], 2),
                             f"{fmt_num(r['init_grad_scores'], 2)}, {fmt_num(r['mean_grad_scores'], 2)}",
                             r["stalled"], r["diverged"]]
                            for r in sorted(rows, key=lambda r: (r["d_k"], VARIANTS.index(r["variant"])))]),
                  "", f"![curves {t}](curves_{t}.png)", ""]
    lines += ["![summary](summary.png)", "",
              f"Time: {result.timing.get('total_s', 0.0):.0f} s wall ({_n(result.timing.get('jobs', 1), 'job')}); "
              f"sum of run times {result.timing.get('run_seconds_sum', 0.0):.0f} s."]
    return "\n".join(lines)
