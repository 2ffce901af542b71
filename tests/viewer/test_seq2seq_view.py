"""The encoder–decoder viewer's data: q, k, v of every attention as traced, T5's buckets and bias
tables as transformers computes them, and the page's float64 arithmetic equal to transformers'
eager attention weights and to a NumPy float64 softmax written here; the CLI and the server's
page data; one clear error for each misfit of source, target and model."""

import numpy as np
import pytest
import torch

from attnscope import InputError
from attnscope.cli import main
from attnscope.viewer import data as D
from attnscope.viewer import seq2seq as S
from tests.models.seq2seq.fixtures import hf_seq2seq_models, seq2seq, seq2seq_dirs  # noqa: F401
from tests.models.seq2seq.texts import PAIRS

NAMES = ["t5", "bart", "mt5", "bart_zh"]
HF_ATT = {"encoder": "encoder_attentions", "self": "decoder_attentions", "cross": "cross_attentions"}


def pair(name):
    src, tgt = PAIRS["zh" if name in ("mt5", "bart_zh") else "en"]
    return src[0], tgt[0]


def softmax64(s):
    """A float64 softmax written out here (max subtracted, −inf → 0)."""
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(-1, keepdims=True)


def hf_outputs(hf, tr):
    with torch.no_grad():
        return hf(input_ids=tr.input_ids, attention_mask=tr.attention_mask, decoder_input_ids=tr.decoder_input_ids,
                  decoder_attention_mask=tr.decoder_attention_mask, output_attentions=True)


@pytest.mark.parametrize("name", NAMES)
def test_page_weights_equal_transformers_and_numpy(name, seq2seq, hf_seq2seq_models):  # noqa: F811
    model, hf = seq2seq[name], hf_seq2seq_models(name)
    source, target = pair(name)
    d = S.seq2seq_view_data(model, source, target)
    cfg, entry = d["config"], d["texts"][0]
    tr = S.trace_pair(model, source, target)
    out = hf_outputs(hf, tr)
    bias = cfg["bias"]
    assert (bias is not None) == name.endswith("t5")
    assert entry["source_tokens"] and entry["target_tokens"][0] in ("<pad>", "</s>", "[SEP]")
    for att in S.ATTENTIONS:
        q, k, v = (D.decode(entry[att][x]) for x in ("q", "k", "v"))
        n_layers = model.config.n_layers if att == "encoder" else model.config.n_decoder_layers
        assert q.shape[:2] == (n_layers, model.config.n_heads)
        assert k.shape[2] == (len(entry["target_tokens"]) if att == "self" else len(entry["source_tokens"]))
        for layer in range(n_layers):
            assert q[layer].tobytes() == tr.step(layer, "q", text=0, attention=att).numpy().tobytes()
            assert v[layer].tobytes() == tr.step(layer, "v", text=0, attention=att).numpy().tobytes()
            # NumPy float64 from the stored numbers: factor·q·kᵀ (+ T5's table[bucket]) (−inf above the diagonal)
            s = np.einsum("hid,hjd->hij", q[layer].astype(np.float64), k[layer].astype(np.float64)) * cfg["factor"]
            if bias is not None and att in bias:
                b = D.decode(entry[att]["buckets"]).astype(np.int64)  # (n_q, n_k)
                s = s + np.asarray(bias[att]["table"])[b].transpose(2, 0, 1)
            if att == "self":
                s = np.where(np.tril(np.ones(s.shape[1:], dtype=bool)), s, -np.inf)
            ours = S.page_weights(q[layer], k[layer], cfg["factor"], att, bias)
            np.testing.assert_allclose(ours, softmax64(s), rtol=1e-13, atol=1e-16)
            hf_w = getattr(out, HF_ATT[att])[layer][0].double().numpy()
            np.testing.assert_allclose(ours, hf_w, atol=1e-5)


