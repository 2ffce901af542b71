"""Figures of attribution beyond raw attention (issue 27 item 3): ``plot --attribution METHOD``.

The same matrices the viewer's attribution switch draws (:func:`attnscope.attribution.shown.
shown_matrices`): ``norm`` — one head's ‖α_ij·f(x_j)‖ with each row divided by its sum (Kobayashi
et al. 2020); ``rollout``, ``alti``, ``value_zeroing`` — the layer's matrix accumulated from layer 0
(``model.attribute(text, method, layer=l).scores``), one per layer, no heads. Rows are output
positions, columns input tokens; the colour scale is 0..1 like the raw weights' (every row sums to 1).

    >>> from attnscope.plot.attribution import attribution_grid, attribution_heatmap
    >>> attribution_heatmap(model, "The cat sat.", "rollout", layer=5).savefig("rollout.png")
    >>> attribution_grid(model, "The cat sat.", "norm").savefig("norm-grid.svg")
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from ..attribution.shown import PER_HEAD, SHOWN, shown_matrices
from ..errors import InputError
from ..fonts import matplotlib_rc
from ..i18n import check_lang, error
from ..i18n import text as _t
from ..pieces import labels_of
from .figures import ANNOTATE_MAX_TOKENS, check_decimals, every_note, fit_title, square_heatmap

NAMES = {"norm": "plot.attr_name_norm", "rollout": "plot.attr_name_rollout", "alti": "plot.attr_name_alti",
         "value_zeroing": "plot.attr_name_value_zeroing"}


def check_method(method: str) -> str:
    if method not in SHOWN:
        raise error(InputError, "errors.plot_attribution_method", method=repr(method), choices=", ".join(SHOWN))
    return method


def attribution_matrix(model, text: str, method: str, layer: int = 0, head: int = 0) -> tuple[np.ndarray, list[str]]:
    """``(matrix (L, L) float32, token labels)``: what :func:`attribution_heatmap` draws (``head``
    matters for ``norm`` only)."""
    m = shown_matrices(model, text, check_method(method))  # (n_layers, [H,] L, L)
    if not 0 <= layer < m.shape[0]:
        raise error(InputError, "errors.plot_attribution_layer", layer=layer, n=m.shape[0], last=m.shape[0] - 1)
    m = m[layer]
    if method in PER_HEAD:
        if not 0 <= head < m.shape[0]:
            raise error(InputError, "errors.plot_attribution_head", head=head, n=m.shape[0], last=m.shape[0] - 1)
        m = m[head]
    return m, tokens_of(model, text)


def tokens_of(model, text: str) -> list[str]:
    """The text's tokens as a person reads them (byte-level pieces as the characters they form)."""
    labels = labels_of(list(model.encode(text).tokens[0]), getattr(model, "tokenizer", None))
    return [t if t.strip() else repr(t) for t in labels]


def attribution_heatmap(model, text: str, method: str, layer: int = 0, head: int = 0, *,
                        annotate: Optional[bool] = None, decimals: int = 2, cmap: str = "viridis",
                        lang: str = "en") -> Figure:
    """``method``'s matrix of ``layer`` (and ``head``, for ``norm``) as a heatmap: output positions
    down, input tokens across; title, axes and colour bar in ``lang``."""
    check_lang(lang)
    check_decimals(decimals)
    w, toks = attribution_matrix(model, text, method, layer, head)
    n = len(toks)
    annotate = n <= ANNOTATE_MAX_TOKENS if annotate is None else annotate
    name = _t(NAMES[method], lang)
    title = (_t("plot.attr_title_head", lang, model=model.name, method=name, layer=layer, head=head)
             if method in PER_HEAD else _t("plot.attr_title_layer", lang, model=model.name, method=name, layer=layer))
    with rc_context(matplotlib_rc()):
        fig, ax, im, every = square_heatmap(w, toks, cmap=cmap, annotate=annotate, decimals=decimals)
        ax.set_xlabel(_t("plot.attr_col_axis", lang) + every_note(every, lang))  # as head_heatmap's axes say it
        ax.set_ylabel(_t("plot.attr_row_axis", lang) + every_note(every, lang))
        ax.set_title(title)
        fig.colorbar(im, ax=ax, shrink=0.8, label=_t("plot.attr_colorbar_norm" if method in PER_HEAD else
                                                     "plot.attr_colorbar", lang))
        fit_title(fig, ax)
    return fig


def attribution_grid(model, text: str, method: str, *, cmap: str = "viridis", cell: float = 1.3,
                     lang: str = "en") -> Figure:
    """``norm``: every layer × head (layers down, heads across); the accumulated methods: one
    panel per layer (one matrix a layer). One colour scale 0..1; words in ``lang``."""
    check_lang(lang)
    m = shown_matrices(model, text, check_method(method))  # (n_layers, [H,] L, L)
    per_head = method in PER_HEAD
    rows, cols = (m.shape[0], m.shape[1]) if per_head else (1, m.shape[0])
    name = _t(NAMES[method], lang)
    if not per_head:  # one row of panels: larger, and tall enough for the colour bar's words
        cell = max(cell, 2.0)
    with rc_context(matplotlib_rc()):
        fig = Figure(figsize=(cell * cols + 1.2, max(cell * rows + 0.9, 3.6)), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False)
        im = None
        for r in range(rows):
            for c in range(cols):
                ax = axes[r, c]
                im = ax.imshow(m[r, c] if per_head else m[c], cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
                ax.set_xticks([])
                ax.set_yticks([])
                if r == 0:
                    ax.set_title(_t("plot.head", lang, head=c) if per_head else _t("plot.layer", lang, layer=c), fontsize=8)
                if per_head and c == 0:
                    ax.set_ylabel(_t("plot.layer", lang, layer=r), fontsize=8)
        n = m.shape[-1]
        fig.suptitle(_t("plot.attr_grid_heads" if per_head else "plot.attr_grid_layers", lang, model=model.name,
                        method=name, n=n))
        assert im is not None  # at least one layer
        fig.colorbar(im, ax=axes, shrink=0.6 if per_head else 0.9,
                     label=_t("plot.attr_colorbar_norm" if per_head else "plot.attr_colorbar", lang))
    return fig
