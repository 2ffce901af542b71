"""Pictures of the logit lens (points × positions, coloured by the probability of the token the
model finally predicts there, each cell labelled with its top token) and of direct logit attribution (layers × heads, plus the
embedding's and the MLPs' parts)."""

from __future__ import annotations

import numpy as np

from ..fonts import matplotlib_rc
from ..i18n import text
from .dla import LogitAttribution
from .logit_lens import LensResult


def _printable(token: str) -> str:
    """A token as a cell label: a newline as ⏎, other control characters (tab, …) as ·."""
    return "".join("⏎" if c == "\n" else c if c.isprintable() else "·" for c in token)


def lens_figure(r: LensResult, lang: str = "en", max_chars: int = 8):
    """Rows: the points from ``embed`` (bottom) to the last layer's output (top); columns: positions."""
    import matplotlib.pyplot as plt

    P, L = r.kl.shape
    labels = [[_printable(r.decode(int(r.top_ids[p, i, 0])))[:max_chars] for i in range(L)] for p in range(P)]
    with plt.rc_context(matplotlib_rc()):  # CJK tokens and Chinese words drawn, not boxes
        return _lens(plt, r, labels, lang, max_chars)


def _lens(plt, r: LensResult, labels, lang: str, max_chars: int):
    P, L = r.kl.shape
    fig, ax = plt.subplots(figsize=(max(6.5, 2.5 + 0.9 * L), 1.2 + 0.2 * P))
    _draw(fig, ax, r, labels, text("lens.title", lang), lang, max_chars)
    fig.tight_layout()
    return fig


def _draw(fig, ax, r: LensResult, labels, title: str, lang: str, max_chars: int) -> None:
    P, L = r.kl.shape
    im = ax.imshow(r.target_prob.numpy(), aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=1)
    for p in range(P):
        for i in range(L):
            ax.text(i, p, labels[p][i], ha="center", va="center", fontsize=6, parse_math=False,  # tokens as written
                    color="black" if r.target_prob[p, i] > 0.5 else "white")
    ax.set_xticks(range(L), [t[:max_chars] for t in r.tokens], rotation=60, fontsize=7, parse_math=False)
    ax.set_yticks(range(P), [pt.name.replace("layers.", "L") for pt in r.points], fontsize=6)
    ax.set_xlabel(text("lens.axis_position", lang))
    ax.set_title(title)
    final = bool((r.target_ids == r.top_ids[-1, :, 0]).all())  # else a target given that is not the final top
    target = repr(r.decode(int(r.target_ids[0])))
    label = text("lens.colour_p", lang) if final else text("lens.colour_target", lang, target=target)
    fig.colorbar(im, ax=ax).set_label(label, parse_math=False)  # a target such as '$$' as written


def tuned_figure(r: LensResult, t: LensResult, lang: str = "en", max_chars: int = 8):
    """The logit lens (left) and the tuned lens (right) of one text, drawn as :func:`lens_figure`."""
    import matplotlib.pyplot as plt

    P, L = r.kl.shape
    with plt.rc_context(matplotlib_rc()):
        fig, axes = plt.subplots(1, 2, figsize=(2 * max(6.5, 2.5 + 0.9 * L), 1.2 + 0.2 * P))
        for ax, res, key in zip(axes, (r, t), ("lens.title", "tuned.title")):
            labels = [[_printable(res.decode(int(res.top_ids[p, i, 0])))[:max_chars] for i in range(L)] for p in range(P)]
            _draw(fig, ax, res, labels, text(key, lang), lang, max_chars)
        fig.tight_layout()
        return fig


def kl_figure(points: list[str], logit: np.ndarray, tuned: np.ndarray, lang: str = "en"):
    """Mean KL(final ‖ lens) per point, (P,) each, for the logit lens and the tuned lens (log scale)."""
    import matplotlib.pyplot as plt

    with plt.rc_context(matplotlib_rc()):
        fig, ax = plt.subplots(figsize=(9, 4))
        x = np.arange(len(points) - 1)  # the last point is 0 for both: not drawn on a log scale
        ax.plot(x, logit[:-1], marker=".", label=text("tuned.col_logit", lang))
        ax.plot(x, tuned[:-1], marker=".", label=text("tuned.col_tuned", lang))
        ax.set_yscale("log")
        step = max(1, len(x) // 15)
        ax.set_xticks(x[::step], [points[i].replace("layers.", "L") for i in x[::step]], rotation=60, fontsize=7)
        ax.set_xlabel(text("tuned.point_axis", lang))
        ax.set_ylabel(text("tuned.kl_axis", lang))
        ax.set_title(text("tuned.kl_title", lang))
        ax.legend()
        fig.tight_layout()
        return fig


def dla_figure(d: LogitAttribution, n_layers: int, n_heads: int, lang: str = "en"):
    """Left: each head's part (layers × heads, diverging around 0); right: the embedding's, each
    MLP's and the biases' parts."""
    import matplotlib.pyplot as plt

    with plt.rc_context(matplotlib_rc()):
        return _dla(plt, d, n_layers, n_heads, lang)


def _dla(plt, d: LogitAttribution, n_layers: int, n_heads: int, lang: str):
    from matplotlib.ticker import MaxNLocator
    heads = d.heads(n_layers, n_heads).numpy()
    bound = float(np.abs(heads).max()) or 1.0
    others = [n for n in d.names if not (n.startswith("L") and "H" in n.split(" ")[0][1:])]
    values = [float(d.parts[d.names.index(n)]) for n in others]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 0.8 + 0.3 * n_layers), width_ratios=(max(n_heads, 3), 4))
    im = a.imshow(heads, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto", origin="lower")
    for axis in (a.xaxis, a.yaxis):  # heads and layers are counted: no tick at head 0.5
        axis.set_major_locator(MaxNLocator(integer=True))
    a.set_xlabel(text("lens.axis_head", lang))
    a.set_ylabel(text("lens.axis_layer", lang))
    a.set_title(text("lens.dla_heads", lang))
    fig.colorbar(im, ax=a)
    b.barh(range(len(others)), values, color=["#2166ac" if v > 0 else "#b2182b" for v in values])
    b.set_yticks(range(len(others)), others, fontsize=6)
    b.axvline(0, color="black", lw=0.5)
    b.set_title(text("lens.dla_rest", lang))
    fig.suptitle(text("lens.dla_title", lang, target=d.words, position=d.position, logit=f"{d.logit:.4f}"),
                 parse_math=False)  # the target's words as written: "$$" is no TeX
    fig.tight_layout()
    return fig
