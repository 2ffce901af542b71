"""explain's words for what is there: T5's SentencePiece pieces shown as read (``▁the`` as `` the``)
in its rows and paths while ``--token`` finds a token by either form and the JSON keeps the raw
pieces; OLMo 2's QK-norm scale named as this head's part of w; BLOOM's one token row and its
embedding LayerNorm titled as one row, not a sum (BERT's three rows keep the sum: test_path)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file

import attnscope
from attnscope.cli import main
from attnscope.explain import explain
from attnscope.testing.tiny import tiny_bloom
from tests.models.decoders import tiny as TD
from tests.models.seq2seq.fixtures import seq2seq, seq2seq_dirs  # noqa: F401

SOURCE = "the cat sat on the mat"
TARGET = "the cat sat"
MARK = "▁"


def _read(tokens):
    """SentencePiece's word mark is the space before a word (the tokenizer's own decoding rule)."""
    return [t if t == "</s>" else t.replace(MARK, " ") for t in tokens]


def _token_steps(md: str) -> str:
    """The Markdown without the tokenization step (whose 'piece' column shows the raw pieces on purpose)."""
    return "\n## ".join(part for part in md.split("\n## ") if "| piece |" not in part and "| 片段 |" not in part)


@pytest.mark.parametrize("attention,position", [("encoder", 5), ("self", 6), ("cross", 6)])
def test_t5_row_shows_readable_pieces_and_keeps_the_raw_ones(seq2seq, attention, position):  # noqa: F811
    model = seq2seq["t5"]
    w = explain(text=SOURCE, target=TARGET, attention=attention, model=model, layer=1, head=2, position=position)
    tr = model.trace(SOURCE, TARGET, names=["encoder.layers.0.attn.q"])
    src, tgt = tr.text_tokens(0), tr.target_tokens[0]
    qtoks, ktoks = (src, src) if attention == "encoder" else (tgt, tgt if attention == "self" else src)
    assert any(MARK in x for x in ktoks), "the tiny T5 writes word marks (else this test shows nothing)"
    for lang in ("en", "zh"):
        assert MARK not in w.render("markdown", lang=lang)
    js = w.to_dict()["meta"]
    assert js["query_tokens"] == qtoks and js["key_tokens"] == ktoks  # the raw pieces stay in the JSON
    assert js["query_labels"] == _read(qtoks) and js["key_labels"] == _read(ktoks) == js["keys"]
    assert js["query_piece"] == qtoks[position] == MARK + "sa" and js["query_token"] == " sa"


@pytest.mark.parametrize("token", ["sa", " sa", MARK + "sa"])
def test_t5_token_found_by_its_readable_or_raw_form(seq2seq, token):  # noqa: F811
    model = seq2seq["t5"]
    row = explain(text=SOURCE, target=TARGET, attention="self", model=model, layer=0, head=1, token=token)
    assert row.meta["query_position"] == 6 and row.meta["query_piece"] == MARK + "sa"
    path = explain(text=SOURCE, target=TARGET, model=model, layer=1, head=2, token=token, path=True)
    assert path.meta["query_position"] == 6
    enc = explain(text=SOURCE, model=model, layer=0, head=0, token=token, path=True)
    assert enc.meta["query_position"] == 5


def test_t5_path_labels_are_read_as_text(seq2seq):  # noqa: F811
    model = seq2seq["t5"]
    w = explain(text=SOURCE, target=TARGET, model=model, layer=1, head=2, position=5, path=True)
    en, zh = w.render("markdown"), w.render("markdown", lang="zh")
    for md in (en, zh):
        assert MARK not in _token_steps(md)
    assert "| 6 | ▁sa |  sa | 40 |" in en  # the piece beside what it reads, as the byte-level paths show
    assert "SentencePiece: ▁ marks where a word begins" in en and "SentencePiece：▁ 标出一个词的开头" in zh
    src = model.trace(SOURCE, TARGET, names=["encoder.layers.0.attn.q"]).text_tokens(0)
    assert w.meta["source_tokens"] == src and w.meta["source_labels"] == _read(src)
    assert "15 tokens: 0: , 1:the, 2: , 3:c" in en


def test_t5_cli_token_by_readable_word(seq2seq_dirs, capsys):  # noqa: F811
    assert main(["explain", "--model", str(seq2seq_dirs["t5"]), "--text", SOURCE, "--target", TARGET,
                 "--attention", "cross", "--layer", "0", "--head", "1", "--token", "sa", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["query_position"] == 6 and meta["query_piece"] == MARK + "sa" and meta["query_token"] == " sa"
    assert MARK not in "".join(meta["key_labels"]) and MARK in "".join(meta["key_tokens"])


@pytest.mark.parametrize("path", [False, True])
def test_olmo2_qk_norm_scale_is_this_heads_part(tmp_path, path):
    """OLMo 2's QK-norm scale w has H·d features (k: H_kv·d); the row shows this head's part, and says so."""
    folder = TD.olmo2(tmp_path / "olmo2")
    m = attnscope.load(folder)
    c = m.config
    head, dh = 3, c.d_head
    g = head // (c.n_heads // c.kv_heads)
    w = explain(model=m, text=SOURCE, layer=1, head=head, position=3, path=path)
    sd = load_file(str(folder / "model.safetensors"))
    wq = sd["model.layers.1.self_attn.q_norm.weight"].astype(np.float64)  # (H·d,)
    wk = sd["model.layers.1.self_attn.k_norm.weight"].astype(np.float64)  # (H_kv·d,)
    assert wq.shape == (c.n_heads * dh,) and wk.shape == (c.kv_heads * dh,)
    en, zh = w.render("markdown"), w.render("markdown", lang="zh")
    qs = ", ".join(f"{x:.4f}" for x in wq[head * dh:head * dh + 3])
    ks = ", ".join(f"{x:.4f}" for x in wk[g * dh:g * dh + 3])
    assert (f"This head's part of the learned scale w of q: features {head * dh}–{head * dh + dh - 1} of its "
            f"{c.n_heads * dh} (the first 3 shown): [{qs}].") in en
    assert (f"This head's part of the learned scale w of k: features {g * dh}–{g * dh + dh - 1} of its "
            f"{c.kv_heads * dh} (the first 3 shown): [{ks}].") in en
    assert f"q 的缩放 w 中属于这个头的部分：{c.n_heads * dh} 个分量中的第 {head * dh}–{head * dh + dh - 1} 个" in zh
    assert "(first 3)" not in en and "（前 3 个）" not in zh


def test_bloom_path_titles_its_one_token_row(tmp_path, seq2seq):  # noqa: F811
    """BLOOM adds no position row (ALiBi is in the scores) and normalises its token row: the titles
    say a row and its LayerNorm, not a sum; T5's one row too."""
    m = attnscope.load(tiny_bloom(tmp_path / "bloom"))
    w = explain(model=m, text=SOURCE, layer=0, head=1, position=3, path=True)
    titles = {s.key: s.title for s in w.steps}
    en = w.render("markdown")
    zh = w.render("markdown", lang="zh")
    assert "## Step 2: the token's embedding row" in en and "## Step 3: LayerNorm of the token row" in en
    assert "sum" not in "".join(x for x in en.splitlines() if x.startswith(("## Step 2", "## Step 3")))
    assert "第 2 步：这个 token 的词向量行" in zh and "第 3 步：词向量行的 LayerNorm" in zh
    assert "x = token row" in en and {"embed", "embed_norm"} <= set(titles)
    assert "The vector is normalised over its features" in en and "The sum is normalised" not in en
    t5 = explain(text=SOURCE, target=TARGET, model=seq2seq["t5"], layer=1, head=2, position=5, path=True)
    assert "the token's embedding row" in t5.render("markdown")


