"""Reading matrices from YAML, JSON, TOML files and from command-line strings.

Every error names where the problem is — file, key, row, column — in one line, because these
files are written by hand and the person who wrote them needs to find the slip.

``load_mapping(path, keep_text=True)`` keeps each number as a :class:`~.numbers.Written` (its value
and the decimals it was written with), which the checker needs: YAML would read ``0.710`` as 0.71
and forget the third decimal.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..errors import InputError
from ..i18n import Msg, error, word
from .full_width import full_width_colon_key, no_full_width_indent, no_full_width_point, no_full_width_separator
from .numbers import Written, parse_written
from .places import Where, at_cell, at_entry, at_row, count, distinct_labels
from .places import kind as describe

FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}


# ----------------------------------------------------------------------------------------------
# files
# ----------------------------------------------------------------------------------------------

def load_mapping(path: str, keep_text: bool = False) -> dict:
    """The top-level mapping of a YAML, JSON or TOML file (chosen by extension).

    With ``keep_text`` numbers are :class:`Written` objects, else floats/ints.
    Raises InputError for an unknown extension, a syntax error (with line and column), or a
    top level that is not a mapping. A missing file raises FileNotFoundError (the CLI reports it).
    """
    ext = os.path.splitext(path)[1].lower()
    kind = FORMATS.get(ext)
    if kind is None:
        raise error(InputError, "errors.file_type", path=path, ext=repr(ext or '(none)'))
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(InputError, "errors.not_utf8", path=path, byte=e.start) from None
    return loads(text, kind, name=path, keep_text=keep_text)


def loads(text: str, kind: str, name: str = "<input>", keep_text: bool = False) -> dict:
    """Parse ``text`` as ``kind`` ("yaml", "json", "toml"); see :func:`load_mapping`."""
    load = {"yaml": _load_yaml, "json": _load_json, "toml": _load_toml}.get(kind)
    if load is None:
        raise error(InputError, "errors.explain_unknown_format", name=name, kind=repr(kind))
    data = load(text, name, keep_text)
    if not isinstance(data, dict):
        raise error(InputError, "errors.explain_top_level", name=name, kind=describe(data))
    loop = _cycle_path(data)
    if loop is not None:
        raise error(InputError, "errors.explain_contains_itself", name=name, loop=loop)
    return data


def _cycle_path(data) -> Optional[Msg]:
    """The key path of the first container that contains itself, or None. YAML aliases can build
    such loops, and everything that walks the data would recurse forever. Iterative, so that deep
    (but finite) nesting cannot exhaust the stack here either."""
    top = Msg("errors.explain_the_top_level")
    stack = [(data, top, iter(_children(data)))]
    on_path = {id(data)}
    while stack:
        _, path, children = stack[-1]
        for key, child in children:
            if isinstance(child, (dict, list)):
                sub = Msg("errors.explain_indexed", where=path, index=key) if isinstance(key, int) else (
                    Msg("errors.explain_key", name=key) if path is top else Msg("errors.explain_dotted", where=path,
                                                                                  sub=key))
                if id(child) in on_path:
                    return sub
                on_path.add(id(child))
                stack.append((child, sub, iter(_children(child))))
                break
        else:
            on_path.discard(id(stack.pop()[0]))
    return None


def _children(x):
    return x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()


def _load_yaml(text: str, name: str, keep_text: bool):
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            _no_key_twice(name, [(k.value, k.start_mark) for k, _ in node.value
                                 if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge"])
            return super().construct_mapping(node, deep=deep)

    if keep_text:
        def number(loader, node):
            w = parse_written(node.value)
            if w is None:  # YAML-specific spellings such as 0x1F or 1_000: value only
                value = yaml.SafeLoader.construct_yaml_float(loader, node) if node.tag.endswith("float") \
                    else yaml.SafeLoader.construct_yaml_int(loader, node)
                return Written(float(value), 0, node.value)
            return w
        Loader.add_constructor("tag:yaml.org,2002:float", number)
        Loader.add_constructor("tag:yaml.org,2002:int", number)
    no_full_width_indent(text, name)
    try:
        return yaml.load(text, Loader=Loader)
    except RecursionError:
        raise error(InputError, "errors.explain_too_deep", name=name) from None
    except yaml.MarkedYAMLError as e:
        key = full_width_colon_key(text)
        if key:
            raise error(InputError, "errors.yaml_full_width_colon", name=name, field=key[0], line=key[1]) from None
        mark = e.problem_mark or e.context_mark
        where = Msg("errors.line_column", line=mark.line + 1, column=mark.column + 1) if mark else ""
        raise error(InputError, "errors.bad_yaml", name=name, where=where, problem=e.problem or e.context) from None
    except yaml.YAMLError as e:
        raise error(InputError, "errors.explain_bad_yaml", name=name, problem=str(e)) from None


def _no_key_twice(name: str, keys: list) -> None:
    """InputError for a key given twice in one mapping ``keys`` [(key, YAML mark or None)]: YAML and JSON
    readers keep the last in silence (a second ``weights:`` dropped the first)."""
    seen = set()
    for key, mark in keys:
        if key in seen:
            where = Msg("errors.line_column", line=mark.line + 1, column=mark.column + 1) if mark else ""
            raise error(InputError, "errors.file_key_twice", name=name, field=repr(key), where=where)
        seen.add(key)


def _load_json(text: str, name: str, keep_text: bool):
    def pairs(items: list) -> dict:
        _no_key_twice(name, [(k, None) for k, _ in items])
        return dict(items)

    kw: dict[str, Any] = {"object_pairs_hook": pairs}
    if keep_text:
        kw.update(parse_float=_number_text, parse_int=_number_text, parse_constant=_number_text)
    try:
        return json.loads(text, **kw)
    except RecursionError:
        raise error(InputError, "errors.explain_too_deep", name=name) from None
    except json.JSONDecodeError as e:
        raise error(InputError, "errors.bad_json", name=name, line=e.lineno, column=e.colno, problem=e.msg) from None


def _load_toml(text: str, name: str, keep_text: bool):
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(text, parse_float=_number_text if keep_text else float)
    except tomllib.TOMLDecodeError as e:
        raise error(InputError, "errors.explain_bad_toml", name=name, problem=str(e)) from None
    return _each(data, _int_written) if keep_text else data


def _number_text(text: str) -> Written:
    """A JSON or TOML number's text as the Written it was; NaN too (``NaN``, ``nan``), which
    :func:`number` then refuses as not finite — parse_written has no NaN, and None would read as a blank."""
    w = parse_written(text)
    return w if w is not None else Written(float(text), 0, text)


def _int_written(x):
    """A TOML int (not a bool) as the Written it was."""
    return Written(float(x), 0, str(x)) if isinstance(x, int) and not isinstance(x, bool) else x


def _each(x, leaf):
    """``leaf`` of every value in nested dicts and lists (the containers rebuilt)."""
    if isinstance(x, dict):
        return {k: _each(v, leaf) for k, v in x.items()}
    if isinstance(x, list):
        return [_each(v, leaf) for v in x]
    return leaf(x)


# ----------------------------------------------------------------------------------------------
# matrices
# ----------------------------------------------------------------------------------------------

def number(x: Any, where: Where, allow_none: bool = False, allow_inf: bool = False) -> Any:
    """One entry as float (or Written kept as is); ``where`` names its place for the error."""
    if x is None:
        if allow_none:
            return None
        raise error(InputError, "errors.explain_entry_empty", where=where)
    if isinstance(x, bool):
        raise error(InputError, "errors.explain_not_a_number", where=where, value=str(x).lower())
    if isinstance(x, Written):
        if x.overflows:
            raise error(InputError, "errors.explain_overflow", where=where, value=x.text)
        value = x.value
    elif isinstance(x, (int, float, np.floating, np.integer)):
        try:
            value = float(x)
        except OverflowError:  # an int beyond float64 (10**400)
            raise error(InputError, "errors.explain_overflow", where=where, value=str(x)) from None
    elif isinstance(x, str):
        w = parse_written(x)
        if w is None:
            no_full_width_separator([x], where)
            no_full_width_point(x, where)
            raise error(InputError, "errors.explain_not_a_number", where=where, value=repr(x))
        if w.overflows:
            raise error(InputError, "errors.explain_overflow", where=where, value=x)
        x, value = w, w.value
    else:
        raise error(InputError, "errors.explain_expected_number", where=where, kind=describe(x))
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise error(InputError, "errors.explain_not_finite", where=where, value=value)
    return x if isinstance(x, Written) else value


def matrix(x: Any, where: Where, *, rows: Optional[int] = None) -> np.ndarray:
    """A rectangular matrix (list of rows) of finite numbers → float64 array (L, d).

    ``where`` is e.g. "answers.yaml, key weights"; errors add "row r, column c (from 0)".
    ``rows`` requires that many rows (a checker's answers with blanks or ∞ are read row by row,
    :func:`vector`).
    """
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if not isinstance(x, (list, tuple)) or len(x) == 0:
        raise error(InputError, "errors.explain_expected_matrix", where=where, kind=describe(x if x != [] else None))
    if not all(isinstance(r, (list, tuple)) for r in x):
        bad = next(i for i, r in enumerate(x) if not isinstance(r, (list, tuple)))
        raise error(InputError, "errors.explain_expected_row", where=at_row(where, bad), kind=describe(x[bad]))
    width = len(x[0])
    out = []
    for i, r in enumerate(x):
        if len(r) != width:
            no_full_width_separator(r, at_row(where, i))
            raise error(InputError, "errors.explain_not_rectangular", where=at_row(where, i),
                        count=count(len(r), "entry"), width=width)
        out.append([number(v, at_cell(where, i, j)) for j, v in enumerate(r)])
    if width == 0:
        raise error(InputError, "errors.explain_rows_empty", where=where)
    if rows is not None and len(out) != rows:
        raise error(InputError, "errors.explain_expected_count", where=where, count=count(rows, "row"), got=len(out))
    return np.array([[_value(v) for v in r] for r in out], dtype=np.float64)


def vector(x: Any, where: Where, *, size: Optional[int] = None, allow_none: bool = False,
           allow_inf: bool = False, raw: bool = False, max_size: Optional[int] = None):
    """A list of numbers → float64 array (n,), or the entries as given (raw)."""
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if not isinstance(x, (list, tuple)) or len(x) == 0:
        raise error(InputError, "errors.explain_expected_numbers", where=where, kind=describe(x if x != [] else None))
    out = []
    for j, v in enumerate(x):
        if isinstance(v, (list, tuple)):
            raise error(InputError, "errors.explain_one_row", where=at_entry(where, j))
        out.append(number(v, at_entry(where, j), allow_none, allow_inf))
    if size is not None and len(out) != size:
        raise error(InputError, "errors.explain_expected_count", where=where, count=count(size, "number"), got=len(out))
    if max_size is not None and len(out) > max_size:
        raise error(InputError, "errors.explain_expected_at_most", where=where, count=count(max_size, "number"),
                    got=len(out))
    if raw:
        return out
    return np.array([_value(v) for v in out], dtype=np.float64)


def _value(v) -> float:
    if v is None:
        return math.nan
    return v.value if isinstance(v, Written) else float(v)


def parse_matrix_arg(text: str, where: Where) -> np.ndarray:
    """A matrix from the command line: ``"1,0; 0,1; 1,1"`` (rows by ``;``) or JSON ``[[1,0],[0,1]]``."""
    t = text.strip()
    if t.startswith("["):
        try:
            value = json.loads(t)
        except json.JSONDecodeError as e:
            raise error(InputError, "errors.explain_not_json_matrix", where=where, text=repr(text), problem=e.msg,
                        column=e.colno) from None
        if isinstance(value, list) and value and not isinstance(value[0], list):
            value = [value]
        return matrix(value, where)
    return matrix([_split_numbers(r) for r in t.split(";")], where)


def parse_vector_arg(text: str, where: Where) -> np.ndarray:
    """A vector from the command line: ``"15.3, 22.7, 18.2"`` or ``"[15.3, 22.7]"``."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1]
    return vector(_split_numbers(t), where)


