"""The lens view's page data (attnscope.viewer.lens_view): on a tiny random GPT-2, every number the
grid carries is the logit lens written here in float64 NumPy from the traced stream (the final
LayerNorm by its formula, the tied unembedding, softmax, the KL), not logit_lens's own arithmetic;
the limit is a left-out marker the page puts in a sentence; an encoder gets no lens; attnscope
view writes the view into a decoder's page (--no-lens leaves it out)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import attnscope
from attnscope.cli import main
from attnscope.lens.stream import token_text
from attnscope.viewer.data import all_text, decode
from attnscope.viewer.lens_view import MAX_TOKENS, add_lens
from attnscope.viewer.run import view_data
from tests.lens.test_lens import W_U, f64, final_norm_np, log_softmax

TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    from attnscope.testing.tiny import BUILDERS
    return BUILDERS["gpt2"](tmp_path_factory.mktemp("lens-view") / "gpt2")


@pytest.fixture(scope="module")
def gpt2(gpt2_dir):
    return attnscope.load(gpt2_dir)


def test_the_grid_is_the_logit_lens_by_hand(gpt2):
    data = view_data(gpt2, TEXT, lens=True)
    n_layers = gpt2.config.n_layers
    assert data["lens"] == {"points": ["embed"] + [f"layers.{i}.{s}" for i in range(n_layers) for s in ("attn_resid", "out")],
                            "k": 5, "max_tokens": MAX_TOKENS}
    z = data["texts"][0]["lens"]
    P, L = 1 + 2 * n_layers, len(data["texts"][0]["tokens"])
    tr = gpt2.trace([TEXT], names=["layers.*.attn_resid", "layers.*.out", "layers.0.attn.out"])
    stream = [f64(tr["layers.0.attn_resid"][0]) - f64(tr["layers.0.attn.out"][0])]  # what enters layer 0
    stream += [f64(tr[name][0]) for name in data["lens"]["points"][1:]]  # (L, d) each
    logp = np.stack([log_softmax(final_norm_np(gpt2, h) @ W_U(gpt2).T) for h in stream])  # (P, L, V)
    final = logp[-1]
    target = final.argmax(-1)  # (L,)
    assert z["target_ids"] == target.tolist()
    top_probs, target_prob, kl = decode(z["top_probs"]), decode(z["target_prob"]), decode(z["kl"])
    assert top_probs.shape == (P, L, 5) and target_prob.shape == kl.shape == (P, L)
    order = np.argsort(-logp, axis=-1, kind="stable")[..., :5]  # (P, L, 5)
    rows = np.arange(L)
    for p in range(P):
        np.testing.assert_allclose(top_probs[p], np.exp(np.take_along_axis(logp[p], order[p], -1)), atol=2e-6)
        # the top ids: the same tokens unless two probabilities tie within float32's reach
        gap = np.diff(-np.sort(-logp[p], -1)[:, :6], axis=-1)  # (L, 5)
        sure = np.abs(gap).min(-1) > 1e-5
        assert np.array_equal(np.array(z["ids"][p])[sure], order[p][sure])
        np.testing.assert_allclose(target_prob[p], np.exp(logp[p][rows, target]), atol=2e-6)
        assert z["target_rank"][p] == (logp[p] > logp[p][rows, target][:, None]).sum(-1).tolist()
        np.testing.assert_allclose(kl[p], (np.exp(final) * (final - logp[p])).sum(-1), atol=5e-5)
    # the lens table's words: the decoding, or a byte piece's bytes where that is part of a character
    assert all(z["words"][str(i)] == token_text(gpt2, i) for row in z["ids"] for cell in row for i in cell)
    assert all(w in all_text(data) for w in z["words"].values())  # the font subset draws them


def test_past_the_limit_the_entry_says_so(gpt2):
    data = view_data(gpt2, TEXT, compare="the lazy dog", lens=False)
    add_lens(data, gpt2, [TEXT, "the lazy dog"], max_tokens=5)
    assert data["texts"][0]["lens"] == {"left_out": "too_long", "n": len(data["texts"][0]["tokens"])}
    assert "ids" in data["texts"][1]["lens"]  # the short one keeps its grid
    add_lens(data, gpt2, [None, "the lazy dog"])
    assert data["texts"][0]["lens"]["left_out"] == "tokens"


def test_an_encoder_has_no_lens(minilm):  # noqa: F811
    data = view_data(minilm, "the bank of the river", lens=True)
    assert "lens" not in data and "lens" not in data["texts"][0]


def test_view_writes_the_lens_into_a_decoders_page(gpt2_dir, tmp_path, capsys):
    folder = str(gpt2_dir)
    for extra, has in (([], True), (["--no-lens"], False)):
        out = tmp_path / f"page{len(extra)}.html"
        assert main(["view", TEXT, "--model", folder, "--no-attribution", "-o", str(out), *extra]) == 0
        page = out.read_text(encoding="utf-8")
        data = json.loads(re.search(r'<script type="application/json" id="attnscope-data">(.*?)</script>', page, re.S)
                          .group(1))
        assert ("lens" in data) is has and ("lens" in data["texts"][0]) is has


def test_view_no_lens_for_an_encoder_is_refused(tmp_path, capsys):
    """An encoder's page has no lens view: --no-lens wrote the same page as without it (dropped)."""
    out = tmp_path / "page.html"
    assert main(["view", TEXT, "--no-lens", "-o", str(out)]) == 2  # the default all-MiniLM-L6-v2
    err = capsys.readouterr().err
    assert "--no-lens leaves out the lens view of a language model; the page of" in err and err.count("\n") == 1
    assert not out.exists()
