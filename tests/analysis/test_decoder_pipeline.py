"""Decoder head scores through ``analyze`` and ``attnscope analyze`` on tiny random decoders: the
pipeline's batched sums equal each text (and each repeated sequence) traced alone and scored by the
NumPy reference; the report, CSV and JSON say the same; bad settings are one line."""

import csv
import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest

import attnscope
from attnscope.analysis import analyze
from attnscope.analysis.decoder_heads import DECODER_STATS, candidate_ids, leading_specials, repeated_tokens
from attnscope.cli import main
from attnscope.testing import tiny as testing

from .test_decoder_heads import reference_repeat

TEXTS = ["The softmax turns scores into weights.", "I like cats.", "Every token looks at every other token.",
         "Heads attend to the previous token."]


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    f = tmp_path_factory.mktemp("corpus") / "c.txt"
    f.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return f


def alone(model, texts, n_seqs, length, seed):
    """The four scores, each text and each repeated sequence traced alone, in NumPy."""
    c = model.config
    sink = np.zeros((c.n_layers, c.n_heads))
    n_sink = 0
    for t in texts:
        tr = model.trace(t, names="layers.*.attn.weights")
        for l in range(c.n_layers):
            sink[l] += tr[f"layers.{l}.attn.weights"][0, :, 1:, 0].double().sum(-1).numpy()
        n_sink += len(tr.tokens[0]) - 1
    ids = repeated_tokens(candidate_ids(model.tokenizer, c), n_seqs, length, seed, leading_specials(model.tokenizer))
    rep = {k: np.zeros((c.n_layers, c.n_heads)) for k in ("prev_token", "duplicate", "induction")}
    for row in ids:
        import torch

        from attnscope.tokenizer import Batch
        b = Batch(row[None], torch.ones_like(row[None]), torch.zeros_like(row[None]), [[""] * len(row)], [""])
        tr = model.trace(b, names="layers.*.attn.weights")
        for l in range(c.n_layers):
            got = reference_repeat(tr[f"layers.{l}.attn.weights"].numpy(), row[None].tolist())
            for k in rep:
                rep[k][l] += got[k] / len(ids)  # every sequence has the same counts
    return {"sink": sink / n_sink, **rep}


def test_gpt2_scores_equal_each_text_alone(gpt2_dir, corpus):
    model = attnscope.load(gpt2_dir)
    r = analyze(corpus, model, batch_size=3, importance_texts=0, induction_seqs=5, induction_length=9, seed=3,
                progress=False)
    want = alone(model, TEXTS, 5, 9, 3)
    for s in DECODER_STATS:
        np.testing.assert_allclose(r.means[s], want[s], rtol=2e-5, atol=1e-7, err_msg=s)
    assert r.repeat["length"] == 9 and r.repeat["prefix"] == [] and r.counters["repeat_texts"] == 5
    assert r.repeat["candidates"] == model.config.vocab_size - 1  # <|endoftext|> left out
    # default length: 50 does not fit 64 positions, so the largest that does, said in the report
    r = analyze(corpus, model, importance_texts=0, induction_seqs=2, progress=False)
    assert r.repeat["length"] == 32 and r.repeat["capped"]


def test_llama_with_bos_and_grouped_heads(tmp_path, corpus):
    from tests.models.decoders.tiny import llama_gqa
    model = attnscope.load(llama_gqa(tmp_path / "llama"))
    assert leading_specials(model.tokenizer) == [1] and model.config.kv_heads < model.config.n_heads
    r = analyze(corpus, model, batch_size=4, importance_texts=0, induction_seqs=3, induction_length=12,
                progress=False)
    want = alone(model, TEXTS, 3, 12, 0)
    for s in DECODER_STATS:
        np.testing.assert_allclose(r.means[s], want[s], rtol=2e-5, atol=1e-7, err_msg=s)
    assert r.repeat["prefix_tokens"] == ["<bos>"]
    assert 1 not in candidate_ids(model.tokenizer, model.config).tolist()