def test_t5_buckets_and_tables_are_transformers(seq2seq, hf_seq2seq_models):  # noqa: F811
    from transformers.models.t5.modeling_t5 import T5Attention

    model, hf = seq2seq["t5"], hf_seq2seq_models("t5")
    source, target = PAIRS["en"][0][2], PAIRS["en"][1][2]  # the longest pair: distances in the log buckets
    d = S.seq2seq_view_data(model, source, target)
    bias, entry = d["config"]["bias"], d["texts"][0]
    c = hf.config
    for att, stack, bi in (("encoder", hf.encoder, True), ("self", hf.decoder, False)):
        table = stack.block[0].layer[0].SelfAttention.relative_attention_bias.weight.detach().double().numpy()
        np.testing.assert_array_equal(np.asarray(bias[att]["table"]), table)
        b = D.decode(entry[att]["buckets"]).astype(np.int64)
        n_q, n_k = b.shape
        rel = torch.arange(n_k)[None, :] - torch.arange(n_q)[:, None]
        want = T5Attention._relative_position_bucket(rel, bidirectional=bi, num_buckets=c.relative_attention_num_buckets,
                                                     max_distance=c.relative_attention_max_distance).numpy()
        np.testing.assert_array_equal(b, want)
        assert b.max() >= c.relative_attention_num_buckets // (2 if bi else 1) // 2, "the text reaches the log buckets"
    assert "buckets" not in entry["cross"]  # cross-attention has no position bias


def test_several_pairs_and_page_html(seq2seq):  # noqa: F811
    from attnscope.viewer.seq2seq_page import render
    model = seq2seq["bart"]
    src, tgt = PAIRS["en"]
    d = S.build_pairs(model, list(zip(src, tgt)))
    assert [t["source"] for t in d["texts"]] == src and d["seq2seq"] is True
    page = render(d)
    assert "Seq2SeqViewer" in page and 'id="attnscope-data"' in page


def test_bad_input_one_error_each(seq2seq, tiny_models):  # noqa: F811
    t5 = seq2seq["t5"]
    with pytest.raises(InputError, match="not an encoder–decoder model"):
        S.seq2seq_view_data(tiny_models["gpt2"], "a", "b")
    with pytest.raises(InputError, match="source text is empty"):
        S.seq2seq_view_data(t5, " ", "b")
    with pytest.raises(InputError, match="needs the decoder's text"):
        S.seq2seq_view_data(t5, "a", None)
    with pytest.raises(InputError, match="decimals"):
        S.seq2seq_view_data(t5, "a", "b", decimals=11)
    with pytest.raises(InputError, match="^source has .* longer than the encoder's limit of 64 "):  # BART's 64 positions
        S.seq2seq_view_data(seq2seq["bart"], "word " * 80, "b")


