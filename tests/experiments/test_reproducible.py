"""Same seed -> identical results.json; another seed -> different numbers; --jobs does not matter."""

import json

import pytest

from attnscope import experiments
from attnscope.experiments.base import jsonable

TINY = dict(tasks=["recall"], variants=["scaled", "unscaled"], d_ks=[16], steps=10, eval_every=5,
            d_model=32, d_ff=32, seeds=1)


def _json(res, tmp_path, name):
    # exactly what ExperimentResult.write puts into results.json (without drawing the PNGs)
    res.close_figures()
    return json.loads(json.dumps(jsonable(res.to_json()), allow_nan=False))


@pytest.mark.parametrize("name,opts", [
    ("variance", dict(samples=500, d_ks=[2, 64], hist_n=50)),
    ("saturation", dict(rows=200, d_ks=[2, 64])),
    ("training", TINY),
])
def test_same_seed_gives_identical_json(tmp_path, name, opts):
    a = _json(experiments.run(name, seed=3, progress=False, **opts), tmp_path, "a")
    b = _json(experiments.run(name, seed=3, progress=False, **opts), tmp_path, "b")
    c = _json(experiments.run(name, seed=4, progress=False, **opts), tmp_path, "c")
    assert a == b
    assert a["data"] != c["data"]


def test_worker_processes_give_the_same_numbers(tmp_path):
    opts = dict(TINY, variants=["scaled", "unscaled", "t5"])
    a = _json(experiments.run("training", seed=1, progress=False, jobs=1, **opts), tmp_path, "a")
    b = _json(experiments.run("training", seed=1, progress=False, jobs=2, **opts), tmp_path, "b")
    assert a == b