def test_cli_report_csv_and_json_agree(gpt2_dir, corpus, tmp_path):
    out = tmp_path / "out"
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(["analyze", str(corpus), "--model", str(gpt2_dir), "--out", str(out), "--importance-texts", "0",
                   "--induction-seqs", "4", "--induction-length", "10", "--no-progress",
                   "--threshold", "induction=0.05", "--threshold", "sink=0.1"])
    assert rc == 0
    stdout = buf.getvalue()
    data = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    dec = data["decoder"]
    assert dec["thresholds"] == {"induction": 0.05, "duplicate": 0.4, "prev_token": 0.4, "sink": 0.1}
    assert dec["repeat"]["sequences"] == 4 and dec["repeat"]["length"] == 10
    rows = list(csv.DictReader(open(out / "heads.csv", encoding="utf-8")))
    for row, head in zip(rows, data["heads"]):
        for s in DECODER_STATS:
            assert float(row[s]) == pytest.approx(head[s], rel=1e-5)
        assert row["roles"] == head["roles"]
        roles = set(filter(None, head["roles"].split("+")))
        assert ("induction" in roles) == (head["induction"] >= 0.05)
        assert ("sink" in roles) == (head["sink"] >= 0.1)
        assert ("previous-token" in roles) == (head["prev_token"] >= 0.4)
    ind = sorted((h for h in data["heads"] if h["induction"] >= 0.05), key=lambda h: -h["induction"])
    assert dec["roles"]["induction"] == [f"{h['layer']}.{h['head']}" for h in ind]
    layers = list(csv.DictReader(open(out / "layers.csv", encoding="utf-8")))
    for l, row in enumerate(layers):
        sinks = [h["sink"] for h in data["heads"] if h["layer"] == l]
        assert float(row["sink"]) == pytest.approx(np.mean(sinks), rel=1e-5)
        assert float(row["induction_max"]) == pytest.approx(max(h["induction"] for h in data["heads"]
                                                                if h["layer"] == l), rel=1e-5)
        assert int(row["induction_heads"]) == sum(1 for h in ind if h["layer"] == l)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Decoder heads" in report and "induction: induction ≥ 0.05" in report and "sink: sink ≥ 0.1" in report
    assert "on 4 sequences of 10 distinct random tokens written twice" in report
    assert "induction heads (induction ≥ 0.05)" in stdout and "attention sink" in stdout
    for s in DECODER_STATS:
        assert (out / "heatmaps" / f"{s}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_encoders_have_no_decoder_part(corpus, tmp_path):
    out = tmp_path / "enc"
    with redirect_stdout(io.StringIO()):
        assert main(["analyze", str(corpus), "--out", str(out), "--importance-texts", "0", "--no-progress"]) == 0
    data = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    assert "decoder" not in data and "induction" not in data["heads"][0]
    assert "Decoder heads" not in (out / "report.md").read_text(encoding="utf-8")


def test_skipped_pass_is_said(gpt2_dir, corpus, tmp_path):
    r = analyze(corpus, attnscope.load(gpt2_dir), importance_texts=0, induction_seqs=0, progress=False)
    assert np.isnan(r.means["induction"]).all() and np.isfinite(r.means["sink"]).all()
    r.write(tmp_path / "o")
    report = (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    assert "not measured (--induction-seqs 0)" in report and "Induction heads" not in report
    assert not (tmp_path / "o" / "heatmaps" / "induction.png").exists()


@pytest.mark.parametrize("argv,msg", [
    (["--induction-length", "40"], "the repeated sequence has 0+2×40 = 80 tokens, more than the model's 64 "
                                   "positions; use at most 32"),
    # the user's --max-length is what limits these (the sentence blamed the model's positions)
    (["--max-length", "20", "--induction-length", "12"], "= 24 tokens, more than --max-length 20; use at most 10"),
    (["--max-length", "3"], "the induction pass needs at least 4 tokens (0 leading special tokens, then 2 tokens "
                            "written twice), more than --max-length 3"),
    (["--induction-length", "1"], "--induction-length must be from 2 to 1000000, got 1"),
    (["--induction-seqs", "-1"], "--induction-seqs must be from 0 to 1000000000, got -1"),
    (["--threshold", "induction=2"], "threshold induction must be a number in [0, 1], got 2.0"),
])
def test_bad_settings_are_one_line(gpt2_dir, corpus, tmp_path, capsys, argv, msg):
    assert main(["analyze", str(corpus), "--model", str(gpt2_dir), "--out", str(tmp_path / "x"),
                 "--no-progress", "--importance-texts", "0", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and msg in err, err


@pytest.mark.parametrize("kw", [{}, {"induction_length": 2}])
def test_max_length_shorter_than_the_prefix(gpt2_dir, corpus, kw):
    """Three leading special tokens and --max-length 2: 'a copy has room for -1' (and 'use at most -1'
    with --induction-length 2); one sentence naming the tokens the pass needs now."""
    from tokenizers.processors import TemplateProcessing

    model = attnscope.load(gpt2_dir)
    eot = model.tokenizer.backend.token_to_id("<|endoftext|>")
    model.tokenizer.backend.post_processor = TemplateProcessing(
        single="<|endoftext|> <|endoftext|> <|endoftext|> $A", special_tokens=[("<|endoftext|>", eot)])
    assert leading_specials(model.tokenizer) == [eot] * 3
    for max_length in (2, 6):
        with pytest.raises(attnscope.ConfigError) as e:
            analyze(str(corpus), model, importance_texts=0, progress=False, max_length=max_length, **kw)
        assert str(e.value) == (f"the induction pass needs at least 7 tokens (3 leading special tokens, then 2 tokens "
                                f"written twice), more than --max-length {max_length} (--induction-seqs 0 skips it)")


@pytest.mark.parametrize("argv, name", [(["--induction-seqs", "8"], "induction_seqs = 8 (--induction-seqs)"),
                                        (["--induction-length", "10"], "induction_length = 10 (--induction-length)"),
                                        (["--seed", "3"], "seed = 3 (--seed)")])
def test_repeat_settings_on_an_encoder_are_refused_not_dropped(corpus, tmp_path, capsys, argv, name):
    """An encoder runs no repeated random sequences (causal models only): '--induction-seqs 8 --seed 3'
    wrote the same report as without them. One sentence now; --induction-seqs 0 (none) still passes."""
    bert = testing.tiny_bert(tmp_path / "bert")
    capsys.readouterr()  # transformers' own lines as it saves the checkpoint
    base = ["analyze", str(corpus), "--model", str(bert), "--no-progress", "--importance-texts", "0", "--norm-texts", "0"]
    assert main([*base, "--out", str(tmp_path / "x"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err and "this model is not causal: it would be dropped" in err, err
    assert main([*base, "--out", str(tmp_path / "y"), "--induction-seqs", "0"]) == 0
    from attnscope.analysis import AnalysisConfig
    with pytest.raises(attnscope.ConfigError, match="induction_seqs = 8"):
        analyze(str(corpus), attnscope.load(bert), AnalysisConfig(induction_seqs=8, importance_texts=0, progress=False))
