"""A layer as a recipe: the ordered, named steps of one Transformer layer, declared as data.

Every single-stack family builds its layers from one of these recipes; the torch layer
(:class:`attnscope.modules.layer.RecipeLayer`), the float64 forward (:mod:`attnscope.reference_model`)
and the worked path (``explain --path``) all walk the same steps, and the trace names of a layer
are the names of its steps (plus the hook points inside its ``attention`` and ``mlp`` blocks).

A recipe is text, one step a line, each ``name = expression``::

    attn_in    = ln1(x)              a norm: the layer's norm module ``ln1`` applied to x
    attn       = attention(attn_in)  the attention block (module ``attn``; its output is ``attn.out``)
    attn_resid = x + attn            a residual sum (dropout, when training, on the right operand)
    ffn        = mlp(ffn_in)         the feed-forward block (module ``ffn``; output ``ffn.out``)
    out        = ffn_resid           the same value under a second name

``x`` is the layer's input. Which norm a name like ``ln1`` is (LayerNorm, RMSNorm, Gemma's
``1 + w`` RMSNorm) is the stack's choice, not the recipe's: the recipe says *where* norms sit.

The registered recipes (``config.norm`` names one):

* ``post`` — BERT, the original Transformer: the norm after each residual sum.
* ``pre`` — GPT-2, Llama, Qwen, Mistral, BLOOM: the norm before each block.
* ``sandwich`` — Gemma 2/3: ``pre``, plus a norm on each block's output before its residual sum
  (derived from ``pre`` by :func:`with_post_norms`).
* ``post_block`` — OLMo 2: only the norm on each block's output, none before the blocks (derived too).

A new layer variant is one :func:`register_layer_recipe` call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .errors import ConfigError
from .i18n import error

#: What a step does: ``same`` (a second name for a value), ``norm`` (one of the layer's norm
#: modules), ``attention`` and ``mlp`` (the two blocks), ``add`` (a residual sum), and in an
#: encoder–decoder's decoder ``cross_attention`` (queries from its input, keys and values from the
#: encoder's output).
OPS = ("same", "norm", "attention", "cross_attention", "mlp", "add")

#: The ops whose step is a block (a module of its own, with its hook points inside).
BLOCK_OPS = ("attention", "cross_attention", "mlp")

#: The layer's input, the one name a recipe may read before defining it.
INPUT = "x"

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_CALL = re.compile(rf"^({_NAME})\(\s*({_NAME})\s*\)$")
_ADD = re.compile(rf"^({_NAME})\s*\+\s*({_NAME})$")
_SAME = re.compile(rf"^({_NAME})$")


@dataclass(frozen=True)
class Step:
    """One step: ``name = op(args)``. ``module`` is the norm module a ``norm`` step applies
    (``ln1``); for ``attention`` and ``mlp`` the block's module is ``name`` itself."""

    name: str
    op: str
    args: tuple[str, ...]
    module: Optional[str] = None

    def __str__(self) -> str:
        if self.op == "add":
            return f"{self.name} = {self.args[0]} + {self.args[1]}"
        if self.op == "same":
            return f"{self.name} = {self.args[0]}"
        return f"{self.name} = {self.module or self.op}({self.args[0]})"


@dataclass(frozen=True)
class LayerRecipe:
    """The ordered steps of one layer (see the module docstring). ``text`` is what was registered."""

    name: str
    steps: tuple[Step, ...]
    text: str

    @property
    def norms(self) -> tuple[str, ...]:
        """The norm modules the layer needs, in the order the steps use them."""
        return tuple(s.module for s in self.steps if s.op == "norm" and s.module is not None)

    @property
    def blocks(self) -> tuple[str, ...]:
        """The names of the blocks (attention, cross-attention, MLP: their modules), in order."""
        return tuple(s.name for s in self.steps if s.op in BLOCK_OPS)

    @property
    def points(self) -> tuple[str, ...]:
        """The layer's own hook point names (every step that is not a block), in forward order."""
        return tuple(s.name for s in self.steps if s.op not in BLOCK_OPS)

    def step(self, name: str) -> Step:
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def __str__(self) -> str:
        return "\n".join(str(s) for s in self.steps)


