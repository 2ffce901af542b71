"""`attnscope experiment training` killed by SIGTERM keeps every finished run and resumes from them.

A real subprocess with worker processes (--jobs 2) gets SIGTERM after its first run is on disk: it
must stop in order (exit 143, one line, no traceback, no leaked semaphores, no worker left), keep
the finished runs, and a rerun with the same options must train only the rest and write exactly
the results.json of a run that was never interrupted.
"""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from attnscope.experiments import training
from attnscope.experiments.base import jsonable
from attnscope.experiments.runstore import RunStore, spec_key

OPTIONS = ["--quick", "--tasks", "recall", "--variants", "scaled,unscaled,inv_d", "--steps", "30",
           "--eval-every", "10", "--no-progress"]


def _cli(out, *extra):
    return [sys.executable, "-m", "attnscope", "experiment", "training", *OPTIONS, "--out", str(out), *extra]


def _env():
    return dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="default")


def test_sigterm_keeps_finished_runs_and_a_rerun_resumes(tmp_path):
    out = tmp_path / "run"
    partial = out / "partial-runs"
    p = subprocess.Popen(_cli(out, "--jobs", "2"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    deadline = time.monotonic() + 300
    while not list(partial.glob("*.json")):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "no run finished in 300 s"
        time.sleep(0.05)
    workers = psutil.Process(p.pid).children(recursive=True)
    assert workers, "the grid should run in worker processes"
    p.send_signal(signal.SIGTERM)
    stdout, stderr = p.communicate(timeout=120)
    stderr = stderr.decode()
    assert p.returncode == 128 + signal.SIGTERM, stderr
    kept = sorted(partial.glob("*.json"))
    assert 1 <= len(kept) < 6
    assert stderr.strip().splitlines()[-1] == (
        f"attnscope experiment: stopped by SIGTERM; {len(kept)} finished run{'' if len(kept) == 1 else 's'} "
        f"kept in {partial}/: run the same command again to resume")
    assert "Traceback" not in stderr and "leaked" not in stderr, stderr
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, f"worker processes left running: {alive}"
    assert not (out / "results.json").exists()
    stored = {f.name: json.loads(f.read_text())["result"] for f in kept}

    r = subprocess.run(_cli(out, "--jobs", "2"), capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"{len(kept)} of 6 runs already finished in {partial}/, training the other {6 - len(kept)}" in r.stderr
    assert "leaked" not in r.stderr
    assert not partial.exists()  # removed once the whole grid is written
    resumed = json.loads((out / "results.json").read_text())
    runs = {f"{x['task']}-{x['variant']}-dk{x['d_k']}-s{x['seed_index']}": x for x in resumed["data"]["runs"]}
    for name, result in stored.items():  # the kept runs are used as they were, not retrained
        x = runs[name.rsplit("-", 1)[0]]
        result = jsonable(result)  # NaN → null, as results.json writes it
        assert x["curve"] == result["curve"] and x["final_loss"] == result["final_loss"]

    fresh = tmp_path / "fresh"
    r = subprocess.run(_cli(fresh, "--jobs", "1"), capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    assert (fresh / "results.json").read_text() == (out / "results.json").read_text()


def test_the_store_is_keyed_by_everything_that_makes_a_run(tmp_path, monkeypatch):
    settings = training.make_settings(quick=True, tasks=["recall"], variants=["scaled"], d_ks=[16], steps=10,
                                      eval_every=5)
    specs = training.run_specs(settings, 0, {"recall": training.make_task("recall")})
    store = RunStore(tmp_path / "store")
    calls = []
    monkeypatch.setattr(training.grid, "train_one", lambda sp: calls.append(sp) or {"marker": sp["seed"]})  # what execute calls
    assert training.execute(specs, progress=False, store=store) == [{"marker": specs[0]["seed"]}]
    assert training.execute(specs, progress=False, store=store) == [{"marker": specs[0]["seed"]}]
    assert len(calls) == 1  # the second time it came from the store
    other = [dict(specs[0], seed=specs[0]["seed"] + 1)]
    assert spec_key(other[0]) != spec_key(specs[0])
    training.execute(other, progress=False, store=store)
    assert len(calls) == 2  # a changed option is trained, never served from a stale file
    (store.path(specs[0], training.run_label(specs[0]))).write_text("{truncated")
    training.execute(specs, progress=False, store=store)
    assert len(calls) == 3  # an unreadable file is trained again


@pytest.mark.parametrize("jobs", [0, 10**6])
def test_jobs_out_of_range(jobs):
    with pytest.raises(training.ConfigError, match="jobs must be"):
        training.execute([], jobs=jobs, progress=False)
