"""The figures show the trace's numbers: image data, annotations, labels, histogram variances,
softmax bars — each compared with a reference computed another way."""

import math
import re

import numpy as np
import pytest
import torch

import attnscope
from attnscope import plot
from attnscope.errors import InputError


def _image(ax):
    (im,) = ax.get_images()
    return np.asarray(im.get_array(), dtype=np.float64)


def test_heatmap_shows_the_traced_weights_with_labels(full_trace):
    fig = plot.head_heatmap(full_trace, layer=2, head=5)
    ax = fig.axes[0]
    n = len(full_trace.tokens[0])
    traced = full_trace["layers.2.attn.weights"][0, 5].double().numpy()  # (n, n) float32 from the model
    np.testing.assert_allclose(_image(ax), traced, atol=0, rtol=0)
    assert [t.get_text() for t in ax.get_xticklabels()] == full_trace.tokens[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == full_trace.tokens[0]
    texts = [t for t in ax.texts]
    assert len(texts) == n * n  # annotated: n ≤ ANNOTATE_MAX_TOKENS
    for t in texts:
        i, j = round(t.get_position()[1]), round(t.get_position()[0])
        assert t.get_text() == f"{traced[i, j]:.2f}"


def test_heatmap_without_recorded_weights_computes_them_from_q_k(trace, full_trace):
    # `trace` records only layer 0's weights; layer 3's come from q and k in float64.
    a = _image(plot.head_heatmap(trace, layer=3, head=1).axes[0])
    b = full_trace["layers.3.attn.weights"][0, 1].double().numpy()
    np.testing.assert_allclose(a, b, atol=2e-6)


def test_long_texts_are_not_annotated(minilm):
    tr = minilm.trace(" ".join(["word"] * 30), names=["layers.0.attn.weights"])
    assert len(plot.head_heatmap(tr).axes[0].texts) == 0
    assert len(plot.head_heatmap(tr, annotate=True).axes[0].texts) == 32 * 32


def test_grid_has_every_layer_and_head(full_trace):
    fig = plot.heads_grid(full_trace)
    L, H = full_trace.config.n_layers, full_trace.config.n_heads
    heat = [ax for ax in fig.axes if ax.get_images() and ax.get_label() != "<colorbar>"]
    assert len(heat) == L * H
    for idx in (0, 13, L * H - 1):
        layer, head = divmod(idx, H)
        np.testing.assert_array_equal(_image(heat[idx]), full_trace[f"layers.{layer}.attn.weights"][0, head].double().numpy())


def test_histograms_of_the_random_experiment():
    fig = plot.score_histograms(d_k=256, n=400, seed=1)
    a, b = fig.axes[:2]
    # the same draw, made independently, gives the variances in the titles
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((400, 256)), rng.standard_normal((400, 256))
    raw = torch.from_numpy(q) @ torch.from_numpy(k).T
    assert a.get_title() == f"unscaled q·k (var = {raw.var(unbiased=False).item():.1f})"
    assert b.get_title() == f"scaled q·k / √d_k (var = {(raw / 16).var(unbiased=False).item():.2f})"
    assert 230 < raw.var().item() < 285  # ≈ d_k, as the article says
    assert sum(p.get_height() for p in a.patches) == 400 * 400


def test_histograms_of_a_trace_use_its_scores(full_trace):
    fig = plot.score_histograms(full_trace, layer=1)
    raw = full_trace["layers.1.attn.scores"][0].double()
    a, b = fig.axes[:2]
    assert a.get_title() == f"unscaled q·k (var = {raw.var(unbiased=False).item():.1f})"
    scaled = full_trace["layers.1.attn.scaled"][0].double()
    assert b.get_title() == f"scaled q·k / √d_k (var = {scaled.var(unbiased=False).item():.2f})"


def test_softmax_temperature_bars():
    x = [15.3, 22.7, 18.2, 2.1, 1.8]  # the first article's row of 喜 (first five keys)
    fig = plot.softmax_temperatures(x, (1.0, 8.0), labels=list("我喜欢人工"))
    ax = fig.axes[0]
    heights = np.array([p.get_height() for p in ax.patches]).reshape(2, 5)
    for row, t in zip(heights, (1.0, 8.0)):
        np.testing.assert_allclose(row, torch.softmax(torch.tensor(x, dtype=torch.float64) / t, 0).numpy(), rtol=1e-12)
    # the article prints scaled ÷8 as [0.187, 0.473, 0.270, 0.036, 0.035]; 0.270 is a slip for 0.2693
    assert np.round(heights[1], 3).tolist() == [0.187, 0.473, 0.269, 0.036, 0.035]
    # unscaled it is nearly one-hot on 喜 (the article's 0.997 is really 0.9884)
    assert np.round(heights[0], 4).tolist() == [0.0006, 0.9884, 0.011, 0.0, 0.0]


@pytest.mark.parametrize("call, msg", [
    (lambda tr: plot.head_heatmap(tr, layer=6), "layer 6 is out of range"),
    (lambda tr: plot.head_heatmap(tr, head=-1), "head -1 is out of range"),
    (lambda tr: plot.head_heatmap(tr, text=5), "text 5 is out of range"),
    (lambda tr: plot.softmax_temperatures([1, 2], (0.0,)), "temperatures must be positive"),
    (lambda tr: plot.softmax_temperatures([], (1,)), "non-empty"),
    (lambda tr: plot.softmax_temperatures([1, math.inf], (1,)), "finite"),
    (lambda tr: plot.softmax_temperatures([1, 2], (1,), labels=["a"]), "labels has 1"),
    (lambda tr: plot.score_histograms(d_k=0), "positive integers"),
])
def test_bad_arguments_name_the_problem(full_trace, call, msg):
    with pytest.raises(InputError, match=msg):
        call(full_trace)


def test_figures_do_not_touch_pyplot(full_trace):
    import matplotlib.pyplot as plt
    before = plt.get_fignums()
    plot.head_heatmap(full_trace)
    plot.heads_grid(full_trace)
    assert plt.get_fignums() == before
    assert full_trace.n_layers == 6


def test_a_415_token_heatmap_labels_every_kth_token_legibly(minilm):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    tr = minilm.trace(" ".join(["word"] * 413), names=["layers.0.attn.q", "layers.0.attn.k"])
    n = tr.length(0)
    assert n == 415
    fig = plot.head_heatmap(tr, 0, 1)
    ax = fig.axes[0]
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    for labels, ticks, along in ((ax.get_xticklabels(), ax.get_xticks(), 0), (ax.get_yticklabels(), ax.get_yticks(), 1)):
        k = int(ticks[1] - ticks[0])
        assert 1 < k < 10 and list(ticks) == list(range(0, n, k))  # every k-th token, from the first
        assert [t.get_text() for t in labels] == [f"{i}:{tr.tokens[0][i]}" for i in range(0, n, k)]
        assert all(t.get_fontsize() >= plot.figures.TICK_MIN_FONT for t in labels)
        boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: (b.x0, b.y0)[along])
        for a, b in zip(boxes, boxes[1:]):  # neighbouring labels do not overlap
            assert (a.x1 <= b.x0) if along == 0 else (a.y1 <= b.y0)
    assert "every" in ax.get_xlabel() and "labelled" in ax.get_ylabel()
    # the weights are still every token's, computed from q and k
    np.testing.assert_allclose(_image(ax).sum(-1), np.ones(n), atol=1e-12)


