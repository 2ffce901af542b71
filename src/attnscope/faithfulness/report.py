"""A faithfulness run written out: ``results.json``, ``report.md`` (en or zh) and ``curves.png``.

Every number of the page comes from the run's dict (:func:`.run.evaluate`); the verdict's sentences
are filled from :func:`.verdict.verdict`'s orders and intervals, so the page says what this run's
data shows in whatever order the methods come. Strings are the ``faithfulness.*`` keys of the
catalogue (``i18n/catalog/evaluate_attribution.toml``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..experiments.base import figure_rc, jsonable, md_table
from ..i18n import text
from .evaluate import RANDOM, REFERENCE

FILES = ("results.json", "report.md", "curves.png")
#: one colour a method, none of them the reference's black or the random control's grey
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
           "#000080", "#808000", "#ff1493")


def num(x: Optional[float]) -> str:
    return "—" if x is None or x != x else f"{x:.3f}"


def percent(x: float) -> str:
    """A share as a percentage to two significant digits, whole numbers from 100 % up."""
    return f"{100 * x:.0f}" if 100 * x >= 100 else f"{100 * x:.2g}"


def cell(b: dict) -> str:
    """A mean and its interval: ``0.386 [0.350, 0.420]``."""
    return f"{num(b['mean'])} [{num(b['low'])}, {num(b['high'])}]"


def say(key: str, lang: str, **values) -> str:
    return text(f"faithfulness.{key}", lang, **values)


def names(methods, lang: str) -> str:
    return say("list_sep", lang).join(f"`{m}`" for m in methods)


def measure_lines(res: dict, lang: str) -> list[str]:
    v, s = res["verdict"], res["summary"]
    lines = []
    for measure in ("rho", "aopc_comprehensiveness", "aopc_sufficiency"):
        e = v[measure]
        o = e["order"]
        head = say("v_measure", lang, measure=say(f"m_{measure}", lang), better=say(f"better_{measure}", lang),
                   order=say("order_sep", lang).join(f"`{m}` {num(s[m][measure]['mean'])}" for m in o))
        if "lead" in e:
            lead = e["lead"]
            key = "v_ahead" if e["ahead"] else "v_one_text" if lead["n"] == 1 else "v_tied"  # one text: no interval
            head += say("sentence_sep", lang) + say(
                key, lang, first=f"`{o[0]}`", second=f"`{o[1]}`",
                lead=num(lead["mean"]), low=num(lead["low"]), high=num(lead["high"]), n=lead["n"])
        lines.append("- " + head)
    return lines


def at_chance(v: dict, reaches: str, below: str, key: str, lang: str, one: str = "") -> list[str]:
    """The lines naming the methods at chance (the interval reaches 0) and, apart, those below it
    (wholly under 0) and those of one text (no interval: ``one``); one line saying every interval
    is above 0 when there are none. A run written before the two were told apart has no ``below``
    list: its ``reaches`` list is said as it was."""
    lines = []
    if v[reaches]:
        lines.append("- " + say(key, lang, methods=names(v[reaches], lang)))
    if v.get(below):
        lines.append("- " + say(f"{key}_below", lang, methods=names(v[below], lang)))
    if v.get(one):
        lines.append("- " + say("v_one_text_methods", lang, methods=names(v[one], lang)))
    return lines or ["- " + say(f"{key}_none", lang)]


def verdict_lines(res: dict, lang: str) -> list[str]:
    v, s = res["verdict"], res["summary"]
    lines = measure_lines(res, lang)
    fewer = [f"`{m}` {s[m]['texts']}" for m in v["compared"] if s[m]["texts"] < res["texts"]]
    if fewer:
        lines.append("- " + say("v_subsets", lang, items=say("list_sep", lang).join(fewer)))
    lines += at_chance(v, "chance_rho", "below_chance_rho", "v_chance", lang, "one_text_rho")
    if "not_above_random" in v:
        lines += at_chance(v, "not_above_random", "below_random", "v_random", lang, "one_text_random")
    if v.get("agreement") is not None:
        lines.append("- " + say("v_agree", lang, rho=num(v["agreement"]), n=len(v["compared"])))
    if "attention" in v["compared"]:
        n = len(v["compared"])
        lines.append("- " + say("v_attention", lang, n=n, rho=v["rho"]["order"].index("attention") + 1,
                                comp=v["aopc_comprehensiveness"]["order"].index("attention") + 1))
    if "reference_rank" in v:
        r = v["reference_rank"]
        lines.append("- " + say("v_reference", lang, comp=r["aopc_comprehensiveness"], suff=r["aopc_sufficiency"],
                                n=len(v["compared"]) + 1))
    return lines


def row_words(res: dict, lang: str) -> str:
    """Which row of a token-to-token matrix the run read as the output's, in ``lang``."""
    if res["kind"] == "decoder":
        return say("row_last", lang)
    return say("row_cls" if res["row"].startswith("row 0") else "row_max" if "max pooling" in res["row"] else "row_mean",
               lang)


