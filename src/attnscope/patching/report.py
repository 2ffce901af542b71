"""report.md of a circuit experiment (``attnscope circuit run``), in English or Chinese, from results.json."""

from __future__ import annotations

from ..i18n import text


def _say(key: str, lang: str, **fmt) -> str:
    return text("circuit." + key, lang, **fmt)


def _iv(d: dict, digits: int = 3) -> str:
    return f"{d['value']:.{digits}f} [{d['low']:.{digits}f}, {d['high']:.{digits}f}]"


def _receivers(r, lang: str) -> str:
    if r == "logits":
        return _say("logits", lang)
    return ", ".join(f"{l}.{h} {kind}" for l, h, kind in r)


def _subset(name: str, lang: str) -> str:
    """A subset K as results.json names it ('∅', 'C', 'class X', 'random 2', 'rest of X'), in ``lang``."""
    for prefix, key, field in (("class ", "k_class", "name"), ("random ", "k_random", "i"), ("rest of ", "k_rest", "name")):
        if name.startswith(prefix):
            return _say(key, lang, **{field: name[len(prefix):]})
    return name


def report(results: dict, lang: str = "en") -> str:
    """The markdown report of ``results`` (what :func:`~attnscope.patching.experiment_file.run_experiment`
    returns) in ``lang``: the prompts, each sweep's strongest senders, the circuit's three metrics."""
    p = results["prompts"]
    lines = [f"# {_say('title', lang, model=results['model'])}", "",
             _say("prompts", lang, n=p["n"], seed=p["seed"], names=p["names"], templates=p["templates"]), ""]
    for ex in p["examples"][:2]:
        lines.append(f"- `{ex['clean']}` → IO `{ex['io']}`, S `{ex['s']}`; ABC: `{ex['corrupted']}`")
    for s in results["sweeps"]:
        lines += ["", f"## {_say('sweep', lang, name=s['name'])}", "",
                  _say("sweep_line", lang, receivers=_receivers(s["receivers"], lang), mlp=s["mlp"], senders=s["senders"],
                       clean=s["clean"], corrupted=s["corrupted"]), "",
                  f"| {_say('head', lang)} | {_say('effect', lang)} | {_say('relative', lang)} |", "|---|---:|---:|"]
        lines += [f"| {t['head']} | {t['effect']:+.3f} | {100 * t['relative']:+.1f} % |" for t in s["top"]]
    c = results.get("circuit")
    if c:
        lines += ["", f"## {_say('circuit', lang)}", ""]
        lines += [f"- {name}: {', '.join(f'{l}.{h}' for l, h in heads)}" for name, heads in c["classes"].items()]
        lines += ["", _say("ablation", lang, prompts=c["prompts"], boot=c["bootstrap"], runs=c["runs"]), "",
                  f"| {_say('metric', lang)} | {_say('value_interval', lang)} |", "|---|---|",
                  f"| F(M) | {_iv(c['F(M)'])} |", f"| F(C) | {_iv(c['F(C)'])} |",
                  f"| {_say('faithfulness', lang)} F(C)/F(M) | {_iv(c['faithfulness'])} |",
                  f"| F(M) − F(C) | {_iv(c['gap'])} |", "",
                  f"### {_say('completeness', lang)}", "",
                  f"| K | {_say('col_heads', lang)} | F(C∖K) | F(M∖K) | \\|F(C∖K) − F(M∖K)\\| | / F(M) |",
                  "|---|---|---:|---:|---|---|"]
        lines += [f"| {_subset(k['K'], lang)} | {k['heads']} | {k['F(C∖K)']:.3f} | {k['F(M∖K)']:.3f} | {_iv(k['score'])} | "
                  f"{_iv(k['relative'])} |" for k in c["completeness"]]
        lines += ["", f"### {_say('minimality', lang)}", "",
                  f"| v | {_say('col_class', lang)} | K | \\|F(C∖(K∪{{v}})) − F(C∖K)\\| | / F(C) |", "|---|---|---|---|---|"]
        lines += [f"| {m['head']} | {m['class']} | {_subset(m['K'], lang)} | {_iv(m['score'])} | {_iv(m['relative'])} |"
                  for m in c["minimality"]]
    return "\n".join(lines) + "\n"
