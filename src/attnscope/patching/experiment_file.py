"""Circuit experiments as small TOML files that ``attnscope circuit run`` replays to identical numbers.

::

    model = "smollm2-135m"        # a name or a folder for attnscope.load
    mlp = "recompute"             # path patching's MLP convention: recompute | freeze

    [prompts]                     # the IOI set (attnscope.patching.ioi): n prompts, seeded
    n = 120
    seed = 0
    # names = ["Mary", "John", …]  # optional (also places, objects); each one token with its leading space

    [[sweep]]                     # path patching of every sender into the receivers
    name = "logits"
    receivers = "logits"
    sender_layers = [10, 29]      # optional: only senders in these layers (inclusive)

    [[sweep]]
    name = "q of name movers"
    receivers = { from = "logits", top = 3, kind = "q" }   # the 3 strongest senders of "logits"

    [circuit]                     # faithfulness, completeness, minimality (attnscope.patching.circuit)
    bootstrap = 1000
    seed = 0
    random_subsets = 4
    [circuit.classes]
    "name movers" = { from = "logits", top = 3 }
    "S-inhibition" = { from = "q of name movers", top = 3 }
    # "induction" = [[5, 8], [6, 1]]   # or heads written out, [layer, head]

Everything the numbers depend on is in the file (the model's weights aside): the prompts are drawn
by a seeded generator, the bootstrap by a seeded one, the runs are deterministic on one device, so
a replay writes the same ``results.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

from ..errors import InputError
from ..i18n import error
from .circuit import circuit_metrics
from .ioi import ioi_prompts
from .path import KINDS, MLP_MODES, check_head, check_receivers, path_sweep

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FORMAT = "attnscope.circuit"
TOP = {"model", "mlp", "prompts", "sweep", "circuit"}
PROMPTS = {"n", "seed", "names", "places", "objects"}
SWEEP = {"name", "receivers", "sender_layers"}
CIRCUIT = {"bootstrap", "seed", "random_subsets", "classes"}


def _keys(table: Any, allowed: set, where: str) -> dict:
    if not isinstance(table, dict):
        raise error(InputError, "errors.circuit_file_table", where=where, type=type(table).__name__)
    extra = sorted(set(table) - allowed)
    if extra:
        raise error(InputError, "errors.circuit_file_keys", where=where, keys=", ".join(extra),
                    allowed=", ".join(sorted(allowed)))
    return table


def _int(value: Any, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise error(InputError, "errors.circuit_file_int", where=where, value=repr(value), low=low)
    return value


def read_experiment(path) -> dict:
    """The experiment file at ``path``, parsed and checked (shapes and keys; the heads are checked
    against the model when it runs)."""
    p = Path(path)
    if p.is_dir():  # not "does not exist": it does, as a folder
        raise error(InputError, "errors.circuit_file_folder", path=repr(str(p)))
    if not p.is_file():
        raise error(InputError, "errors.circuit_file_missing", path=repr(str(p)))
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise error(InputError, "errors.circuit_file_toml", path=repr(str(p)), why=e) from None
    return check_experiment(data)


def check_experiment(data: dict) -> dict:
    """``data`` (a parsed experiment) with its defaults filled in, or InputError naming the key."""
    _keys(data, TOP, "the file")
    if not isinstance(data.get("model"), str) or not data["model"].strip():
        raise error(InputError, "errors.circuit_file_model", value=repr(data.get("model")))
    mlp = data.get("mlp", "recompute")
    if mlp not in MLP_MODES:
        raise error(InputError, "errors.path_mlp", value=repr(mlp), modes=", ".join(MLP_MODES))
    prompts = _keys(data.get("prompts", {}), PROMPTS, "[prompts]")
    out = {"model": data["model"], "mlp": mlp,
           "prompts": {"n": _int(prompts.get("n", 120), "prompts.n", 1), "seed": _int(prompts.get("seed", 0), "prompts.seed"),
                       "names": prompts.get("names"), "places": prompts.get("places"), "objects": prompts.get("objects")}}
    sweeps, names = [], set()
    for i, s in enumerate(data.get("sweep", [])):
        s = _keys(s, SWEEP, f"[[sweep]] {i + 1}")
        name = s.get("name")
        if not isinstance(name, str) or not name or name in names:
            raise error(InputError, "errors.circuit_sweep_name", index=i + 1, value=repr(name))
        names.add(name)
        r = s.get("receivers", "logits")
        if isinstance(r, dict):
            _keys(r, {"from", "top", "kind"}, f"sweep {name!r} receivers")
            if r.get("from") not in names - {name} or r.get("kind", "q") not in KINDS:
                raise error(InputError, "errors.circuit_sweep_from", name=repr(name), value=repr(r),
                            kinds=", ".join(KINDS))
            r = {"from": r["from"], "top": _int(r.get("top", 3), f"sweep {name!r} top", 1), "kind": r.get("kind", "q")}
        layers = s.get("sender_layers")
        if layers is not None and (not isinstance(layers, list) or len(layers) != 2
                                   or not all(isinstance(x, int) and not isinstance(x, bool) for x in layers)):
            raise error(InputError, "errors.circuit_sender_layers", name=repr(name), value=repr(layers))
        sweeps.append({"name": name, "receivers": r, "sender_layers": layers})
    out["sweep"] = sweeps
    if "circuit" in data:
        c = _keys(data["circuit"], CIRCUIT, "[circuit]")
        given = c.get("classes", {})
        classes = _keys(given, set(given) if isinstance(given, dict) else set(), "[circuit.classes]")
        if not classes:
            raise error(InputError, "errors.circuit_empty")
        for k, v in classes.items():
            if isinstance(v, dict):
                _keys(v, {"from", "top"}, f"circuit class {k!r}")
                if v.get("from") not in names:
                    raise error(InputError, "errors.circuit_class_from", name=repr(k), value=repr(v.get("from")),
                                sweeps=", ".join(sorted(names)) or "none")
                _int(v.get("top", 3), f"circuit class {k!r} top", 1)
        out["circuit"] = {"bootstrap": _int(c.get("bootstrap", 1000), "circuit.bootstrap", 10),
                          "seed": _int(c.get("seed", 0), "circuit.seed"),
                          "random_subsets": _int(c.get("random_subsets", 4), "circuit.random_subsets"),
                          "classes": classes}
    return out


def _heads(model, given, results: dict, kind: Optional[str] = None) -> list:
    """Heads written out (``[[l, h], …]``) or ``{from, top}``: the ``top`` strongest senders of a sweep."""
    if isinstance(given, dict):
        top = results[given["from"]].top(given.get("top", 3))
        heads = [tuple(int(x) for x in label.split(".")) for label, _, _ in top]
    else:
        if not isinstance(given, list):
            raise error(InputError, "errors.circuit_heads_list", value=repr(given))
        heads = [check_head(model, tuple(h) if isinstance(h, list) else h, "head") for h in given]
    return [(l, h, kind) for l, h in heads] if kind else heads


def run_experiment(model, exp: dict, *, progress: bool = False) -> dict:
    """Run a checked experiment (:func:`check_experiment`) on ``model``; the results as a JSON-ready dict."""
    p = exp["prompts"]
    prompts = ioi_prompts(model, p["n"], seed=p["seed"], names=p["names"], places=p["places"], objects=p["objects"])
    c = model.config
    results: dict = {}
    sweeps = []
    for s in exp["sweep"]:
        r = s["receivers"]
        receivers = "logits" if r == "logits" else _heads(model, r, results, r["kind"]) if isinstance(r, dict) else r
        receivers = check_receivers(model, receivers)
        limit = c.n_layers if receivers == "logits" else min(x[0] for x in receivers)
        lo, hi = s["sender_layers"] or [0, c.n_layers - 1]
        senders = [(l, h) for l in range(max(lo, 0), min(hi + 1, limit)) for h in range(c.n_heads)]
        if not senders:
            raise error(InputError, "errors.path_no_senders", layer=limit)
        res = path_sweep(model, prompts, receivers=receivers, senders=senders, mlp=exp["mlp"], progress=progress)
        results[s["name"]] = res
        sweeps.append({"name": s["name"], **res.to_json(), "senders": len(senders),
                       "top": [{"head": k, "effect": e, "relative": rel} for k, e, rel in res.top(10)]})
    out: dict = {"format": FORMAT, "version": 1, "model": model.name, "experiment": exp,
                 "prompts": {"n": len(prompts), "seed": p["seed"], "names": len(prompts.names),
                             "templates": len(prompts.groups),
                             "examples": [{k: q[k] for k in ("clean", "corrupted", "io", "s")} for q in prompts.prompts[:3]]},
                 "sweeps": sweeps}
    if "circuit" in exp:
        ce = exp["circuit"]
        classes = {k: _heads(model, v, results) for k, v in ce["classes"].items()}
        rep = circuit_metrics(model, prompts, classes, n_boot=ce["bootstrap"], seed=ce["seed"],
                              random_subsets=ce["random_subsets"])
        out["circuit"] = rep.to_json()
    return out
