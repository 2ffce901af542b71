"""``attnscope lens``: the printed lens table and the DLA lines carry the library's numbers, in
English and Chinese; figures and JSON are written; bad options are one sentence."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attnscope
import tests.models.decoders.tiny  # noqa: F401  (registers the decoder families)
from attnscope.cli import main
from attnscope.lens import direct_logit_attribution, logit_lens
from attnscope.testing.tiny import FAMILIES

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(FAMILIES["llama_gqa"].build(tmp_path_factory.mktemp("lens-cli") / "llama"))


def test_the_lens_table_and_json(folder, tmp_path, capsys):
    out = tmp_path / "lens.json"
    assert main(["lens", "--text", TEXT, "--model", folder, "--position", "2", "-o", str(out),
                 "-o", str(tmp_path / "lens.png")]) == 0
    lines = capsys.readouterr().out.splitlines()
    r = logit_lens(attnscope.load(folder), TEXT, k=3)
    assert lines[0].startswith("Logit lens of") and "at position 2" in lines[0]
    last = next(line for line in lines if line.startswith(f"layers.{len(r.points) // 2 - 1}.out"))
    assert f"{float(r.target_prob[-1, 2]):8.4f}" in last and last.rstrip().endswith("0.0000")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["points"][0] == "embed" and data["kl"][1][2] == pytest.approx(float(r.kl[1, 2]))
    assert (tmp_path / "lens.png").stat().st_size > 10_000


def test_dla_lines_in_chinese_sum_to_the_logit(folder, capsys):
    d = direct_logit_attribution(attnscope.load(folder), TEXT)
    assert main(["lens", "--text", TEXT, "--model", folder, "--dla", "--lang", "zh"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"位置 {len(d.tokens) - 1} 上") and f"各部分之和为 {float(d.parts.sum()):.4f}" in first
    assert f"模型的 logit：{d.logit:.4f}" in first


def test_dla_says_how_many_parts_it_prints(folder, capsys):
    """--top 10 printed 'The 40 largest parts:' above the 22 parts a 2-layer, 8-head Llama has
    (the embedding, 2 × (8 heads, attention bias, MLP), the biases)."""
    m = attnscope.load(folder)
    assert (m.config.n_layers, m.config.n_heads) == (2, 8)
    assert main(["lens", "--text", TEXT, "--model", folder, "--dla", "--top", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "The 22 largest parts:" and len(lines) == 2 + 22
    assert main(["lens", "--text", TEXT, "--model", folder, "--dla", "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "The 8 largest parts:" and len(lines) == 2 + 8


@pytest.mark.parametrize("argv, words", [
    (["--versus", "x"], "--versus is for --dla"),
    (["--dla", "--versus", "x"], "--versus needs --target"),
    (["-o", "lens.txt"], "-o 'lens.txt': write a figure"),
    (["--position", "99"], "position 99 is out of range"),
])
def test_bad_options_are_one_sentence(folder, capsys, argv, words):
    assert main(["lens", "--text", TEXT, "--model", folder] + argv) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("lang, words", [("en", "give a text that is one token"), ("zh", "请给一个恰为一个 token 的文本")])
def test_a_target_of_several_tokens_does_not_offer_a_token_id_the_cli_cannot_take(folder, capsys, lang, words):
    """'--target 我' (several tokens) said 'give a text that is one token, or a token id'; --target is
    always read as text, so '--target 1234' came back as '1234' is 4 tokens, with the same advice."""
    m = attnscope.load(folder)
    several = next(t for t in ("1234", "the cat", "我") if len(m.tokenizer.backend.encode(t, add_special_tokens=False).ids) > 1)
    assert main(["lens", "--text", TEXT, "--model", folder, "--target", several, "--lang", lang]) == 2
    err = capsys.readouterr().err
    assert words in err and "token id" not in err and err.count("\n") == 1, err


@pytest.mark.parametrize("extra", [[], ["--dla"]])
def test_a_whitespace_only_text_is_refused_as_generate_and_patch_refuse_it(capsys, extra):
    """'lens --text "   "' read three spaces as a prompt and printed a table (generate and patch refuse
    such a prompt); one sentence now, before the model loads (no-such-model is never read)."""
    assert main(["lens", "--text", "   ", "--model", "no-such-model", *extra]) == 2
    err = capsys.readouterr().err
    assert "text is empty; type a sentence" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("extra", [["--dpi", "300"], ["--dpi", "300", "-o", "lens.json"], ["--dla", "--dpi", "300"]])
def test_dpi_without_a_figure_is_refused_not_dropped(capsys, tmp_path, monkeypatch, extra):
    """--dpi sets a figure's resolution: with no figure among -o (the printed table, .json numbers) it
    was dropped in silence. One sentence now, before the model loads (no-such-model is never read)."""
    monkeypatch.chdir(tmp_path)
    assert main(["lens", "--text", "Hi there", "--model", "no-such-model", *extra]) == 2
    err = capsys.readouterr().err
    assert "--dpi 300 sets a figure's resolution, and no -o file is a figure" in err and err.count("\n") == 1, err


def hand_ranks(model, text: str):
    """(points, L) the final top token's rank at every point, in float64 from the traced stream (the
    final norm and W_U written out, tests/lens/test_lens.py), and the point names."""
    from tests.lens.test_lens import W_U, f64, final_norm_np
    n = model.config.n_layers
    names = [f"layers.{i}.{s}" for i in range(n) for s in ("attn_resid", "out")]
    tr = model.trace([text], names=names + ["embed.out"])
    logits = [final_norm_np(model, f64(tr[p][0])) @ W_U(model).T for p in ["embed.out"] + names]  # (L, V) each
    t = logits[-1].argmax(-1)  # (L,)
    rows = np.arange(len(t))
    return np.stack([(lp > lp[rows, t][:, None]).sum(-1) for lp in logits]), ["embed"] + names


def test_the_point_the_target_is_top_from_is_where_it_stays_top(folder, capsys):
    """'The target is the top token from P on' named the first point where the target was top, even
    when it fell out again after it (on this model at position 10 it is top at embed, rank 9 at
    layers.0.attn_resid, top again from layers.0.out); and a --target that is not top even at the
    end (rank 1) read 'becomes the top token only at the end'. Ranks by hand in float64."""
    m = attnscope.load(folder)
    ranks, names = hand_ranks(m, TEXT)
    lost = [i for i in range(ranks.shape[1]) if ranks[0, i] == 0 and (ranks[:, i] > 0).any()]
    assert lost, "the text has no position where the target is top, falls out and comes back"
    i = lost[0]
    settled = names[int(np.nonzero(ranks[:, i])[0][-1]) + 1]
    assert main(["lens", "--text", TEXT, "--model", folder, "--position", str(i)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"The target is the top token from {settled} on (it was already at embed, then lost the place)."
    second = int(np.argsort(-hand_final(m))[1])  # the last position's second token, by hand
    word = m.tokenizer.decode([second])
    assert m.tokenizer.backend.encode(word, add_special_tokens=False).ids == [second]
    assert main(["lens", "--text", TEXT, "--model", folder, "--target", word, "--lang", "zh"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "目标直到最后也不是最高的 token（最后的名次：1）。"


def hand_final(model) -> np.ndarray:
    """The last position's final logits (V,) in float64: the last layer's output through the final norm and W_U."""
    from tests.lens.test_lens import W_U, f64, final_norm_np
    tr = model.trace([TEXT], names=[f"layers.{model.config.n_layers - 1}.out"])
    return final_norm_np(model, f64(tr[f"layers.{model.config.n_layers - 1}.out"][0, -1])) @ W_U(model).T


def columns(line: str) -> int:
    """Terminal columns of ``line``: East Asian wide and fullwidth characters take two (UAX #11)."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_chinese_top_tokens_keep_the_columns_aligned():
    """The top-token cell was padded to 40 characters, not 40 columns: a row whose top tokens were
    '的' and '，' (SmolLM2 on '北京是中国的首') pushed its target p, rank and KL two columns right."""
    import torch

    from attnscope.cli.lens_tuned import cells
    from attnscope.lens.logit_lens import LensResult
    from attnscope.lens.stream import Point
    words = {0: "的", 1: "，", 2: " the", 3: ","}
    r = LensResult(tokens=["x"], points=[Point("embed", -1, "embed"), Point("layers.0.out", 0, "mlp")],
                   top_ids=torch.tensor([[[2, 3]], [[0, 1]]]), top_probs=torch.tensor([[[0.5, 0.25]], [[0.06, 0.05]]]),
                   target_ids=torch.tensor([0]), target_prob=torch.tensor([[0.1], [0.06]]),
                   target_rank=torch.tensor([[3], [0]]), kl=torch.tensor([[1.5], [0.0]]), decode=words.__getitem__)
    latin, chinese = cells(r, 0, 0), cells(r, 1, 0)
    assert "的" in chinese and columns(latin) == columns(chinese)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_large_top_keeps_every_row_in_its_columns(folder, capsys, lang):
    """The top-token cell was padded to 40 columns; a longer one (--top 5 on SmolLM2 already) pushed its
    row's target p, rank and KL right, so each row's numbers sat in a different column. Every line of
    the table now ends in the same column as the header."""
    assert main(["lens", "--text", TEXT, "--model", folder, "--top", "20", "--lang", lang]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = lines[1:-1]  # the header and one row per point, between the title and the closing line
    assert len(table) == 1 + 2 * 2 + 1 and max(map(columns, table)) > 1 + 26 + 1 + 40 + 1 + 8 + 1 + 6 + 1 + 10
    assert len({columns(line) for line in table}) == 1, [columns(line) for line in table]


def test_the_figure_names_a_given_target_as_what_it_colours(folder):
    """With --target, the grid is coloured by the target's probability, but the colour bar read
    'probability of the final prediction'. The target chosen is the last position's second token,
    by hand in float64, so it is not the final prediction."""
    from attnscope.lens.figures import lens_figure
    m = attnscope.load(folder)
    second = int(np.argsort(-hand_final(m))[1])
    r = logit_lens(m, TEXT, target=second, k=1)
    assert lens_figure(r).axes[1].get_ylabel() == f"probability of the target {m.tokenizer.decode([second])!r}"
    assert lens_figure(logit_lens(m, TEXT, k=1), "zh").axes[1].get_ylabel() == "最终预测的概率"


def test_dla_says_which_logit_of_a_soft_capped_model_the_parts_sum_to(tmp_path, capsys):
    """On a model with a final soft-cap the parts sum to the logit before the cap, but the line
    called that 'the model's logit', which is the capped one. Both now, the capped one from
    transformers' eager Gemma 3 (final_logit_softcapping 2.0 set in the tiny checkpoint's config)."""
    import torch
    from transformers import AutoModelForCausalLM
    folder = FAMILIES["gemma3"].build(tmp_path / "gemma")
    cfg = json.loads((folder / "config.json").read_text())
    cfg.get("text_config", cfg)["final_logit_softcapping"] = 2.0
    (folder / "config.json").write_text(json.dumps(cfg))
    m = attnscope.load(folder)
    assert m.config.final_logit_softcap == 2.0
    d = direct_logit_attribution(m, TEXT)
    hf = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        capped = float(hf(m.encode([TEXT]).input_ids).logits[0, -1, d.target])
    assert abs(capped - d.logit) > 0.01  # the cap changes it
    assert main(["lens", "--text", TEXT, "--model", str(folder), "--dla"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(f"(the model's logit before its final soft-cap: {d.logit:.4f}; after it: {capped:.4f})")