def test_cli_view(seq2seq_dirs, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "t5.html"
    assert main(["view", PAIRS["en"][0][0], "--target", PAIRS["en"][1][0], "--model", str(seq2seq_dirs["t5"]),
                 "-o", str(out)]) == 0
    assert "Seq2SeqViewer" in out.read_text(encoding="utf-8")
    for argv, msg in ((["view", "a", "--model", str(seq2seq_dirs["t5"])], "give the decoder's text with --target"),
                      (["view", "a", "--target", "b", "--compare", "c", "--model", str(seq2seq_dirs["bart"])],
                       "--compare"),
                      (["view", "a", "--target", ""], "--target is empty")):
        assert main(argv + ["-o", str(tmp_path / "x.html")]) == 2
        assert msg in capsys.readouterr().err


def test_cli_a_too_long_text_is_named_source_or_target(seq2seq_dirs, tmp_path, capsys):  # noqa: F811
    """``attnscope view SOURCE --target TARGET`` with a long target said "the text has … tokens,
    longer than max_length = 63 positions" (the trace's sentence), naming neither text; the served
    page already named them. The count is the tokenizer's own."""
    import attnscope
    model = attnscope.load(str(seq2seq_dirs["bart"]))
    long = "word " * 80
    full = len(model.tokenizer.backend.encode(long).ids)
    for argv, msg in ((["a", "--target", long], f"target has {full} tokens, longer than the decoder's limit of 63 "),
                      ([long, "--target", "b"], f"source has {full} tokens, longer than the encoder's limit of 64 ")):
        out = tmp_path / "x.html"
        assert main(["view", *argv, "--model", str(seq2seq_dirs["bart"]), "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("extra", [["--token", "a"], ["--no-attribution"], ["--no-lens"]])
def test_cli_an_option_the_seq2seq_page_does_not_read_is_refused(seq2seq_dirs, tmp_path, capsys, extra):  # noqa: F811
    """The encoder–decoder page has no context view, attribution switch or lens: these options wrote
    the same page as without them (dropped in silence); now one sentence, and no file."""
    out = tmp_path / "x.html"
    assert main(["view", "a b", "--target", "c", "--model", str(seq2seq_dirs["t5"]), "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert f"{extra[0]} does not apply to the page of" in err and "encoder–decoder" in err and err.count("\n") == 1
    assert not out.exists()


def test_cli_target_for_a_one_text_model(tmp_path, capsys):
    from attnscope.testing import tiny
    folder = tiny.BUILDERS["bert-chinese"](tmp_path / "bert")
    assert main(["view", "我喜欢", "--target", "b", "--model", str(folder), "-o", str(tmp_path / "x.html")]) == 2
    assert "leave --target out" in capsys.readouterr().err


def test_server_page_and_api(seq2seq):  # noqa: F811
    from fastapi.testclient import TestClient

    from attnscope.server import create_app
    model = seq2seq["t5"]
    client = TestClient(create_app(model))
    assert "seq2seq" in client.get("/").text
    source, target = pair("t5")
    r = client.post("/api/view", json={"source": source, "target": target, "decimals": 6})
    assert r.status_code == 200
    got = r.json()
    assert got["decimals"] == 6 and "font_css" in got
    want = S.seq2seq_view_data(model, source, target)
    for att in S.ATTENTIONS:
        for x in ("q", "k", "v"):
            assert np.array_equal(D.decode(got["texts"][0][att][x]), D.decode(want["texts"][0][att][x]))
    assert sorted(client.get("/openapi.json").json()["paths"]) == ["/api/model", "/api/view"]
    # /api/model said n_layers, the encoder's, and nothing of the decoder's (tiny T5: 2 and 3)
    info = client.get("/api/model").json()
    assert (info["n_layers"], info["n_decoder_layers"]) == (model.config.n_layers, model.config.n_decoder_layers)
    assert info["n_layers"] != info["n_decoder_layers"]
    for body, msg in (({"target": "x"}, "a target needs its source"), ({"source": "x"}, "send 'target'"),
                      ({"text": "x"}, "not 'text'"), ({"source": "", "target": "x"}, "source is empty"),
                      ({"source": "a", "target": "b", "layer": 1}, "unknown field 'layer'"),
                      ({"source": "a" * 5000, "target": "b"}, "the limit is 4096")):
        r = client.post("/api/view", json=body)
        assert r.status_code == 422 and msg in r.json()["detail"], (body, r.json())


def test_the_served_empty_body_names_source_and_target(seq2seq):  # noqa: F811
    """An empty body at an encoder–decoder's /api/view was told to send {"text": …}, which this
    model then refuses ("not 'text'"); the example is a source and a target, and it is answered."""
    import json

    from fastapi.testclient import TestClient

    from attnscope.server import create_app
    client = TestClient(create_app(seq2seq["t5"]))
    r = client.post("/api/view", content=b"", headers={"content-type": "application/json"})
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail.startswith("request body is empty; send a JSON object such as {\"source\": ")
    example = json.loads(detail.split("such as ", 1)[1])
    assert set(example) == {"source", "target"}
    assert client.post("/api/view", json=example).status_code == 200


def test_the_served_too_long_text_is_named_source_or_target(seq2seq):  # noqa: F811
    """The served page has two boxes; a text too long for its stack said "the text has … tokens,
    longer than max_length = 511 positions", naming neither box and a max_length nobody set. The
    counts here are the model's own encode() of each text (truncate=False raises past the limit)."""
    from fastapi.testclient import TestClient

    from attnscope.server import create_app
    model = seq2seq["t5"]
    client = TestClient(create_app(model, max_chars=100_000))
    long = "b " * 600
    n = len(model.encode(long, max_length=model.tokenizer.max_length, truncate=True).tokens[0])  # at the limit
    full = len(model.tokenizer.backend.encode(long).ids)
    assert full > n
    decoder = model.config.max_positions - 1
    r = client.post("/api/view", json={"source": "hello", "target": long})
    assert r.status_code == 422
    assert r.json()["detail"] == (f"target has {full} tokens, longer than the decoder's limit of {decoder} positions "
                                  "(one more is its start token); shorten it")
    r = client.post("/api/view", json={"source": long, "target": "b"})
    assert r.status_code == 422
    assert r.json()["detail"] == (f"source has {full} tokens, longer than the encoder's limit of "
                                  f"{model.tokenizer.max_length} positions; shorten it")
    ok = client.post("/api/view", json={"source": "hello", "target": "b " * 10})
    assert ok.status_code == 200, ok.json()