def test_bart_rows_and_path_read_byte_level_pieces(seq2seq):  # noqa: F811
    """BART's byte-level pieces (``Ġcat``) read as text in its rows and paths, as the viewer shows them."""
    model = seq2seq["bart"]
    tr = model.trace(SOURCE, TARGET, names=["encoder.layers.0.attn.q"])
    assert any(x.startswith("Ġ") for x in tr.text_tokens(0))
    row = explain(text=SOURCE, target=TARGET, attention="cross", model=model, layer=0, head=1, token="s")
    assert "Ġ" not in row.render("markdown") and row.meta["query_piece"] == "Ġs" and row.meta["query_position"] == 6
    path = explain(text=SOURCE, target=TARGET, model=model, layer=0, head=1, token="s", path=True)
    assert "Ġ" not in _token_steps(path.render("markdown"))


def test_mt5_row_reads_its_pieces(seq2seq):  # noqa: F811
    """mT5 (SentencePiece, Chinese): no word mark in the row; --token finds a character."""
    row = explain(text="我喜欢人工智能", target="我喜欢", attention="cross", model=seq2seq["mt5"], layer=0, head=0,
                  token="喜")
    assert row.meta["query_tokens"][:2] == ["<pad>", MARK] and row.meta["query_labels"][:2] == ["<pad>", " "]
    assert row.meta["query_position"] == 3 and MARK not in row.render("markdown", lang="zh")
