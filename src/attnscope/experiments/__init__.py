"""Experiments that measure the third article's claims about the 1/√d_k factor.

    >>> from attnscope import experiments
    >>> res = experiments.run("variance", quick=True, seed=0)
    >>> res.write("out/variance")           # results.json, variance.csv, *.png, report.md

Three experiments (see :data:`EXPERIMENTS`):

* ``variance``  — sampled Var(q·k) against d_k, and 1 after ÷√d_k (:mod:`.variance`);
* ``saturation`` — largest softmax weight, entropy and Jacobian norm vs d_k (:mod:`.saturation`);
* ``training``  — small Transformers trained with each scoring at d_k 16…512 (:mod:`.training`).

Every experiment is reproducible from its seed: the same seed gives an identical ``results.json``.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import ConfigError
from ..i18n import error
from .base import ExperimentResult, check_options

#: name -> (module, one-line description)
EXPERIMENTS = {
    "variance": ("variance", "sampled Var(q·k) vs the theory d_k, and ≈1 after ÷√d_k; the article's histograms"),
    "saturation": ("saturation", "largest softmax weight, entropy and softmax-Jacobian norm vs d_k, scaled and unscaled"),
    "training": ("training", "train small encoders with scaled/unscaled/inv_d/cosine/qknorm/t5 scoring at d_k 16…512"),
}


def get(name: str):
    """The module of experiment ``name`` (it has ``run(**options) -> ExperimentResult``)."""
    if name not in EXPERIMENTS:
        raise error(ConfigError, "errors.experiment_unknown", name=repr(name), names=", ".join(EXPERIMENTS))
    return importlib.import_module(f".{EXPERIMENTS[name][0]}", __name__)


def run(name: str, *, quick: bool = False, seed: int = 0, progress: bool = True, **options: Any) -> ExperimentResult:
    """Run experiment ``name`` and return its result (write it with ``result.write(folder)``).

    Options are the keyword arguments of that experiment's ``run`` function; an option it does not
    take raises ConfigError naming it.
    """
    module = get(name)
    import inspect

    accepted = inspect.signature(module.run).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):  # else it checks them itself
        check_options(name, options, set(accepted) - {"quick", "seed", "progress"})
    return module.run(quick=quick, seed=seed, progress=progress, **options)


__all__ = ["EXPERIMENTS", "ExperimentResult", "get", "run"]
