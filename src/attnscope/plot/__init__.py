"""Figures of attention, made with matplotlib from a :class:`attnscope.trace.Trace`.

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (no global state,
no window): show it in Jupyter by leaving it as a cell's value, or write it with
``fig.savefig("fig.png")`` (PNG, SVG and PDF all work). Token labels in Chinese, Japanese or
Korean are drawn with the CJK font attnscope ships (:mod:`attnscope.fonts`).

    >>> import attnscope
    >>> from attnscope import plot
    >>> tr = attnscope.load().trace("The cat sat on the mat.")
    >>> plot.head_heatmap(tr, layer=0, head=3).savefig("head.png")
    >>> plot.heads_grid(tr).savefig("grid.svg")
"""

from .figures import ANNOTATE_MAX_TOKENS, head_heatmap, heads_grid, score_histograms, softmax_temperatures

__all__ = ["head_heatmap", "heads_grid", "score_histograms", "softmax_temperatures",
           "ANNOTATE_MAX_TOKENS"]