def test_histograms_of_a_grouped_query_trace(tmp_path):
    """8 query heads share 2 k/v heads: each query head's scores are its own q · the k it reads (it
    crashed with a NumPy broadcast error); the reference is the model's own per-query-head scores."""
    from tests.models.decoders.tiny import BUILDERS
    model = attnscope.load(BUILDERS["llama_gqa"](tmp_path / "gqa"))
    assert model.config.n_heads // model.config.kv_heads == 4
    tr = model.trace("the cat sat on the mat", names=["layers.0.attn.q", "layers.0.attn.k", "layers.0.attn.v",
                                                       "layers.0.attn.scores"])
    fig = plot.score_histograms(tr, layer=0)
    n = tr.length(0)
    seen = torch.ones(n, n, dtype=torch.bool).tril()  # causal: the keys each query sees
    raw = tr["layers.0.attn.scores"][0].double()[:, seen]  # (H, n(n+1)/2)
    a, _ = fig.axes[:2]
    assert sum(p.get_height() for p in a.patches) == raw.numel()
    assert a.get_title() == f"unscaled q·k (var = {raw.var(unbiased=False).item():.1f})"


@pytest.mark.parametrize("name", ["t5", "deberta_v3"])
def test_heatmaps_of_a_model_whose_scores_add_a_learned_term(tmp_path, name):
    """T5 adds a relative position bias to q·k, DeBERTa its relative terms: the heatmap and the grid
    drew softmax(factor·q·kᵀ) without them (tiny T5: 0.068 off transformers' weights in layer 0,
    head 1). They now draw the model's weights; transformers' eager model is the reference."""
    import transformers

    from tests.models.fixtures import tiny_families

    folder = tiny_families()[name].build(tmp_path / name)
    model = attnscope.load(folder)
    text = "the cat sat on the mat"
    if name == "t5":  # everything recorded: the encoder's names are encoder.layers.{i}.attn.*
        tr = model.trace(text, "le chat")
        hf = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(folder), attn_implementation="eager").eval()
        with torch.no_grad():
            want = hf(input_ids=tr.input_ids, decoder_input_ids=tr.decoder_input_ids,
                      output_attentions=True).encoder_attentions
    else:  # the weights computed from q, k and the recorded term
        tr = model.trace(text, names=["layers.*.attn.q", "layers.*.attn.k", "layers.*.attn.bias"])
        hf = transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
        with torch.no_grad():
            want = hf(input_ids=tr.input_ids, attention_mask=tr.attention_mask, output_attentions=True).attentions
    for layer in range(tr.n_layers):
        for head in range(tr.n_heads):
            fig = plot.head_heatmap(tr, layer, head, annotate=False)
            np.testing.assert_allclose(_image(fig.axes[0]), want[layer][0, head].double().numpy(), atol=2e-6)
    grid = plot.heads_grid(tr)
    cells = [ax for ax in grid.axes if ax.get_images() and ax.get_label() != "<colorbar>"]
    np.testing.assert_allclose(_image(cells[-1]), want[-1][0, -1].double().numpy(), atol=2e-6)


