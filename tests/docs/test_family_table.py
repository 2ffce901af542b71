"""The README's family table names trace names that exist: each backticked name in its last
column matches a template of TRACE_NAMES or SEQ2SEQ_NAMES, and each family's model_type loads."""

import fnmatch
import re
from pathlib import Path

from attnscope.models.registry import supported_model_types
from attnscope.trace.names import SEQ2SEQ_NAMES, TRACE_NAMES

README = Path(__file__).resolve().parents[2] / "README.md"


def _table_rows():
    text = README.read_text(encoding="utf-8")
    block = text[text.index("| family | `model_type` |"):].split("\n\n")[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()[2:]]


def _templates():
    return [n.replace("{i}", "*") for n in (*TRACE_NAMES, *SEQ2SEQ_NAMES)]


def test_every_added_name_is_a_trace_name():
    rows = _table_rows()
    assert len(rows) >= 10
    names = _templates()
    seen = 0
    for row in rows:
        for raw in re.findall(r"`([^`]+)`", row[-1]):
            if raw in {"llama"}:  # "as `llama`" refers to a row, not a name
                continue
            pattern = raw.replace("{i}", "*").replace("…", "*")
            # a short name (attn.q_proj) is the tail of a layer's name
            candidates = [pattern] if pattern.startswith(("embed.", "encoder", "decoder", "final_norm")) \
                else [f"layers.*.{pattern}", f"*.{pattern}"]
            if pattern.endswith(".*"):
                candidates.append(pattern[:-2] + ".*")
            ok = any(fnmatch.fnmatch(n, c) or fnmatch.fnmatch(n.replace("*", "0"), c) for n in names for c in candidates)
            assert ok, f"README family table names {raw!r}, which is no trace name"
            seen += 1
    assert seen >= 20


def test_every_model_type_in_the_table_is_registered():
    known = set(supported_model_types())
    for row in _table_rows():
        for mt in re.split(r",\s*", row[1]):
            assert mt in known, f"README family table lists model_type {mt!r}, which no family registers"
