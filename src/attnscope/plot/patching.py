"""The figure of an activation-patching run: layers down, heads (or the prompt's tokens) across."""

from __future__ import annotations

from typing import Optional

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from ..fonts import matplotlib_rc
from ..i18n import text
from .figures import axis_labels

#: Cells of at most this many are annotated with their value.
ANNOTATE_MAX_CELLS = 600


def patching_heatmap(result, *, normalized: Optional[bool] = None, annotate: Optional[bool] = None,
                     cmap: str = "RdBu_r", lang: str = "en") -> Figure:
    """A layer × head (or layer × position) heatmap of a :class:`attnscope.patching.PatchingResult`.

    Args:
        normalized: colour ``(patched − corrupted) / (clean − corrupted)`` (default, when it is
            defined) or the raw metric.
        annotate: write each cell's value (default: up to :data:`ANNOTATE_MAX_CELLS` cells).
        cmap: a diverging colour map, centred on 0 (normalised) or on the corrupted metric (raw).
        lang: language of the title, axes, colour bar and footnote (attnscope.i18n's ``analysis``
            table, ``patch_fig_*``).
    """
    T = lambda key, **kw: text("analysis." + key, lang, **kw)  # noqa: E731
    norm = result.defined if normalized is None else bool(normalized and result.defined)
    v = (result.normalized if norm else result.values).numpy()  # (n_layers, width)
    n_layers, width = v.shape
    finite = v[np.isfinite(v)]
    if norm:  # 0 = no effect, ±1 = as far as clean; wider when a patch overshoots
        lim = max(1.0, float(np.abs(finite).max()) if finite.size else 1.0)
        vmin, vmax, centre = -lim, lim, 0.0
    else:
        centre = result.corrupted
        lim = float(np.abs(finite - centre).max()) if finite.size else 1.0
        lim = lim or 1.0
        vmin, vmax = centre - lim, centre + lim
    if annotate is None:
        annotate = n_layers * width <= ANNOTATE_MAX_CELLS
    heads = result.what == "heads"
    cols = [str(i) for i in range(width)] if heads else [f"{t} ({i})" for i, t in enumerate(axis_labels(result.cols))]
    cw = 0.55 if heads else 0.62
    w_in = min(max(4.5, 2.2 + cw * width), 40.0)
    h_in = min(max(3.2, 1.9 + 0.34 * n_layers + (0.9 if not heads else 0.0)), 40.0)
    with rc_context(matplotlib_rc()):
        fig = Figure(figsize=(w_in, h_in), layout="constrained")
        ax = fig.add_subplot()
        im = ax.imshow(np.ma.masked_invalid(v), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto",
                       interpolation="nearest")
        ax.set_xticks(range(width), cols, rotation=0 if heads else 60, ha="center" if heads else "right",
                      fontsize=8 if width <= 30 else 6, parse_math=False)  # tokens as written
        ax.set_yticks(range(n_layers), [str(l) for l in range(n_layers)], fontsize=8 if n_layers <= 32 else 6)
        ax.set_xlabel(T("patch_fig_x_heads" if heads else "patch_fig_x_positions"))
        ax.set_ylabel(T("col_layer"))
        what = T("patch_fig_heads") if heads else T("patch_fig_residual", site=result.site)
        ax.set_title(T("patch_fig_title", model=result.model_name, what=what, clean=result.clean_text,
                       corrupted=result.corrupted_text), fontsize=9, loc="left", parse_math=False)
        if annotate:
            fs = max(5.5, min(7.5, 150.0 / max(width, n_layers)))
            for i in range(n_layers):
                for j in range(width):
                    x = v[i, j]
                    if not np.isfinite(x):
                        continue
                    strong = abs(x - centre) > 0.6 * (vmax - centre)
                    ax.text(j, i, "0.00" if abs(x) < 0.005 else f"{x:.2f}", ha="center", va="center", fontsize=fs,
                            color="white" if strong else "black")
        unit = T("patch_fig_normalised" if norm else "patch_fig_raw", metric=result.metric)
        cb = fig.colorbar(im, ax=ax, shrink=0.9)
        cb.set_label(unit, fontsize=8)
        note = "" if result.defined else T("patch_fig_note", note=T("patch_undefined", metric=result.metric,
                                                                           clean=result.clean))
        foot = T("patch_fig_foot", metric=result.metric, clean=result.clean, corrupted=result.corrupted) + note
        fig.supxlabel(foot, fontsize=7.5)
    return fig