@pytest.mark.parametrize("decimals", [-1, True, 2.5, "2", 9])
def test_annotation_decimals_are_checked(full_trace, decimals):
    """decimals=-1 or True died in "ValueError: Format specifier missing precision", 2.5 in
    "Invalid format specifier", all when the cells were written."""
    with pytest.raises(InputError, match=rf"decimals must be an integer in 0..8, got {re.escape(repr(decimals))}"):
        plot.head_heatmap(full_trace, 0, 0, decimals=decimals)



def test_the_figures_of_an_encoder_decoder_trace_name_its_encoder(tmp_path):
    """The figures read ``layers.*``, which on a T5 trace are its encoder's: they drew it titled
    "t5 · layer 0 · head 0", as if it were the whole model (or its decoder)."""
    from tests.models.seq2seq.tiny import t5

    trace = attnscope.load(t5(tmp_path / "t5")).trace("the cat", "die katze")
    assert plot.head_heatmap(trace, 0, 1).axes[0].get_title().startswith("t5's encoder · layer 0 · head 1")
    assert plot.heads_grid(trace)._suptitle.get_text().startswith("t5's encoder")
    assert plot.score_histograms(trace, lang="zh")._suptitle.get_text().startswith("t5 的编码器")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_short_texts_heatmap_title_is_not_cut(minilm, lang):
    """A one-character text's heatmap is 5.5 in wide: a longer model name than the packaged one's
    (sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2, as its folder may be named)
    with layer and head was drawn cut at both sides. Now smaller, whole."""
    import io
    tr = minilm.trace(["好"])
    tr.model_name = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
    fig = plot.head_heatmap(tr, 5, 11, lang=lang)
    fig.savefig(io.BytesIO(), format="png")  # lays the figure out
    box = fig.axes[0].title.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height