def markdown(res: dict, lang: str = "en") -> str:
    """The report page of one run (module docstring)."""
    s = res["summary"]
    kind = res["kind"]
    out = [say("title", lang, model=res["model"]), "",
           say("setup", lang, texts=res["texts"], corpus=res["corpus"], seed=res["seed"], max_tokens=res["max_tokens"],
               skipped=res["skipped_short"], target=say(f"target_{kind}", lang), row=row_words(res, lang),
               bins=", ".join(f"{b:g}" for b in res["bins"]), resamples=res["resamples"]), ""]
    header = [say(f"col_{c}", lang) for c in ("method", "texts", "rho", "comp", "suff", "seconds")]
    rows = []
    for m in res["methods"]:
        x = s[m]
        rows.append([f"`{m}`", x["texts"], "—" if m == REFERENCE else cell(x["rho"]), cell(x["aopc_comprehensiveness"]),
                     cell(x["aopc_sufficiency"]), "—" if m == RANDOM else f"{x['seconds_per_text']:.2f}"])
    out += [md_table(header, rows), "", say("table_note", lang), ""]
    out += [say("verdict_head", lang), ""] + verdict_lines(res, lang) + [""]
    out += [say("curves_head", lang), "", say("curves_text", lang), "", "![curves](curves.png)", ""]
    notes = []
    limited = [f"`{m}` {res['limits'][m]}" for m in res["methods"] if m in res["limits"] and res["limits"][m] < res["texts"]]
    if limited:
        notes.append(say("limits", lang, items=say("list_sep", lang).join(limited)))
    ig = s.get("integrated_gradients")
    if ig and "completeness_gap" in ig:
        o = res["options"].get("integrated_gradients", {})
        base = o.get("baseline")
        notes.append(say("ig_note", lang, steps=o.get("steps", 50),
                         baseline=say("ig_zero", lang) if base is None else say("ig_token", lang, token=base),
                         median=percent(ig["completeness_gap"]["median"]), p90=percent(ig["completeness_gap"]["p90"])))
        if "rule" in o or "power" in o:
            notes.append(say("ig_points", lang, steps=o.get("steps", 50), rule=o.get("rule", "midpoint"),
                             power=f"{o.get('power', 1.0):g}"))
    if "flow" not in res["methods"]:
        notes.append(say("flow_note", lang))
    if res.get("reused"):
        u = res["reused"]
        notes.append(say("reused", lang, path=u["from"], command=u["command"],
                         items=say("list_sep", lang).join(f"`{m}` {n}" for m, n in u["methods"].items())))
    notes.append(say("reproduce", lang, command=res.get("command", ""), seconds=f"{res['seconds']:.0f}",
                     threads=res["threads"], version=res["versions"]["attnscope"], torch=res["versions"]["torch"]))
    out += [say("notes_head", lang), ""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def figure(res: dict, lang: str = "en"):
    """The deletion (comprehensiveness) and insertion (sufficiency) curves: mean over the texts per
    bin, with the 95 % interval as a band, one line per method."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = res["bins"]
    with matplotlib.rc_context(figure_rc(lang)):
        fig, axes = plt.subplots(1, 2, figsize=(11, 5.0), constrained_layout=True)
        for ax, key, title in ((axes[0], "comprehensiveness", "plot_deletion"), (axes[1], "sufficiency", "plot_insertion")):
            others = [m for m in res["methods"] if m not in (REFERENCE, RANDOM)]
            for m in res["methods"]:
                b = res["summary"][m][key]
                style = {"color": "black", "linestyle": "--"} if m == REFERENCE else \
                    {"color": "grey", "linestyle": ":"} if m == RANDOM else \
                    {"color": COLOURS[others.index(m) % len(COLOURS)]}
                line, = ax.plot(bins, [x["mean"] for x in b], marker="o", markersize=3, label=m, **style)
                ax.fill_between(bins, [x["low"] for x in b], [x["high"] for x in b], alpha=0.12,
                                color=line.get_color())
            ax.set_xscale("log")
            ax.set_xticks(bins, [f"{b:g}" for b in bins])
            ax.set_title(say(title, lang))
            ax.set_xlabel(say("plot_x", lang))
            ax.set_ylabel(say(f"plot_y_{key}", lang))
            ax.grid(alpha=0.3)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, ncol=6, loc="outside lower center")  # below: no curve hidden
        fig.suptitle(say("plot_title", lang, model=res["model"], texts=res["texts"]))
    return fig


def write(res: dict, out: Path, lang: str = "en") -> list[Path]:
    """``results.json``, ``report.md`` and ``curves.png`` into the folder ``out`` (made if missing)."""
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f for f in FILES]
    paths[0].write_text(json.dumps(jsonable(res), indent=1, allow_nan=False, ensure_ascii=False) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(res, lang), encoding="utf-8")
    fig = figure(res, lang)
    fig.savefig(paths[2], dpi=110)
    plt.close(fig)
    return paths
