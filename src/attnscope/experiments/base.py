"""What every experiment shares: its result object, how results are written, progress, seeding.

An experiment is a function ``run(*, quick, seed, progress, **options) -> ExperimentResult``.
The result holds plain numbers (``data`` and ``tables``), matplotlib figures and a Markdown
report; :meth:`ExperimentResult.write` puts them into a folder::

    results.json     every number, no wall-clock times (same seed -> identical file)
    <table>.csv      one file per table in ``tables``
    <figure>.png     one file per figure
    report.md        the Markdown report (it includes the timings)
    timing.json      wall-clock seconds, kept apart so that results.json is reproducible
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import torch

from ..errors import ConfigError
from ..i18n import error
from ..threads import torch_threads  # noqa: F401  (the experiments import it from here)


@dataclass
class ExperimentResult:
    """The outcome of one experiment.

    Attributes:
        name: the experiment's registry name ("variance", ...).
        params: the options it ran with, after defaults were filled in.
        data: JSON-able numbers (nested dicts/lists of float, int, str, bool, None).
        tables: CSV tables, name -> list of rows (dicts with the same keys).
        figures: matplotlib figures, name -> Figure (saved as ``name.png``).
        report: the Markdown report.
        timing: wall-clock seconds by phase (not part of results.json).
    """

    name: str
    params: dict
    data: dict
    tables: dict[str, list[dict]] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    report: str = ""
    timing: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        """What ``results.json`` holds: the numbers, the options, the software that made them."""
        return {"experiment": self.name, "params": self.params, "environment": environment(),
                "data": self.data, "tables": self.tables}

    def write(self, out: "str | Path", *, dpi: int = 100) -> dict[str, Path]:
        """Write every output file into ``out`` (created if missing); return them by kind/name."""
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise error(ConfigError, "errors.experiment_out_not_folder", path=repr(str(out)))
        out.mkdir(parents=True, exist_ok=True)
        files: dict[str, Path] = {}
        files["json"] = out / "results.json"
        files["json"].write_text(json.dumps(jsonable(self.to_json()), indent=1, allow_nan=False) + "\n")
        for name, rows in self.tables.items():
            path = out / f"{name}.csv"
            write_csv(path, rows)
            files[f"csv:{name}"] = path
        for name, fig in self.figures.items():
            path = out / f"{name}.png"
            fig.savefig(path, dpi=dpi)
            files[f"png:{name}"] = path
        files["report"] = out / "report.md"
        files["report"].write_text(self.report.rstrip() + "\n")
        files["timing"] = out / "timing.json"
        files["timing"].write_text(json.dumps({k: round(v, 3) for k, v in self.timing.items()}, indent=1) + "\n")
        return files

    def close_figures(self) -> None:
        import matplotlib.pyplot as plt

        for fig in self.figures.values():
            plt.close(fig)


def environment() -> dict:
    """Versions that the numbers depend on (a different torch may change the last digits)."""
    return {"python": platform.python_version(), "torch": torch.__version__,
            "platform": sys.platform}


def jsonable(x: Any) -> Any:
    """Plain JSON values: tensors and numpy scalars become Python numbers; NaN/inf become None.

    JSON has no NaN; a number that could not be measured is written as ``null`` instead, so that
    the file is strict JSON and readers never meet a silent NaN.
    """
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, torch.Tensor):
        return jsonable(x.tolist())
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):  # numpy scalar
        x = x.item()
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    return x


def write_csv(path: Path, rows: Sequence[dict]) -> None:
    """Rows of dicts as CSV; the header is the union of keys in first-seen order, the cells as the
    analysis writes them (floats to 6 significant digits; NaN, inf and missing cells empty)."""
    from ..analysis.report import write_csv as write_cells

    write_cells(path, list(dict.fromkeys(k for row in rows for k in row)), [jsonable(row) for row in rows])


# ----------------------------------------------------------------------------------------------
# progress and threads
# ----------------------------------------------------------------------------------------------

def progress_bar(iterable: Optional[Iterable] = None, *, total: Optional[int] = None, desc: str = "",
                 enabled: bool = True, unit: str = "it"):
    """A tqdm bar on stderr (a silent one when ``enabled`` is False)."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, disable=not enabled, unit=unit, dynamic_ncols=True,
                leave=True, file=sys.stderr)


