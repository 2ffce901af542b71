"""``lang="zh"`` (``plot --lang zh``) writes the figures' titles, axes, colour bars and legends in
Chinese, every character drawn by the bundled CJK font (no missing-glyph warning, no tofu)."""

import io
import warnings

import numpy as np
import pytest

from attnscope import fonts, plot
from attnscope.cli import main
from attnscope.errors import InputError
from attnscope.i18n import TABLES


def _no_missing_glyphs(fig) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for fmt in ("png", "svg", "pdf"):
            fig.savefig(io.BytesIO(), format=fmt)
    assert [str(w.message) for w in caught if "missing from font" in str(w.message)] == []


def test_every_chinese_plot_string_has_glyphs_in_the_bundled_font():
    for key, s in TABLES["plot"]["zh"].items():
        for ch in s:
            if ord(ch) > 0x2000 and ch not in "·√～":
                assert fonts.has_glyph(ch), (key, ch)


def test_heatmap_in_chinese(tiny_models):
    tr = tiny_models["bert-chinese"].trace("我喜欢人工智能")
    fig = plot.head_heatmap(tr, 0, 1, lang="zh")
    ax, bar = fig.axes
    assert ax.get_title().endswith(" · 第 0 层 · 头 1")
    assert ax.get_xlabel() == "键（被关注的 token）"
    assert ax.get_ylabel() == "查询（发出关注的 token）"
    assert bar.get_ylabel() == "注意力权重"
    _no_missing_glyphs(fig)
    en = plot.head_heatmap(tr, 0, 1)
    assert en.axes[0].get_xlabel() == "key (attended to)" and en.axes[1].get_ylabel() == "attention weight"


def test_grid_in_chinese(tiny_models):
    tr = tiny_models["bert-chinese"].trace("我喜欢人工智能")
    fig = plot.heads_grid(tr, lang="zh")
    assert fig.get_suptitle().endswith(f"：每个头的注意力（{tr.length(0)} 个 token）")
    assert fig.axes[0].get_title() == "头 0" and fig.axes[0].get_ylabel() == "第 0 层"
    assert fig.axes[-1].get_ylabel() == "注意力权重"
    _no_missing_glyphs(fig)


def test_histograms_in_chinese_show_the_variances_of_the_same_draw():
    fig = plot.score_histograms(d_k=64, n=200, seed=3, lang="zh")
    rng = np.random.default_rng(3)  # the same draw, its variance computed here in float64
    q, k = rng.standard_normal((200, 64)), rng.standard_normal((200, 64))
    raw = np.einsum("id,jd->ij", q, k).ravel()
    a, b = fig.axes[:2]
    assert a.get_title() == f"未缩放的 q·k（方差 = {raw.var():.1f}）"
    assert b.get_title() == f"缩放后的 q·k / √d_k（方差 = {(raw / 8).var():.2f}）"
    assert a.get_xlabel() == "分数" and a.get_ylabel() == "个数"
    assert fig.get_suptitle() == "随机的 q、k ~ N(0, 1)，d_k = 64"
    _no_missing_glyphs(fig)


def test_softmax_in_chinese():
    fig = plot.softmax_temperatures([1.0, 2.0, 0.5], (1.0, 4.0), labels=["我", "喜", "欢"], lang="zh")
    assert fig.axes[0].get_title() == "不同温度下的 softmax"
    _no_missing_glyphs(fig)


def test_an_unknown_language_is_one_sentence():
    with pytest.raises(InputError, match="language 'fr' is not one of en, zh"):
        plot.softmax_temperatures([1.0, 2.0], lang="fr")


def test_plot_cli_lang_zh(tmp_path, capsys):
    out = tmp_path / "hist.png"
    assert main(["plot", "--kind", "hist", "--d-k", "16", "--lang", "zh", "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
