"""Per-text numbers taken over from an earlier run of the same texts (``evaluate-attribution --reuse``).

A run that adds methods, or more texts for the costly ones, need not recompute what an earlier run
already measured on the same texts: with the same model, corpus, seed, ``max_tokens`` and bins the
texts come in the same order, each cut the same way, and a method run with the same options gives
the same numbers. :class:`Earlier` checks those settings (an InputError in one sentence names the
first that differs) and hands back, for a text (by its index in the corpus), the methods whose
numbers the earlier run holds — ρ, the deleted and kept targets — which :mod:`.run` then leaves out
of the text's evaluation. A text evaluated again checks that its target still reads as before.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional, Sequence

from ..errors import InputError
from ..i18n import Msg, error
from .evaluate import REFERENCE, TextResult

#: |target now − target then| above this share (of max(1, |target|)) means the model or code changed
SAME_TARGET = 1e-4


def read_results(path) -> dict:
    """An earlier run's ``results.json`` (or the folder holding it), read; one sentence if not."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    # the reason in the message's language: an OSError's or a JSON error's own words are English
    try:
        res = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(InputError, "errors.faithfulness_reuse_read", path=str(p),
                    reason=Msg("errors.faithfulness_reuse_missing")) from None
    except json.JSONDecodeError as e:
        raise error(InputError, "errors.faithfulness_reuse_read", path=str(p),
                    reason=Msg("errors.faithfulness_reuse_not_json", line=e.lineno, column=e.colno)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise error(InputError, "errors.faithfulness_reuse_read", path=str(p), reason=str(e)) from None
    if not isinstance(res, dict) or "per_text" not in res or "methods" not in res:
        raise error(InputError, "errors.faithfulness_reuse_read", path=str(p),
                    reason=Msg("errors.faithfulness_reuse_no_numbers"))
    res["_path"] = str(p)
    return res


def same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class Earlier:
    """The per-text numbers of an earlier run ``res`` that this run (``settings``: model, corpus, seed,
    max_tokens, bins; ``options`` per method) may take over, for the methods of ``methods``."""

    def __init__(self, res: dict, settings: dict, methods: Sequence[str], options: dict) -> None:
        for key, now in settings.items():
            if not same(res.get(key), now):
                raise error(InputError, "errors.faithfulness_reuse_setting", path=res["_path"], setting=key,
                            then=json.dumps(res.get(key)), now=json.dumps(now))
        self.res = res
        self.path = res["_path"]
        then = res.get("options", {})
        # a method is taken over only with the options it ran with then (integrated gradients' steps …)
        self.methods = [m for m in methods if m in res["methods"] and same(then.get(m), options.get(m))]
        pt = res["per_text"]
        self.row = {int(i): k for k, i in enumerate(pt["index"])}
        self.used: dict[str, int] = {m: 0 for m in self.methods}
        # leave-one-out's scores per text (None: not kept), when leave-one-out itself is taken over
        self.scores = pt.get("reference_scores") if REFERENCE in self.methods else None
        self.used_scores = 0

    def held(self, index: int) -> list[str]:
        """The methods whose numbers the earlier run holds for the text ``index``."""
        k = self.row.get(index)
        if k is None:
            return []
        ms = self.res["per_text"]["methods"]
        return [m for m in self.methods if ms[m]["deleted"][k] is not None]

    def reference(self, index: int) -> Optional[list[float]]:
        """Leave-one-out's scores of the text ``index`` ``(n_content,)`` as the earlier run computed
        them, or None (not run on it, or a file from before they were kept)."""
        k = self.row.get(index)
        if k is None or self.scores is None or self.scores[k] is None:
            return None
        return [float(x) for x in self.scores[k]]

    def fill(self, index: int, where: str, r: Optional[TextResult], names: Sequence[str]) -> TextResult:
        """``r`` (this run's result of the text, None if no method ran on it now) with the earlier
        numbers of ``names`` added; InputError when the text's target no longer reads as it did."""
        pt, k = self.res["per_text"], self.row[index]
        if r is not None and REFERENCE not in r.seconds:  # computed now with leave-one-out's scores of then
            self.used_scores += 1
        if r is None:
            r = TextResult(index, where, pt["tokens"][k], pt["content_tokens"][k], pt["full"][k])
            r.details["counts"] = pt["counts"][k]
            r.truth = self.reference(index) or []
        elif abs(r.full - pt["full"][k]) > SAME_TARGET * max(1.0, abs(r.full)) or r.details["counts"] != pt["counts"][k]:
            raise error(InputError, "errors.faithfulness_reuse_changed", path=self.path, where=where,
                        then=f"{pt['full'][k]:.6g}", now=f"{r.full:.6g}")
        for m in names:
            x = pt["methods"][m]
            r.rho[m] = math.nan if x["rho"][k] is None else float(x["rho"][k])
            r.deleted[m], r.kept[m] = list(x["deleted"][k]), list(x["kept"][k])
            r.details.setdefault("reused", []).append(m)
            self.used[m] += 1
        return r

    def summary(self) -> dict:
        """What was taken over, for results.json: the earlier run's file and command, and per method
        the number of texts; ``reference_scores``: the texts whose leave-one-out scores were taken over."""
        return {"from": self.path, "command": self.res.get("command", ""),
                "methods": {m: n for m, n in self.used.items() if n}, "reference_scores": self.used_scores}