# ----------------------------------------------------------------------------------------------
# option checking
# ----------------------------------------------------------------------------------------------

def check_positive_int(name: str, value: Any, high: Optional[int] = None) -> int:
    """``value`` if it is an integer in [1, high] (``high`` bounds what memory or time allows)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise error(ConfigError, "errors.experiment_positive_int", name=name, value=repr(value))
    if high is not None and value > high:
        raise error(ConfigError, "errors.experiment_at_most", name=name, high=f"{high:,}", value=f"{value:,}")
    return value


def check_options(experiment: str, options: dict, known: set, takes: Optional[set] = None) -> None:
    """ConfigError naming the ``options`` that ``experiment`` does not know and what it takes
    (``takes``: ``known`` unless given)."""
    extra = sorted(set(options) - known)
    if extra:
        raise error(ConfigError, "errors.experiment_option_one" if len(extra) == 1 else "errors.experiment_options",
                    name=repr(experiment), extra=", ".join(extra), takes=", ".join(sorted(known if takes is None else takes)))


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise error(ConfigError, "errors.experiment_seed", value=repr(seed))
    return seed


def check_int_list(name: str, values: Any, *, low: int = 1, high: Optional[int] = None) -> tuple[int, ...]:
    """A non-empty list of distinct integers in [low, high], returned sorted."""
    if isinstance(values, int):
        values = (values,)
    try:
        vals = tuple(values)
    except TypeError:
        raise error(ConfigError, "errors.experiment_int_list", name=name, value=repr(values)) from None
    if not vals:
        raise error(ConfigError, "errors.experiment_empty", name=name)
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, int):
            raise error(ConfigError, "errors.experiment_not_int", name=name, value=repr(v))
        if v < low or (high is not None and v > high):
            if high is None:
                raise error(ConfigError, "errors.experiment_range_low", name=name, value=v, low=low)
            raise error(ConfigError, "errors.experiment_range", name=name, value=v, low=low, high=high)
    if len(set(vals)) != len(vals):
        raise error(ConfigError, "errors.experiment_duplicates", name=name, values=list(vals))
    return tuple(sorted(vals))


def check_names(name: str, values: Any, allowed: Sequence[str]) -> tuple[str, ...]:
    """A non-empty list of distinct names from ``allowed``, kept in the order of ``allowed``."""
    if isinstance(values, str):
        values = (values,)
    vals = tuple(values)
    if not vals:
        raise error(ConfigError, "errors.experiment_empty_choose", name=name, allowed=", ".join(allowed))
    unknown = [v for v in vals if v not in allowed]
    if unknown:
        raise error(ConfigError, "errors.experiment_unknown_name", name=name, unknown=", ".join(map(repr, unknown)),
                    allowed=", ".join(allowed))
    return tuple(a for a in allowed if a in vals)


def figure_rc(lang: str) -> dict:
    """rcParams for :func:`matplotlib.rc_context` while a figure in ``lang`` is made: Chinese text
    needs the bundled CJK font behind DejaVu Sans (text objects keep the family they were made with)."""
    from ..fonts import matplotlib_rc
    return matplotlib_rc() if lang == "zh" else {}


def in_figure_rc(make):
    """Decorate ``make(..., lang)``, a figure maker, to run inside :func:`figure_rc` of its ``lang``
    (text made there keeps the font family)."""
    @functools.wraps(make)
    def run(*args, **kwargs):
        from matplotlib import rc_context

        bound = inspect.signature(make).bind(*args, **kwargs)
        bound.apply_defaults()
        with rc_context(figure_rc(bound.arguments["lang"])):
            return make(*args, **kwargs)
    return run


def fmt_num(x: Optional[float], digits: int = 3) -> str:
    """A number for a Markdown table: ``—`` for missing, general format otherwise."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}"


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)