def parse_recipe(name: str, text: str) -> LayerRecipe:
    """The :class:`LayerRecipe` that ``text`` declares; ConfigError naming the line for a step that
    reads a name not yet defined, repeats a name, or is not one of the forms above. A recipe has
    exactly one ``attention`` and one ``mlp`` step and ends in ``out``."""
    steps: list[Step] = []
    defined = {INPUT}
    for n, raw in enumerate(text.strip().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        target, sep, expr = (part.strip() for part in line.partition("="))
        if not sep or not re.fullmatch(_NAME, target):
            raise error(ConfigError, "errors.core_recipe_syntax", name=repr(name), n=n, line=repr(raw.strip()))
        if target in defined:
            raise error(ConfigError, "errors.core_recipe_twice", name=repr(name), n=n, target=repr(target))
        if m := _CALL.match(expr):
            fn, arg = m.groups()
            op = fn if fn in BLOCK_OPS else "norm"
            step = Step(target, op, (arg,), None if op != "norm" else fn)
        elif m := _ADD.match(expr):
            step = Step(target, "add", m.groups())
        elif m := _SAME.match(expr):
            step = Step(target, "same", m.groups())
        else:
            raise error(ConfigError, "errors.core_recipe_expr", name=repr(name), n=n, expr=repr(expr))
        for arg in step.args:
            if arg not in defined:
                raise error(ConfigError, "errors.core_recipe_before", name=repr(name), n=n, arg=repr(arg))
        defined.add(target)
        steps.append(step)
    ops = [s.op for s in steps]
    if ops.count("attention") != 1 or ops.count("mlp") != 1:
        raise error(ConfigError, "errors.core_recipe_steps", name=repr(name))
    if not steps or steps[-1].name != "out":
        raise error(ConfigError, "errors.core_recipe_out", name=repr(name))
    return LayerRecipe(name, tuple(steps), text)


LAYER_RECIPES: dict[str, LayerRecipe] = {}


def register_layer_recipe(name: str, text: str) -> LayerRecipe:
    """Parse ``text`` and register it under ``name`` (``config.norm`` selects it). Returns the recipe."""
    recipe = parse_recipe(name, text)
    LAYER_RECIPES[name] = recipe
    return recipe


def get_layer_recipe(name: str) -> LayerRecipe:
    try:
        return LAYER_RECIPES[name]
    except KeyError:
        raise error(ConfigError, "errors.core_recipe_unknown", name=repr(name), names=", ".join(LAYER_RECIPES)) from None


def layer_recipe_names() -> tuple[str, ...]:
    return tuple(LAYER_RECIPES)


register_layer_recipe("post", """
    attn_in    = x
    attn       = attention(attn_in)
    attn_resid = x + attn
    ffn_in     = ln1(attn_resid)
    ffn        = mlp(ffn_in)
    ffn_resid  = ffn_in + ffn
    out        = ln2(ffn_resid)
""")

register_layer_recipe("pre", """
    attn_in    = ln1(x)
    attn       = attention(attn_in)
    attn_resid = x + attn
    ffn_in     = ln2(attn_resid)
    ffn        = mlp(ffn_in)
    ffn_resid  = attn_resid + ffn
    out        = ffn_resid
""")

def recipe_text(steps) -> str:
    """``steps`` as recipe text, one a line with the ``=`` signs aligned: what :func:`parse_recipe`
    reads back, and how a derived recipe's text is shown (``docs/guide/architecture.md``)."""
    width = max(len(s.name) for s in steps)
    return "".join(f"{s.name:<{width}} = {str(s).partition(' = ')[2]}\n" for s in steps)


def with_post_norms(recipe: LayerRecipe, *, pre_norms: bool = True) -> str:
    """The text of ``recipe`` with a norm on each block's output before its residual sum (block
    ``attn``: ``attn_post_norm = ln_attn_post(attn)``, which the sum then reads instead of
    ``attn``) and, without ``pre_norms``, its norms before the blocks dropped (``attn_in = x``)."""
    steps: list[Step] = []
    for s in recipe.steps:
        if s.op == "norm" and not pre_norms:
            s = Step(s.name, "same", s.args)
        if s.op == "add" and s.args[1] in recipe.blocks:
            post = f"{s.args[1]}_post_norm"
            steps.append(Step(post, "norm", (s.args[1],), f"ln_{s.args[1]}_post"))
            s = Step(s.name, "add", (s.args[0], post))
        steps.append(s)
    return recipe_text(steps)


# Gemma 2/3: "pre" and a norm on each block's output; OLMo 2: only the norms on the blocks' outputs.
register_layer_recipe("sandwich", with_post_norms(LAYER_RECIPES["pre"]))
register_layer_recipe("post_block", with_post_norms(LAYER_RECIPES["pre"], pre_norms=False))


def with_cross_attention(recipe: LayerRecipe) -> str:
    """The text of ``recipe`` (``pre`` or ``post``: a residual sum ends each block) as an encoder–decoder's
    decoder layer: its attention steps named ``self_…``, then a cross-attention block written as
    ``recipe`` writes its MLP block (the same norm before it and residual sum after it: where T5 and
    BART place it), then the MLP block; the norm modules renumbered ``ln1``, ``ln2``, … in order."""
    first, second = [i + 1 for i, s in enumerate(recipe.steps) if s.op == "add"][:2]
    head, block, rest = recipe.steps[:first], recipe.steps[first:second], recipe.steps[second:]
    names = {s.name: f"self_{s.name}" for s in head}
    names.update({s.name: "cross_attn" + s.name.removeprefix(recipe.blocks[-1]) for s in block})

    def renamed(s: Step, names: dict, op: Optional[str] = None) -> Step:
        return Step(names.get(s.name, s.name), op or s.op, tuple(names.get(a, a) for a in s.args), s.module)

    steps = [renamed(s, names) for s in head] + [renamed(s, names, "cross_attention" if s.op == "mlp" else None)
                                                 for s in block]
    steps += [renamed(s, {head[-1].name: names[block[-1].name]}) for s in block + rest]
    n = iter(range(1, len(steps) + 1))
    return recipe_text([Step(s.name, s.op, s.args, f"ln{next(n)}") if s.op == "norm" else s for s in steps])


#: The decoder layer of an encoder–decoder (T5: "pre", BART: "post", by its ``config.norm``): the
#: stack's recipe with cross-attention over the encoder's output, and its residual, after
#: self-attention (:func:`with_cross_attention`). Not in :data:`LAYER_RECIPES`: a single stack has
#: nothing to cross-attend to.
CROSS_RECIPES: dict[str, LayerRecipe] = {
    norm: parse_recipe(f"{norm}_cross", with_cross_attention(LAYER_RECIPES[norm])) for norm in ("pre", "post")}
