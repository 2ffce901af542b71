"""The IOI prompt set, mean ablation against a manual mean and a hook per head, the circuit metrics
against a float64 loop written here (the same bootstrap draws, numpy's percentiles), and the
experiment file replayed twice to identical numbers through the command line."""

import json
import re

import numpy as np
import pytest
import torch

import attnscope
from attnscope.cli import main
from attnscope.errors import InputError
from attnscope.patching import ablated_metric, circuit_metrics, head_means, ioi_prompts
from attnscope.patching.ioi import TEMPLATES, one_token_words
from attnscope.testing import tiny as testing


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="module")
def gpt2(folder):
    return attnscope.load(folder, dtype=torch.float64)


@pytest.fixture(scope="module")
def words(gpt2):
    """Words that are one token with a leading space in the tiny BPE (its names, places, objects)."""
    vocab = gpt2.tokenizer.backend.get_vocab()
    taken = {w.lower() for t in TEMPLATES for w in re.findall(r"[A-Za-z]+", t)}  # not a word of the templates
    found = sorted(t[1:] for t in vocab if t.startswith("Ġ") and t[1:].isalpha() and len(t) > 3
                   and t[1:].lower() not in taken)
    good = one_token_words(gpt2, found, "name", strict=False)
    assert len(good) >= 12
    return good


def make(gpt2, words, n=40, seed=0):
    return ioi_prompts(gpt2, n, seed=seed, names=words[:8], places=words[8:10], objects=words[10:12])


def test_ioi_prompts_are_seeded_grouped_and_one_token_names(gpt2, words):
    ps = make(gpt2, words, n=100)
    assert len(ps) == 100 and sorted(ps.order) == list(range(100))
    assert {p["order"] for p in ps.prompts} == {"ABBA", "BABA"} and len({p["template"] for p in ps.prompts}) == 15
    for p in ps.prompts:
        assert p["io"] != p["s"]
        clean_words = p["clean"].replace(",", " ").replace(".", " ").split()
        assert clean_words.count(p["io"]) == 1 and clean_words.count(p["s"]) == 2  # the IO is the answer, not in S
        bad = p["corrupted"].replace(",", " ").replace(".", " ").split()
        assert p["io"] not in bad and p["s"] not in bad  # ABC: nothing points at IO or S
    rows = 0
    for g in ps.groups:
        assert g.clean.shape == g.corrupted.shape and g.answer.shape == (g.size,)
        rows += g.size
    assert rows == 100
    first = ps.prompts[ps.order[0]]
    g = ps.groups[0]
    assert int(g.answer[0]) == gpt2.tokenizer.backend.encode(" " + first["io"], add_special_tokens=False).ids[0]
    assert torch.equal(g.clean[0], gpt2.encode(first["clean"]).input_ids[0])
    assert make(gpt2, words, 30, 1).prompts == make(gpt2, words, 30, 1).prompts
    assert make(gpt2, words, 30, 1).prompts != make(gpt2, words, 30, 2).prompts


def test_ioi_refuses_names_that_are_not_one_token(gpt2, words):
    with pytest.raises(InputError, match="not one token with a leading space"):
        ioi_prompts(gpt2, 10, names=[*words[:6], "Zyxwvutsrq"], places=words[8:10], objects=words[10:12])
    with pytest.raises(InputError, match="at least 5"):
        ioi_prompts(gpt2, 10, names=words[:3], places=words[8:10], objects=words[10:12])
    with pytest.raises(InputError, match="positive integer"):
        ioi_prompts(gpt2, 0, names=words[:6])


def batch(ids):
    k, L = ids.shape
    return attnscope.tokenizer.Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), [[""] * L] * k, [""] * k)


def manual_means(model, ps):
    """Per group, the float64 mean over its corrupted prompts (each run alone) of every head's z."""
    out = []
    for g in ps.groups:
        zs = []
        for row in g.corrupted:
            tr = model.trace(batch(row[None]), names="layers.*.attn.z")
            zs.append(np.stack([tr[f"layers.{l}.attn.z"][0].numpy() for l in range(model.config.n_layers)]))
        out.append(np.mean(np.stack(zs), axis=0))  # (n_layers, H, L, d_head)
    return out


def writer(m):
    return lambda t, _n: m[None]  # (1, L, d_head): one prompt


def manual_metric(model, ps, ablate, means):
    """Each prompt alone, one plain [h] hook per ablated head writing the manual mean."""
    vals = []
    for g, mean in zip(ps.groups, means):
        hooks = {f"layers.{l}.attn.z[{h}]": writer(torch.tensor(mean[l, h])) for l, h in ablate}
        for i in range(g.size):
            with torch.no_grad(), model.hooks(hooks):
                logits = model.lm_logits(model(g.clean[i:i + 1], torch.ones_like(g.clean[i:i + 1])))[0, -1]
            vals.append(float(logits[g.answer[i]] - logits[g.wrong[i]]))
    return np.array(vals)


