"""The training grid's settings: :class:`Settings` and :func:`make_settings` (checked options)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

from ...errors import ConfigError
from ...i18n import error
from ..base import check_int_list, check_names, check_positive_int
from ..tasks import TASKS

VARIANTS = ("scaled", "unscaled", "inv_d", "cosine", "qknorm", "t5")
DEFAULT_D_KS = (16, 64, 256, 512)
INITS = ("lecun", "small")


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
                   eval_size={"recall": 32, "lm": 16}, d_model=64, d_ff=128)  # the default batches


def _per_task(name: str, value, tasks: Sequence[str], check) -> dict:
    """An int for every task, or a dict task -> int; validated with ``check``."""
    if isinstance(value, dict):
        missing = [t for t in tasks if t not in value]
        if missing:
            raise error(ConfigError, "errors.experiment_no_value_task" + ("" if len(missing) == 1 else "s"), name=name,
                        tasks=", ".join(missing))
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
            raise error(ConfigError, "errors.experiment_dk_divides", d=d, d_model=d_model)
    at_most = lambda high: (lambda n, v: check_positive_int(n, v, high=high))  # noqa: E731
    seeds = _per_task("seeds", seeds if seeds is not None else s.seeds, tasks, at_most(100))
    steps = _per_task("steps", steps if steps is not None else s.steps, tasks, at_most(10**6))
    batch = _per_task("batch", batch if batch is not None else s.batch, tasks, at_most(4096))
    eval_size = _per_task("eval_size", eval_size if eval_size is not None else s.eval_size, tasks, at_most(4096))
    eval_every = check_positive_int("eval_every", eval_every if eval_every is not None else s.eval_every)
    for t in tasks:
        if eval_every > steps[t]:
            raise error(ConfigError, "errors.experiment_eval_every", eval_every=eval_every, steps=steps[t], task=repr(t))
    lr = s.lr if lr is None else lr
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (0 < lr < 10) or not math.isfinite(lr):
        raise error(ConfigError, "errors.experiment_lr", value=repr(lr))
    init = s.init if init is None else init
    if init not in INITS:
        raise error(ConfigError, "errors.experiment_unknown_init", name=repr(init), names=", ".join(INITS))
    return replace(s, tasks=tasks, variants=variants, d_ks=d_ks, seeds=seeds, steps=steps, batch=batch,
                   eval_size=eval_size, d_model=d_model,
                   n_layers=check_positive_int("n_layers", n_layers if n_layers is not None else s.n_layers, high=48),
                   d_ff=check_positive_int("d_ff", d_ff if d_ff is not None else s.d_ff, high=16384),
                   lr=float(lr), eval_every=eval_every, init=init)