def _split_numbers(text: str) -> list[Optional[str]]:
    """The numbers of ``text``, by commas or spaces; an empty place between commas ("1,,3", "1,2,")
    is None (the entry is named as empty, not dropped); only commas and spaces: nothing."""
    pieces: list[list[Optional[str]]] = [list(p.split()) or [None] for p in text.split(",")]
    return [] if all(p == [None] for p in pieces) else [w for p in pieces for w in p]


def labels(x: Any, where: Where, n: int) -> list[str]:
    """``n`` token labels (strings; numbers are accepted and turned into text), each naming one row:
    repeated ones are numbered (:func:`~.places.distinct_labels`)."""
    if not isinstance(x, (list, tuple)):
        raise error(InputError, "errors.explain_expected_labels", where=where, n=n, kind=describe(x))
    if len(x) != n:
        raise error(InputError, "errors.explain_labels_count", where=where, n=n, got=len(x))
    return distinct_labels([v.text if isinstance(v, Written) else str(v) for v in x])


def plain(x):
    """Undo keep_text: Written → float (int when written as an integer), in nested dicts and lists too."""
    if not isinstance(x, Written):
        return _each(x, plain) if isinstance(x, (dict, list)) else x
    if x.decimals == 0 and x.value.is_integer() and not any(c in x.text for c in ".eE"):
        return int(x.value)
    return x.value


