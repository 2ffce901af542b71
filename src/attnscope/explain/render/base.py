"""What every renderer shares: looking labels up, filling their parameters, showing numbers, and
writing the expansion lines (row·column products, sums, divisions, weighted sums) as text.

Labels are written with inline TeX math between ``$…$`` (see :mod:`..i18n`). The LaTeX renderer
keeps it; the others turn it into Unicode with :func:`tex_to_text` (``\\sqrt{d_k}`` → ``√d_k``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from decimal import Decimal
from typing import Callable, Optional

from ...errors import ConfigError
from ...i18n import error
from .. import i18n
from ..blocks import SUBSCRIPTS, SUPERSCRIPTS, Matrix, Sym, T, VecParam
from ..numbers import Shown, matrix_is_int, short, show
from .rounding import relations

FORMATS = ("rich", "markdown", "latex", "json")

#: ``{name}`` is a parameter unless it is a TeX group: after a letter, "_", "^" or "\\"
#: (``\\sqrt{d_k}``, ``e^{s}``, ``x_{ij}`` stay TeX).
_PLACEHOLDER = re.compile(r"(?<![A-Za-z_^\\])\{([A-Za-z_][A-Za-z0-9_]*)\}")


def check_options(format: str, lang: str, decimals: int) -> None:
    if format not in FORMATS:
        raise error(ConfigError, "errors.explain_unknown_output_format", value=repr(format), choices=", ".join(FORMATS))
    if lang not in i18n.LANGS:
        raise error(ConfigError, "errors.explain_unknown_language", value=repr(lang), choices=", ".join(i18n.LANGS))
    if not isinstance(decimals, int) or not 0 <= decimals <= 12:
        raise error(ConfigError, "errors.explain_integer_range", name="decimals", low=0, high=12, value=repr(decimals))


# ----------------------------------------------------------------------------------------------
# TeX → Unicode for the handful of commands the labels use
# ----------------------------------------------------------------------------------------------

_SUPER_IDX = str.maketrans("0123456789ighjkn", "⁰¹²³⁴⁵⁶⁷⁸⁹ⁱᵍʰʲᵏⁿ")  # a head index: W_Q^{(i)} → W_Q⁽ⁱ⁾
_WORDS = {
    r"\cdot": "·", r"\times": "×", r"\approx": "≈", r"\sum": "Σ", r"\Sigma": "Σ", r"\leq": "≤",
    r"\le": "≤", r"\geq": "≥", r"\ge": "≥", r"\infty": "∞", r"\to": "→", r"\ldots": "…", r"\dots": "…",
    r"\neq": "≠", r"\in": "∈", r"\propto": "∝", r"\sigma": "σ", r"\tau": "τ", r"\partial": "∂",
    r"\delta": "δ", r"\top": "ᵀ", r"\exp": "exp", r"\log": "log", r"\max": "max", r"\min": "min",
    r"\quad": "   ", r"\qquad": "    ", r"\,": " ", r"\;": " ", r"\!": "", r"\left": "", r"\right": "",
    r"\%": "%", r"\{": "{", r"\}": "}", r"\mid": "|", r"\|": "‖", r"\lvert": "|", r"\rvert": "|",
    r"\pm": "±", r"\mu": "μ", r"\lambda": "λ", r"\Rightarrow": "⇒", r"\ll": "≪", r"\gg": "≫",
    r"\sim": "~", r"\equiv": "≡", r"\prime": "′", r"\,\cdot\,": "·", r"\backslash": "\\",
    r"\theta": "θ", r"\varphi": "φ", r"\phi": "φ", r"\cos": "cos", r"\sin": "sin", r"\varepsilon": "ε",
    r"\epsilon": "ε", r"\lfloor": "⌊", r"\rfloor": "⌋", r"\mapsto": "↦",
    r"\omega": "ω", r"\pi": "π", r"\alpha": "α",
}
_ARG = r"\{([^{}]*)\}"


def tex_to_text(s: str) -> str:
    """Unicode form of the small TeX subset used in labels and formulas."""
    prev = None
    while prev != s:  # innermost first, until nothing changes
        prev = s
        s = re.sub(r"\\(?:mathrm|operatorname|text|mathbf|mathit|boldsymbol)" + _ARG, r"\1", s)
        s = re.sub(r"\\mathbb" + _ARG, r"\1", s)
        s = re.sub(r"\\hat" + _ARG, lambda m: m.group(1) + "\u0302", s)
        s = re.sub(r"\\tilde" + _ARG, lambda m: unicodedata.normalize("NFC", m.group(1) + "\u0303"), s)  # Ã
        s = re.sub(r"\\sqrt" + _ARG, lambda m: "√" + _wrap(m.group(1)), s)
        s = s.replace(r"\tfrac{1}{2}", "½")  # the rollout's ½·A + ½·I as its formulas write it
        s = re.sub(r"\\[td]?frac" + _ARG + _ARG, lambda m: _wrap(m.group(1)) + "/" + _wrap(m.group(2)), s)
        s = re.sub(r"\^\{\\top\}|\^\\top", "ᵀ", s)
        s = re.sub(r"\^\{\(([0-9a-z])\)\}", lambda m: "⁽" + m.group(1).translate(_SUPER_IDX) + "⁾", s)  # W_Q^{(i)}
        s = re.sub(r"\^\{([0-9+-]+)\}|\^([0-9])", lambda m: (m.group(1) or m.group(2)).translate(SUPERSCRIPTS), s)
        s = re.sub(r"_\{([0-9]+)\}", lambda m: m.group(1).translate(SUBSCRIPTS), s)
    for word in sorted(_WORDS, key=len, reverse=True):
        guard = r"(?![A-Za-z])" if word[-1].isalpha() else ""
        def spelled(m: re.Match, w: str = word) -> str:
            return _WORDS[w]
        s = re.sub(re.escape(word) + guard, spelled, s)
    s = re.sub(r"\^\{([^{}]*)\}", lambda m: "^" + _wrap(m.group(1)), s)
    s = re.sub(r"_\{([^{}]*)\}", r"_\1", s)
    return s.replace("{", "").replace("}", "").replace("-∞", "−∞")  # the minus sign numbers use


def _wrap(x: str) -> str:
    x = x.strip()
    return x if re.fullmatch("[\\w.'^ᵀ√\x00]+", x) else f"({x})"


def tex_escape(s: str) -> str:
    """Text-mode LaTeX escaping of a plain string (tokens, names)."""
    rep = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
           "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(rep.get(c, c) for c in str(s))


# ----------------------------------------------------------------------------------------------
# the context every renderer carries
# ----------------------------------------------------------------------------------------------

def grid(m: Matrix) -> tuple:
    """What every renderer draws of a matrix block: ``(as_int, values (m, n), row labels, column
    labels)``; a vector is one row, and labels are 0, 1, … where the block has none."""
    as_int = m.as_int if m.as_int is not None else matrix_is_int(m.values)
    vals = m.values if m.values.ndim == 2 else m.values[None, :]
    return as_int, vals, m.rows or [str(i) for i in range(vals.shape[0])], m.cols or [str(j) for j in range(vals.shape[1])]


class Ctx:
    """Language, decimals and output flavour ("text" or "tex") of one rendering."""

    def __init__(self, lang: str = "en", decimals: int = 4, flavour: str = "text") -> None:
        self.lang, self.decimals, self.flavour = lang, decimals, flavour
        self.labels = i18n.LABELS[lang]

    # numbers ----------------------------------------------------------------------------------
    def shown(self, x, as_int: Optional[bool] = None, in_group: bool = False, alone: bool = False) -> Shown:
        return show(x, self.decimals, as_int, in_group, alone)

    def num(self, x, as_int: Optional[bool] = None, in_group: bool = False, alone: bool = False) -> str:
        """A number in this flavour (TeX math for "tex"); ``in_group``, ``alone``: see :func:`show`."""
        s = self.shown(x, as_int, in_group, alone)
        return s.tex() if self.flavour == "tex" else s.plain()

    def vec(self, xs, as_int: Optional[bool] = None, more: bool = False, exact: bool = False) -> str:
        sep = ",\\ " if self.flavour == "tex" else ", "
        body = sep.join(self.cell(x, as_int, exact) for x in xs)
        if more:
            body += sep + (r"\ldots" if self.flavour == "tex" else "…")
        return f"[{body}]"

    def cell(self, x, as_int: Optional[bool] = None, exact: bool = False) -> str:
        """A matrix entry: at the decimals, or as given (``exact``, for inputs)."""
        if exact and math.isfinite(float(x)):
            s = short(x)
            return s.replace("e", r"\times10^{") + "}" if (self.flavour == "tex" and "e" in s) else s
        if _is_zero(x):
            return "0"  # an exact zero is 0; 0.0000 would be a value that merely rounds to zero
        return self.num(x, as_int, in_group=True)

    def sym(self, s: Sym) -> str:
        return s.tex if self.flavour == "tex" else s.text

    # labels -----------------------------------------------------------------------------------
    def label(self, key: str) -> str:
        try:
            return self.labels[key]
        except KeyError:
            raise KeyError(f"label {key!r} has no {self.lang} text in attnscope.explain.i18n") from None

    def text(self, x) -> str:
        """A T (or str/Sym/number) as text of this flavour: Unicode, or LaTeX text mode."""
        if isinstance(x, T):
            if x.texts is not None:
                return self._fill(x.texts.get(self.lang, x.texts.get("en", "")), x.params)
            return self._fill(self.label(x.key), x.params)
        if isinstance(x, Sym):
            return f"${x.tex}$" if self.flavour == "tex" else x.text
        if isinstance(x, (float, int, Decimal)) and not isinstance(x, bool):
            return f"${self.num(x)}$" if self.flavour == "tex" else self.num(x)
        if x is None:
            return ""
        return tex_escape(x) if self.flavour == "tex" else str(x)

    def _fill(self, template: str, params: dict) -> str:
        parts = template.split("$")
        if len(parts) % 2 == 0:
            raise ValueError(f"unbalanced $ in label {template!r}")
        out = []
        for n, part in enumerate(parts):
            math = n % 2 == 1
            values: list[str] = []

            def keep(m, math=math, values=values):
                name = m.group(1)
                if name not in params:
                    return m.group(0)
                values.append(self._param(params[name], math))
                return f"\x00{len(values) - 1}\x00"

            part = _PLACEHOLDER.sub(keep, part)
            if math:
                part = part if self.flavour == "tex" else tex_to_text(part)
            elif self.flavour == "tex":
                part = tex_escape(part)
            def put_back(m: re.Match, values: list = values) -> str:
                return values[int(m.group(1))]
            part = re.sub("\x00(\\d+)\x00", put_back, part)
            out.append(f"${part}$" if math and self.flavour == "tex" else part)
        return "".join(out)

    def _param(self, v, math: bool) -> str:
        tex = self.flavour == "tex"
        if isinstance(v, (list, tuple)):
            return self.label("list_sep").join(self._param(x, math) for x in v)
        if isinstance(v, T):
            inner = self.text(v)
            return rf"\text{{{inner}}}" if (tex and math) else inner
        if isinstance(v, Sym):
            if not tex:
                return v.text
            return v.tex if math else f"${v.tex}$"
        if isinstance(v, VecParam):
            s = self.vec(v.values, exact=v.exact)
            return s if (math or not tex) else f"${s}$"
        if isinstance(v, bool):
            return str(v)
        if isinstance(v, (int, float, Decimal)):
            s = self.num(v, alone=True)
            return s if (math or not tex) else f"${s}$"
        s = str(v)
        if not tex:
            return s
        return rf"\text{{{tex_escape(s)}}}" if math else tex_escape(s)

    # expansion lines (text and TeX alike) -------------------------------------------------------
    def factor(self, x) -> str:
        """A number as a factor: negatives in parentheses."""
        s = self.num(x, in_group=True)
        return f"({s})" if s.startswith("-") else s

    @property
    def times(self) -> str:
        return r"\times " if self.flavour == "tex" else "×"

    def dot_terms(self, pairs) -> str:
        return " + ".join(f"{self.factor(a)}{self.times}{self.factor(b)}" for a, b in pairs)


def _is_zero(x) -> bool:
    try:
        return x == 0 and not isinstance(x, bool)
    except TypeError:
        return False


def wrap_terms(head: str, terms: list, tail: str, width: int = 96) -> list:
    """``head t1 + t2 + … tail`` as lines no wider than ``width`` (continuations indented)."""
    lines, cur = [], head
    indent = " " * min(len(head), 12)
    for n, term in enumerate(terms):
        piece = term if n == 0 else " + " + term
        if len(cur) + len(piece) > width and cur.strip() and n > 0:
            lines.append(cur.rstrip())
            cur = indent + "+ " + term
        else:
            cur += piece
    cur += tail
    lines.append(cur)
    return lines


def text_blocks(ctx: "Ctx", blocks, *, para: Callable, formula: Callable, matrix: Callable,
                table: Callable, expansion: Callable, group: Callable) -> list:
    """Lines of a text document (Markdown, LaTeX) from a step's blocks, in order.

    A Para, Formula, Matrix or Table becomes the lines its function returns, then a blank line;
    consecutive expansion blocks (row·column products, sums, …) are gathered, as the lines
    ``expansion(ctx, block)`` returns, into one group that ``group(lines)`` wraps (a code block,
    an ``align*``); under it a note names the lines whose shown numbers do not give their shown
    result exactly (:func:`.rounding.relations`: each number is rounded on its own).
    """
    from ..blocks import Formula, Matrix, Para, Table

    kinds = ((Para, para), (Formula, formula), (Matrix, matrix), (Table, table))
    out: list = []
    pending: list = []
    off: list = []  # the lines whose shown numbers do not give their shown result exactly

    def flush():
        if pending:
            out.extend(group(list(pending)) + [""])
            pending.clear()
        if off:  # every number is the exact one rounded on its own: say where the shown ones do not add up
            out.extend(para(ctx, Para(T("rounded_lines", {"lines": list(off)}), style="note")) + [""])
            off.clear()

    for b in blocks:
        render = next((fn for cls, fn in kinds if isinstance(b, cls)), None)
        if render is None:
            pending.extend(expansion(ctx, b))
            if "≈" in relations(ctx, b):
                off.append(b.lhs)
            continue
        flush()
        out += render(ctx, b) + [""]
    flush()
    return out
