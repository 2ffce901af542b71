"""Readable labels of byte-level pieces (attnscope.pieces), and that every display uses them:
explain (row and path), plot, the viewer's data, the trace's token list, the server's answers.

The reference for what a piece "forms" is the tokenizers library's own ByteLevel decoder
(``backend.decode`` of the ids of a span), not attnscope's byte table."""

from __future__ import annotations

import numpy as np
import pytest

import attnscope
from attnscope.pieces import CONTINUED, Pieces, byte_level_pieces, find
from attnscope.testing import tiny as testing

SENTENCE = "我喜欢人工智能"
#: SmolLM2's 15 pieces of the sentence: a character is shown on the piece that completes it.
SMOL_LABELS = ["…", "我", "…", "…", "喜", "…", "…", "欢", "人", "…", "工", "…", "…", "智", "能"]


@pytest.fixture(scope="module")
def smol():
    return attnscope.load("smollm2-135m")


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return testing.tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="module")
def gpt2(gpt2_dir):
    return attnscope.load(gpt2_dir)


def _decoded(model, ids) -> str:
    return model.tokenizer.backend.decode([int(i) for i in ids])


@pytest.mark.parametrize("which", ["smollm2-135m", "tiny-gpt2"])
def test_labels_are_the_characters_the_pieces_form(which, request):
    model = request.getfixturevalue({"smollm2-135m": "smol", "tiny-gpt2": "gpt2"}[which])
    for text in (SENTENCE, "The cat sat, didn't it? 你好 café 😀!"):
        enc = model.encode(text)
        toks, ids, labels = enc.tokens[0], enc.ids[0], enc.labels[0]
        pieces = model.tokenizer.pieces(toks)
        assert list(pieces.labels) == labels and len(labels) == len(toks)
        # every character's span decodes (by the library's decoder) to that character, and the
        # spans tile the text; the label of the completing piece holds it, earlier pieces end with …
        assert "".join(c.char for c in pieces.chars) == text
        for c in pieces.chars:
            assert c.char in _decoded(model, ids[c.first:c.last + 1])
            assert c.char in labels[c.last]
            assert all(labels[p].endswith(CONTINUED) for p in range(c.first, c.last))
        assert "".join(lb.removesuffix(CONTINUED) for lb in labels) == text
        assert not any("Ġ" in lb or "\ufffd" in lb for lb in labels)


def test_smollm2_sentence_labels(smol):
    enc = smol.encode(SENTENCE)
    assert len(enc.tokens[0]) == 15
    assert enc.labels[0] == SMOL_LABELS
    spans = {c.char: (c.first, c.last) for c in smol.tokenizer.pieces(enc.tokens[0]).chars}
    assert spans == {"我": (0, 1), "喜": (2, 4), "欢": (5, 7), "人": (8, 8), "工": (9, 10), "智": (11, 13),
                     "能": (14, 14)}


def test_bytes_that_form_no_character_show_as_hex_and_specials_stay():
    # å alone is the lead byte e5 of a 3-byte character: nothing to show but the byte
    assert byte_level_pieces(["å"]).labels == ("‹e5›",)
    assert byte_level_pieces(["ĸ", "ľ"]).labels == ("‹96›", "‹9c›")
    p = byte_level_pieces(["<|endoftext|>", "å", "ĸ", "ľ"], specials={"<|endoftext|>"})
    assert p.labels == ("<|endoftext|>", "…", "…", "喜")


def test_find_by_piece_label_and_by_character(smol, gpt2):
    p = smol.tokenizer.pieces(smol.encode(SENTENCE).tokens[0])
    assert find(p, "喜").spans == ((2, 4),) and find(p, "喜").by_chars
    assert find(p, "喜欢").spans == ((2, 7),)
    assert find(p, "人").spans == ((8, 8),) and not find(p, "人").by_chars
    assert find(p, "猫").spans == ()
    toks = gpt2.encode("I like cats").tokens[0]
    assert toks == ["I", "Ġlike", "Ġcats"]
    q = gpt2.tokenizer.pieces(toks)
    assert find(q, " cats").spans == find(q, "cats").spans == find(q, "Ġcats").spans == ((2, 2),)
    assert find(q, "cat").spans == ()  # part of a piece is not the piece
    toks = gpt2.encode("The cat sat").tokens[0]
    assert toks == ["The", "Ġ", "c", "at", "Ġs", "at"]  # the tiny vocabulary has no "Ġcat"
    q = gpt2.tokenizer.pieces(toks)
    assert find(q, "at").spans == ((3, 3), (5, 5)) and find(q, " cat").spans == ((2, 3),)