def is_whole(v) -> bool:
    """True for an int or an integer-valued finite float (3.0), never a bool (nan and inf are not
    whole: int() of them would raise)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return isinstance(v, int) or (math.isfinite(v) and v == int(v))


def whole_number(value, where: Where, low: int = 1) -> int:
    """A whole number from a file (a :class:`~.numbers.Written` or plain; 3.0 is 3) that is at least
    ``low``, or InputError naming ``where``."""
    v = plain(value)
    if not is_whole(v):
        raise error(InputError, "errors.explain_expected_whole", where=where, value=repr(v))
    if int(v) < low:
        raise error(InputError, "errors.explain_at_least", where=where, low=low, value=int(v))
    return int(v)


def loaded(model):
    """``model`` itself, or the model that a name or folder (None: the default model) names, loaded.
    A model with half-precision weights is read again from its checkpoint in float32
    (:func:`attnscope.models.precision.full_precision`): a lesson's float64 numbers come from the
    checkpoint's weights, never from their bfloat16/float16 rounding."""
    if model is None or isinstance(model, (str, Path)):
        from ..models import load  # torch and the model code only when a lesson reads a model
        return load(model)
    from ..models.precision import full_precision
    return full_precision(model)


def model_layer(layer, n: int) -> int:
    """``layer`` as an index into a model's ``n`` layers, or InputError naming it as written (one that is not
    a whole number too)."""
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < n:
        raise error(InputError, "errors.index_model", what=word("layer"), value=repr(layer), n=n, unit=word("layers"),
                    last=n - 1)
    return int(layer)


def check_kv_heads(H: int, Hkv: int, where: Where) -> None:
    """InputError naming ``where`` when ``Hkv`` key/value heads do not divide ``H`` query heads (the
    error lists the numbers that do)."""
    if H % Hkv:
        raise error(InputError, "errors.explain_kv_divide", where=where, H=H, Hkv=Hkv,
                    divisors=", ".join(str(k) for k in range(1, H + 1) if H % k == 0))


def check_index(what: Where, value, n: int, unit: str) -> int:
    """``value`` as an index into ``n`` items (a layer, a head, a key), or InputError naming
    ``what`` (a word, or a Msg such as "decoder layer") and the range (``unit``: "layers", "heads", "keys")."""
    name = word(what) if isinstance(what, str) else what
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise error(InputError, "errors.not_integer", what=name, value=repr(value))
    if not 0 <= value < n:
        raise error(InputError, "errors.index_there" if unit == "keys" else "errors.index_model", what=name,
                    value=value, n=n, unit=word(unit), last=n - 1)
    return int(value)