def test_mean_ablation_equals_a_manual_mean_and_a_hook_per_head(gpt2, words):
    ps = make(gpt2, words, n=30)
    means = head_means(gpt2, ps)
    want = manual_means(gpt2, ps)
    for m, w in zip(means, want):
        np.testing.assert_allclose(m.numpy(), w, atol=1e-10)
    for ablate in ([(0, 1)], [(0, 0), (1, 2), (1, 3)]):
        np.testing.assert_allclose(ablated_metric(gpt2, ps, ablate, means).numpy(), manual_metric(gpt2, ps, ablate, want),
                                   atol=1e-8)
    assert not np.allclose(manual_metric(gpt2, ps, [(0, 0), (1, 2)], want), manual_metric(gpt2, ps, [], want))


def test_circuit_metrics_equal_a_float64_loop(gpt2, words):
    ps = make(gpt2, words, n=24)
    want_means = manual_means(gpt2, ps)
    classes = {"a": [(1, 0), (1, 2)], "b": [(0, 3)]}
    r = circuit_metrics(gpt2, ps, classes, n_boot=200, seed=3, random_subsets=2)
    everything = {(l, h) for l in range(2) for h in range(4)}
    C = {(1, 0), (1, 2), (0, 3)}

    def F(kept, removed=()):
        return manual_metric(gpt2, ps, sorted((everything - set(kept)) | set(removed)), want_means)
    fm, fc = F(everything), F(C)
    g = torch.Generator().manual_seed(3)
    idx = torch.randint(len(fm), (200, len(fm)), generator=g).numpy()  # the same draws as the code's

    def interval(vals):
        return np.percentile(vals, [2.5, 97.5])
    assert r.f_model[0] == pytest.approx(fm.mean(), abs=1e-8) and r.f_circuit[0] == pytest.approx(fc.mean(), abs=1e-8)
    ratio = np.array([fc[i].mean() / fm[i].mean() for i in idx])
    assert r.faithfulness[0] == pytest.approx(fc.mean() / fm.mean(), abs=1e-8)
    np.testing.assert_allclose(r.faithfulness[1:], interval(ratio), atol=1e-8)
    k = next(c for c in r.completeness if c["K"] == "class a")
    a, b = F(C, classes["a"]), F(everything, classes["a"])
    assert k["score"][0] == pytest.approx(abs(a.mean() - b.mean()), abs=1e-8)
    np.testing.assert_allclose(k["score"][1:], interval([abs(a[i].mean() - b[i].mean()) for i in idx]), atol=1e-8)
    m = next(x for x in r.minimality if x["head"] == "1.0")
    scores = {"∅": abs(F(C, [(1, 0)]).mean() - fc.mean()),
              "rest of a": abs(F(C, [(1, 0), (1, 2)]).mean() - F(C, [(1, 2)]).mean())}
    assert m["K"] == max(scores, key=scores.get) and m["score"][0] == pytest.approx(max(scores.values()), abs=1e-8)
    assert r.n_prompts == 24 and len(r.completeness) == 1 + 2 + 1 + 2


def test_circuit_refuses_bad_circuits(gpt2, words):
    ps = make(gpt2, words, n=15)
    with pytest.raises(InputError, match="out of range"):
        circuit_metrics(gpt2, ps, [(2, 0)], n_boot=20)
    with pytest.raises(InputError, match="two classes"):
        circuit_metrics(gpt2, ps, {"a": [(1, 0)], "b": [(1, 0)]}, n_boot=20)
    with pytest.raises(InputError, match="no head"):
        circuit_metrics(gpt2, ps, [], n_boot=20)


def test_circuit_metrics_of_one_prompt_are_refused_not_a_zero_width_interval(gpt2, words):
    """One IOI prompt ([prompts] n = 1) gave 'faithfulness 0.382 (95 % interval 0.382 … 0.382)' and every
    table cell [x, x]: each bootstrap resample of one prompt is that prompt."""
    with pytest.raises(InputError, match="at least 2 prompts for their bootstrap intervals, got 1"):
        circuit_metrics(gpt2, make(gpt2, words, n=1), [(1, 0)], n_boot=20)
    with pytest.raises(InputError, match="got 1"):  # a list of groups: the prompts counted, not the groups
        circuit_metrics(gpt2, list(make(gpt2, words, n=1).groups), [(1, 0)], n_boot=20)
    assert circuit_metrics(gpt2, list(make(gpt2, words, n=2).groups), [(1, 0)], n_boot=20).n_prompts == 2