def test_explain_token_xi_finds_its_pieces(smol):
    from attnscope.explain.row import explain_model_row
    w = explain_model_row(SENTENCE, smol, layer=0, head=0, token="喜")
    assert w.meta["labels"] == SMOL_LABELS and w.meta["tokens"] == smol.encode(SENTENCE).tokens[0]
    text = w.render("markdown")
    assert "positions 2–4" in text and "e5 96 9c" in text and "position 4" in text
    by_pos = explain_model_row(SENTENCE, smol, layer=0, head=0, position=4)
    np.testing.assert_array_equal(w.values["weights"], by_pos.values["weights"])
    assert "4:喜" in text and "Ġ" not in text and "\ufffd" not in text


def test_explain_path_reads_column(smol, capsys):
    """--path's tokenization table sets each byte piece beside the characters it forms ('reads'), and
    the query is named by its label, not its bytes."""
    from attnscope.cli import main
    assert main(["explain", "--path", "--model", "smollm2-135m", "--text", SENTENCE, "--token", "喜",
                 "--layer", "0", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "4:喜" in out and "reads" in out
    enc = smol.encode(SENTENCE)
    rows = [ln for ln in out.splitlines() if ln.startswith("|") and ln.count("|") >= 5]
    for pos, (piece, label, i) in enumerate(zip(enc.tokens[0], SMOL_LABELS, enc.ids[0])):
        cells = [c.strip() for c in rows[pos + 2].strip("|").split("|")]  # after the header and its rule
        assert cells == [str(pos), piece, label, str(i)], cells


def test_explain_cli(smol, gpt2_dir, capsys):
    from attnscope.cli import main
    assert main(["explain", "--model", "smollm2-135m", "--text", SENTENCE, "--token", "喜"]) == 0
    out = capsys.readouterr().out
    assert "The query is 4:喜" in " ".join(out.split()) and "positions 2–4" in out
    for arg in (" cats", "cats", "Ġcats"):
        assert main(["explain", "--model", str(gpt2_dir), "--text", "I like cats", "--token", arg]) == 0
        assert "The query is 2: cats;" in " ".join(capsys.readouterr().out.split()), arg
    assert main(["explain", "--model", "smollm2-135m", "--text", SENTENCE, "--token", "猫"]) == 2
    err = capsys.readouterr().err
    assert "0:… 1:我 2:… 3:… 4:喜" in err and "Ġ" not in err


def test_trace_viewer_plot_and_server_show_labels(smol, tmp_path):
    tr = smol.trace(SENTENCE, names=["layers.0.attn.q", "layers.0.attn.k", "layers.0.attn.v"])
    assert tr.labels[0] == SMOL_LABELS and tr.text_labels(0) == SMOL_LABELS
    assert tr.tokens[0] == smol.encode(SENTENCE).tokens[0]  # the tokenizer's own strings stay
    back = attnscope.Trace.load(tr.save(tmp_path / "t"))
    assert back.labels == tr.labels

    from attnscope.viewer.run import view_data
    data = view_data(smol, SENTENCE)
    assert data["texts"][0]["tokens"] == SMOL_LABELS

    from attnscope import plot
    fig = plot.head_heatmap(tr, 0, 0)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert "喜" in ticks and not any("å" in t for t in ticks)

    from fastapi.testclient import TestClient

    from attnscope.server import create_app
    client = TestClient(create_app(smol, max_chars=200))
    r = client.post("/api/attention", json={"text": SENTENCE, "layer": 0, "head": 0})
    assert r.status_code == 200 and r.json()["tokens"] == SMOL_LABELS
    r = client.post("/api/steps", json={"text": "The cat sat", "layer": 0, "head": 0, "query": 1})
    assert r.status_code == 200 and r.json()["tokens"][1] == " cat"


def test_context_view_finds_a_character_of_byte_pieces(smol):
    from attnscope.viewer.context import context_comparison
    from attnscope.viewer.run import trace_each
    a, b = trace_each(smol, [SENTENCE, "他喜欢音乐"])
    c = context_comparison(a, b, token="喜")
    assert c["pos_a"] == 4 and c["token"] == "喜" and c["tokens_a"] == SMOL_LABELS
    assert c["tokens_b"][c["pos_b"]] == "喜"


def test_find_a_token_as_the_normaliser_writes_it():
    """A token found nowhere is looked for again as the tokenizer's normaliser writes it (full-width ，
    read as the piece ,), and only then: a normaliser that changes nothing finds nothing new."""
    toks = ("<s>", "▁我", ",", "你", "</s>")
    halfwidth = str.maketrans("，？", ",?")
    p = Pieces(toks, toks, normal=lambda s: s.translate(halfwidth))
    assert find(p, "，").spans == ((2, 2),) and find(p, ",").spans == ((2, 2),)
    assert find(p, "？").spans == () and find(p, "喜").spans == ()
    assert find(Pieces(toks, toks), "，").spans == ()
