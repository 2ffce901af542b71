"""Bad names, sizes and budgets: one clear line and exit code 2 from the CLI; ConfigError in Python."""

import pytest

from attnscope import experiments
from attnscope.cli import main
from attnscope.errors import ConfigError


@pytest.mark.parametrize("argv,message", [
    (["experiment", "varience"], "unknown experiment 'varience'; choose from variance, saturation, training"),
    (["experiment", "training", "--variants", "scaled,sqrt2"], "unknown variant 'sqrt2'"),
    (["experiment", "training", "--tasks", "sort"], "unknown task 'sort'"),
    (["experiment", "training", "--d-k", "48"], "d_k = 48 does not divide d_model = 512"),
    (["experiment", "training", "--d-k", "1024"], "d_k = 1024 does not divide d_model = 512"),
    (["experiment", "training", "--steps", "-5"], "--steps must be from 1 to 1000000, got -5"),
    (["experiment", "training", "--steps", "5"], "eval_every (10) is larger than the 5 steps"),
    (["experiment", "training", "--seeds", "0"], "--seeds must be from 1 to 100, got 0"),
    (["experiment", "training", "--lr", "-1"], "learning rate must be a number in (0, 10)"),
    (["experiment", "training", "--jobs", "0"], "--jobs must be from 1 to 1024, got 0"),
    (["experiment", "training", "--init", "xavier"], "unknown init 'xavier'"),
    (["experiment", "variance", "--variants", "scaled"], "option --variants does not apply to experiment 'variance'"),
    (["experiment", "variance", "--samples", "1"], "--samples must be from 2 to 10000000, got 1"),
    (["experiment", "variance", "--d-k", "0"], "--d-k must be comma-separated integers, each from 1 to 65536, got 0"),
    (["experiment", "variance", "--distributions", "cauchy"], "unknown distribution 'cauchy'"),
    (["experiment", "saturation", "--length", "1"], "length (keys per row) must be at least 2"),
    (["experiment", "saturation", "--rows", "-3"], "--rows must be from 1 to 1000000, got -3"),
])
def test_cli_reports_one_line_and_exits_2(capsys, tmp_path, argv, message):
    code = main(argv + ["--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()  # nothing written, nothing run


def test_library_raises_config_error():
    with pytest.raises(ConfigError, match="does not take option"):
        experiments.run("saturation", variants=["scaled"])
    with pytest.raises(ConfigError, match="does not take option.*dk"):
        experiments.run("training", dk=[16])
    with pytest.raises(ConfigError, match="unknown experiment"):
        experiments.get("nope")
    with pytest.raises(ConfigError, match="seed must be"):
        experiments.run("variance", seed=-1)


def test_list(capsys):
    assert main(["experiment", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("variance", "saturation", "training"))


@pytest.fixture(scope="module")
def small_training(tmp_path_factory):
    res = experiments.run("training", quick=True, progress=False, tasks=["recall"], variants=["scaled", "unscaled"],
                          d_ks=[16], steps=10)
    out = tmp_path_factory.mktemp("training")
    res.write(out)
    res.close_figures()
    return out


@pytest.mark.parametrize("key,run", [("init_grad_qk", 0), ("n_heads", 0), ("threshold", 0), ("reached", 0),
                                     ("final_loss", 1), ("curve.entropy_norm", 1)])
def test_re_rendering_a_results_file_that_lacks_a_run_field_names_it(small_training, tmp_path, key, run):
    # --from checked a few fields of the first run only: a results.json without one of the others
    # (or with a later run damaged) died in KeyError: 'init_grad_qk' and the like
    import json

    from attnscope.experiments import training

    saved = json.loads((small_training / "results.json").read_text(encoding="utf-8"))
    r = saved["data"]["runs"][run]
    if key.startswith("curve."):
        r["curve"].pop(key.split(".")[1])
    else:
        r.pop(key)
    (tmp_path / "results.json").write_text(json.dumps(saved), encoding="utf-8")
    with pytest.raises(ConfigError, match=f"results.json' lacks {key} "):
        training.load(tmp_path)


@pytest.mark.parametrize("damage,named", [
    (lambda saved: saved["params"].pop("tasks"), "params.tasks"),
    (lambda saved: saved["data"]["tasks"].pop("recall"), "data.tasks.recall"),
    (lambda saved: saved["params"].update(tasks=["recall", "lm"]), "data.tasks.lm, runs of lm"),
])
def test_re_rendering_a_results_file_whose_tasks_do_not_match_names_them(small_training, tmp_path, damage, named):
    # params without tasks re-rendered the default tasks (recall and lm) and died in StopIteration
    # looking for lm's runs; data.tasks without the task of the runs died in KeyError: 'recall'
    import json

    from attnscope.experiments import training

    saved = json.loads((small_training / "results.json").read_text(encoding="utf-8"))
    damage(saved)
    (tmp_path / "results.json").write_text(json.dumps(saved), encoding="utf-8")
    with pytest.raises(ConfigError, match=f"results.json' lacks {named} "):
        training.load(tmp_path)