EXPERIMENT = """model = "{folder}"
mlp = "recompute"

[prompts]
n = 30
seed = 5
names = {names}
places = {places}
objects = {objects}

[[sweep]]
name = "logits"
receivers = "logits"
sender_layers = [1, 1]

[[sweep]]
name = "q of movers"
receivers = {{ from = "logits", top = 2, kind = "q" }}

[circuit]
bootstrap = 100
seed = 1
random_subsets = 2
[circuit.classes]
"movers" = {{ from = "logits", top = 2 }}
"inhibition" = {{ from = "q of movers", top = 1 }}
"""


def test_an_experiment_file_replays_to_identical_numbers(tmp_path, folder, words, capsys):
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT.format(folder=folder.as_posix(), names=json.dumps(words[:8]),
                                     places=json.dumps(words[8:10]), objects=json.dumps(words[10:12])), encoding="utf-8")
    for out in ("one", "two"):
        assert main(["circuit", "run", str(exp), "-o", str(tmp_path / out), "--no-progress"]) == 0
    one, two = (tmp_path / "one" / "results.json").read_bytes(), (tmp_path / "two" / "results.json").read_bytes()
    assert one == two
    res = json.loads(one)
    assert res["prompts"]["n"] == 30 and len(res["sweeps"]) == 2
    movers = [t["head"] for t in res["sweeps"][0]["top"][:2]]
    assert res["circuit"]["classes"]["movers"] == [[int(x) for x in h.split(".")] for h in sorted(movers)]
    assert res["sweeps"][1]["receivers"] == [[int(h.split(".")[0]), int(h.split(".")[1]), "q"] for h in movers]
    # the same numbers through the Python API (float32 there and here: the CLI loads the default dtype)
    model = attnscope.load(folder)
    ps = ioi_prompts(model, 30, seed=5, names=words[:8], places=words[8:10], objects=words[10:12])
    classes = {k: [tuple(h) for h in v] for k, v in res["circuit"]["classes"].items()}
    r = circuit_metrics(model, ps, classes, n_boot=100, seed=1, random_subsets=2)
    assert r.faithfulness[0] == res["circuit"]["faithfulness"]["value"]
    assert "faithfulness" in (tmp_path / "one" / "report.md").read_text(encoding="utf-8")
    assert "忠实度" in (tmp_path / "one" / "report.zh.md").read_text(encoding="utf-8")
    assert "faithfulness F(C)/F(M)" in capsys.readouterr().out


@pytest.mark.parametrize("body, words", [
    ('model = "x"\n[prompts]\ncount = 3\n', "unknown key"),
    ('mlp = "recompute"\n', "model = None"),
    ('model = "x"\nmlp = "keep"\n', "recompute, freeze"),
    ('model = "x"\n[[sweep]]\nname = "a"\nreceivers = { from = "b", top = 2 }\n', "earlier sweep"),
    ('model = "x"\n[circuit.classes]\n"m" = { from = "nope" }\n', "not a sweep of this file"),
    ('model = = "x"\n', "not valid TOML"),
])
def test_bad_experiment_files_are_one_line(tmp_path, body, words, capsys):
    exp = tmp_path / "exp.toml"
    exp.write_text(body, encoding="utf-8")
    assert main(["circuit", "run", str(exp), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_help_and_a_missing_file(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["circuit", "--help"])
    assert "experiment.toml" in capsys.readouterr().out
    assert main(["circuit", "run", str(tmp_path / "none.toml"), "-o", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_folder_for_the_experiment_file_is_named_a_folder(tmp_path, capsys):
    """'circuit run FOLDER' said the experiment file 'does not exist' about a folder that does."""
    assert main(["circuit", "run", str(tmp_path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"experiment file {str(tmp_path)!r} is a folder; give the experiment's .toml file" in err, err
    assert err.count("\n") == 1 and "does not exist" not in err


def test_the_chinese_report_names_its_columns_and_subsets_in_chinese():
    """report.zh.md of a circuit run had the columns 'heads' and 'class' and the subsets 'class name
    movers', 'random 1', 'rest of S-inhibition' in English; report.md keeps them (docs/results/ioi)."""
    from pathlib import Path

    from attnscope.patching.report import report
    folder = Path(__file__).resolve().parents[2] / "docs" / "results" / "ioi"
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    zh = report(results, "zh")
    assert "| K | 头 | F(C∖K)" in zh and "| v | 类别 | K |" in zh
    assert "| 类别 name movers |" in zh and "| 随机 1 |" in zh and "| S-inhibition 中其余的头 |" in zh
    for words in ("| heads |", "| class |", "| class ", "| random ", "rest of "):
        assert words not in zh, words
    assert report(results, "en") == (folder / "report.md").read_text(encoding="utf-8")

