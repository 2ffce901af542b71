"""The figure functions of :mod:`attnscope.plot`."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from .. import reference as R
from ..config import is_seq2seq
from ..errors import InputError
from ..fonts import matplotlib_rc
from ..i18n import check_lang, error
from ..i18n import text as _t

#: Heatmaps of at most this many tokens write each weight in its cell.
ANNOTATE_MAX_TOKENS = 16

#: Tick labels are never smaller than this (points); a long text labels every k-th token instead.
TICK_MIN_FONT = 6.0


#: Most decimals an annotation may have (as the viewer's; float32 weights say no more).
MAX_DECIMALS = 8


def check_decimals(decimals) -> int:
    """``decimals`` when it is an integer in 0..:data:`MAX_DECIMALS`, else InputError."""
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= MAX_DECIMALS:
        raise error(InputError, "errors.viewer_decimals", most=MAX_DECIMALS, value=repr(decimals))
    return decimals


def tick_step(n: int, side: float, fontsize: float) -> int:
    """Label every k-th of ``n`` tokens along an axis of a ``side``-inch figure so that labels of
    ``fontsize`` points are at least 1.3 font sizes apart (the axis takes ~80 % of the side)."""
    fits = max(1, int(0.8 * side * 72 / (1.3 * fontsize)))
    return max(1, math.ceil(n / fits))


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _model_name(trace, lang: str = "en") -> str:
    """The model's name as a title shows it; an encoder–decoder trace's figures read its encoder
    (``layers.*`` of a :class:`~attnscope.trace.seq2seq.Seq2SeqTrace`), and the title says so."""
    name = str(getattr(trace, "model_name", "") or _t("plot.model", lang))
    return _t("plot.encoder_of", lang, model=name) if is_seq2seq(trace.config) else name


def axis_labels(toks: Sequence[str]) -> list[str]:
    """Tokens as an axis shows them: a blank one (a space, a newline) as its repr."""
    return [t if t.strip() else repr(t) for t in toks]


def every_note(every: int, lang: str) -> str:
    """What an axis label adds when only every ``every``-th token has a label ("" when all have)."""
    return "" if every == 1 else _t("plot.every", lang, ordinal=_ordinal(every) if lang == "en" else every)


def _own_labels(labels: Sequence[str], n: int) -> list[str]:
    labels = [str(x) for x in labels]
    if len(labels) != n:
        raise error(InputError, "cli.labels_count_one" if len(labels) == 1 else "cli.labels_count", n=len(labels), m=n)
    return labels


def head_heatmap(trace, layer: int = 0, head: int = 0, *, text: int = 0,
                 annotate: Optional[bool] = None, decimals: int = 2, cmap: str = "viridis",
                 labels: Optional[Sequence[str]] = None, lang: str = "en") -> Figure:
    """One head's attention weights as a heatmap: queries down, keys across, tokens as labels.

    Args:
        trace: a :class:`~attnscope.trace.Trace` with q and k of ``layer`` (or its weights).
        layer, head: which head (0-based).
        text: which text of the trace.
        annotate: write each weight in its cell (default: when there are at most
            :data:`ANNOTATE_MAX_TOKENS` tokens).
        decimals: decimals of the annotations.
        labels: the axes' labels, one per token (default: the tokens as the trace reads them,
            byte-level pieces as the characters they form).
        lang: the language of the title, axes and colour bar (``"en"`` or ``"zh"``).
    """
    check_lang(lang)
    check_decimals(decimals)
    h = trace.check_head(head)
    w = R.trace_weights(trace, layer, text)[h]  # (n, n) float64
    toks = axis_labels(trace.text_labels(text) if labels is None else _own_labels(labels, trace.length(text)))
    n = len(toks)
    if annotate is None:
        annotate = n <= ANNOTATE_MAX_TOKENS
    with rc_context(matplotlib_rc()):
        fig, ax, im, every = square_heatmap(w, toks, cmap=cmap, annotate=annotate, decimals=decimals)
        note = every_note(every, lang)
        ax.set_xlabel(_t("plot.key_axis", lang, note=note))
        ax.set_ylabel(_t("plot.query_axis", lang, note=note))
        ax.set_title(_t("plot.heatmap_title", lang, model=_model_name(trace, lang), layer=int(layer), head=h))
        fig.colorbar(im, ax=ax, shrink=0.8, label=_t("plot.weight", lang))
        fit_title(fig, ax)
    return fig


def fit_title(fig: Figure, ax) -> None:
    """Make ``ax``'s title small enough to fit in ``fig``: constrained layout makes room for a
    title's height, never for its width (a method's title or a long model name over a short
    text's heatmap was cut at both sides). Called inside ``rc_context(matplotlib_rc())``, last."""
    fig.draw_without_rendering()
    box = ax.title.get_window_extent()  # centred on the axes, which the layout does not move for it
    centre = (box.x0 + box.x1) / 2
    room = 2 * min(centre, fig.bbox.width - centre) - 8  # pixels
    if box.width > room:
        ax.title.set_fontsize(ax.title.get_fontsize() * room / box.width)


def square_heatmap(w, toks: list[str], *, cmap: str, annotate: bool, decimals: int):
    """An (n, n) matrix of values in 0..1 as a square heatmap, the tokens on both axes (every k-th,
    with its position, when they do not all fit) and, with ``annotate``, each value in its cell.
    Called inside ``rc_context(matplotlib_rc())``; returns (figure, axes, image, k)."""
    n = len(toks)
    side = min(max(3.0 + 0.42 * n, 4.0), 24.0)
    fig = Figure(figsize=(side + 1.2, side), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
    fs = 10 if n <= 24 else max(TICK_MIN_FONT, 10 - n / 12)
    every = tick_step(n, side, fs)
    at = list(range(0, n, every))
    names = toks if every == 1 else [f"{i}:{toks[i]}" for i in at]  # positions, when some are skipped
    ax.set_xticks(at, names, rotation=90, fontsize=fs, parse_math=False)  # tokens as written: "$$" is no TeX
    ax.set_yticks(at, names, fontsize=fs, parse_math=False)
    if annotate:
        for i in range(n):
            for j in range(n):
                ax.text(j, i, f"{w[i, j]:.{decimals}f}", ha="center", va="center",
                        fontsize=max(5.0, 9 - n / 4), color="black" if w[i, j] > 0.6 else "white")
    return fig, ax, im, every


def heads_grid(trace, *, text: int = 0, cmap: str = "viridis", cell: float = 1.3, lang: str = "en") -> Figure:
    """Every layer × head as a small heatmap (layers down, heads across), one colour scale 0..1;
    titles and the colour bar in ``lang``."""
    check_lang(lang)
    L, H = trace.n_layers, trace.n_heads
    with rc_context(matplotlib_rc()):
        fig = Figure(figsize=(cell * H + 1.0, cell * L + 0.8), layout="constrained")
        axes = fig.subplots(L, H, squeeze=False)
        im = None
        for layer in range(L):
            w = R.trace_weights(trace, layer, text)  # (H, n, n)
            for h in range(H):
                ax = axes[layer, h]
                im = ax.imshow(w[h], cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
                ax.set_xticks([])
                ax.set_yticks([])
                if layer == 0:
                    ax.set_title(_t("plot.head", lang, head=h), fontsize=8)
                if h == 0:
                    ax.set_ylabel(_t("plot.layer", lang, layer=layer), fontsize=8)
        fig.suptitle(_t("plot.grid_title", lang, model=_model_name(trace, lang), n=trace.length(text)))
        assert im is not None  # every layer has a head
        fig.colorbar(im, ax=axes, shrink=0.6, label=_t("plot.weight", lang))
    return fig


def score_histograms(trace=None, *, layer: Optional[int] = None, text: int = 0, d_k: int = 256,
                     n: int = 1000, seed: int = 0, bins: int = 50, lang: str = "en") -> Figure:
    """Histograms of unscaled and scaled scores side by side, each titled with its variance.

    With a trace: the raw scores q·k of every head of ``layer`` (all layers when None) of text
    ``text``, and the same × 1/√d_k. Without one, the third article's experiment: q and k drawn
    from N(0, 1) with ``d_k`` dimensions, ``n`` of each (variance ≈ d_k unscaled, ≈ 1 scaled).
    Titles and axes in ``lang``.
    """
    check_lang(lang)
    if trace is None:
        if not isinstance(d_k, int) or d_k <= 0 or not isinstance(n, int) or n <= 0:
            raise error(InputError, "errors.plot_dk_n", d_k=repr(d_k), n=repr(n))
        if n * d_k > 2**24 or n > 4000:  # q, k (n, d_k) and the n² scores, in float64
            raise error(InputError, "errors.plot_too_large", d_k=d_k, n=n, limit=f"{2**24:,}")
        rng = np.random.default_rng(seed)
        q = rng.standard_normal((n, d_k))
        k = rng.standard_normal((n, d_k))
        raw = (q @ k.T).ravel()  # (n·n,)
        factor = R.score_factor("scaled", d_k)
        where = _t("plot.random", lang, d_k=d_k)
    else:
        layers = range(trace.n_layers) if layer is None else [layer]
        parts = []
        for i in layers:
            q, k, _ = trace.qkv(i, text=text)  # (H, n, d_head), (H_kv, n, d_head)
            k = np.repeat(R.as_f64(k), q.shape[0] // k.shape[0], axis=0)  # (H, n, d_head): head h reads h // group
            s = R.raw_scores(q, k)  # (H, n, n)
            parts.append(s[:, trace.mask(i, text=text)[0].cpu().numpy()].ravel())  # the keys each query sees
        raw = np.concatenate(parts)
        factor = R.trace_factor(trace)
        d_k = trace.config.d_head
        where = _t("plot.trace_where", lang, model=_model_name(trace, lang), d_k=d_k,
                   layers=_t("plot.all_layers", lang) if layer is None else _t("plot.layer", lang, layer=layer))
    scaled = raw * factor
    with rc_context(matplotlib_rc()):
        fig = Figure(figsize=(11, 4.5), layout="constrained")
        a, b = fig.subplots(1, 2)
        a.hist(raw, bins=bins, color="tab:red")
        a.set_title(_t("plot.unscaled", lang, var=f"{raw.var():.1f}"))
        b.hist(scaled, bins=bins, color="tab:blue")
        b.set_title(_t("plot.scaled", lang, var=f"{scaled.var():.2f}"))
        for ax in (a, b):
            ax.set_xlabel(_t("plot.score", lang))
            ax.set_ylabel(_t("plot.count", lang))
        fig.suptitle(where)
    return fig


def softmax_temperatures(x, temperatures: Sequence[float] = (0.5, 1.0, 2.0, 8.0), *,
                         labels: Optional[Sequence[str]] = None, lang: str = "en", note: Optional[str] = None) -> Figure:
    """softmax(x / T) as bars for each temperature T: low T approaches argmax, high T uniform.

    ``x`` is a 1-d sequence of scores (e.g. one row of raw scores); ``labels`` name its entries
    (tokens). T = √d_k is the Transformer's own scaling. Title and legend in ``lang``; ``note``, a
    second title line (what x is, which T is the model's).
    """
    check_lang(lang)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise error(InputError, "errors.plot_x_shape", shape=x.shape)
    if not np.all(np.isfinite(x)):
        raise error(InputError, "errors.plot_x_finite", value=x[~np.isfinite(x)][0],
                    entry=int(np.flatnonzero(~np.isfinite(x))[0]))
    temps = [float(t) for t in temperatures]
    if not temps or any(not t > 0 or not math.isfinite(t) for t in temps):
        raise error(InputError, "errors.plot_temperatures", value=list(temperatures))
    if labels is None:
        labels = [str(i) for i in range(x.size)]
    elif len(labels) != x.size:
        raise error(InputError, "errors.plot_labels_one" if len(labels) == 1 else "errors.plot_labels", n=len(labels),
                    size=x.size)
    width = 0.8 / len(temps)
    pos = np.arange(x.size)
    # as wide as the heatmap at most (a 280-key row was a 200-inch figure); a long row labels every k-th bar
    fig_w = min(max(6.0, 0.7 * x.size + 2), 24.0)
    fs = 10 if x.size <= 24 else max(TICK_MIN_FONT, 10 - x.size / 12)
    every = tick_step(x.size, fig_w, fs)
    with rc_context(matplotlib_rc()):
        fig = Figure(figsize=(fig_w, 4.5), layout="constrained")
        ax = fig.add_subplot()
        for i, t in enumerate(temps):
            with np.errstate(over="ignore"):
                z = x / t
            if not np.all(np.isfinite(z)):
                raise error(InputError, "errors.plot_overflow", t=f"{t:g}", largest=f"{np.abs(x).max():g}")
            p = R.softmax(z)
            ax.bar(pos + (i - (len(temps) - 1) / 2) * width, p, width, label=_t("plot.temperature", lang, t=f"{t:g}"))
        ax.set_xticks(pos[::every], axis_labels(list(labels))[::every], parse_math=False, fontsize=fs,
                      rotation=0 if x.size <= 24 else 90)
        if every > 1:
            ax.set_xlabel(_t("plot.every_entry", lang, ordinal=_ordinal(every) if lang == "en" else every))
        ax.set_ylim(0, 1)
        ax.set_ylabel("softmax(x / T)")
        ax.set_title(_t("plot.softmax_title", lang) + ("" if note is None else "\n" + note))
        ax.legend()
    return fig
