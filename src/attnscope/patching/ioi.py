"""An indirect-object-identification (IOI) prompt set, seeded, from the model's own tokenizer.

Wang et al. (2022) ask a model to complete "When Mary and John went to the store, John gave a drink
to" with " Mary", the *indirect object* (IO), not " John", the *subject* (S) named twice. Their
templates (:data:`TEMPLATES`, written BABA: S first; the ABBA version swaps the first two names)
are filled with names, places and objects. The metric is the logit difference ``logit[IO] −
logit[S]`` at the last position.

Every name must be ONE token with its leading space (``" Mary"``) in this model's tokenizer — else
the prompts of one template would differ in length and the metric would read a piece of a name.
The default lists are filtered to such words; a list given by the caller is refused if a name is
not one token. The *corrupted* prompt of each clean one is the ABC distribution: the same template,
place and object with three other names, so that nothing in it points at IO or S.

Prompts of one template have the same number of tokens and form one group
(:class:`~attnscope.patching.runs.PromptGroup`), which runs as one batch.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

from ..errors import InputError
from ..i18n import error
from .runs import PromptGroup

#: Wang et al.'s BABA templates ([B] = S, [A] = IO); the prompt ends before the final " [A]".
TEMPLATES: tuple[str, ...] = (
    "Then, [B] and [A] went to the [PLACE]. [B] gave a [OBJECT] to [A]",
    "Then, [B] and [A] had a lot of fun at the [PLACE]. [B] gave a [OBJECT] to [A]",
    "Then, [B] and [A] were working at the [PLACE]. [B] decided to give a [OBJECT] to [A]",
    "Then, [B] and [A] were thinking about going to the [PLACE]. [B] wanted to give a [OBJECT] to [A]",
    "Then, [B] and [A] had a long argument, and afterwards [B] said to [A]",
    "After [B] and [A] went to the [PLACE], [B] gave a [OBJECT] to [A]",
    "When [B] and [A] got a [OBJECT] at the [PLACE], [B] decided to give it to [A]",
    "When [B] and [A] got a [OBJECT] at the [PLACE], [B] decided to give the [OBJECT] to [A]",
    "While [B] and [A] were working at the [PLACE], [B] gave a [OBJECT] to [A]",
    "While [B] and [A] were commuting to the [PLACE], [B] gave a [OBJECT] to [A]",
    "After the lunch, [B] and [A] went to the [PLACE]. [B] gave a [OBJECT] to [A]",
    "Afterwards, [B] and [A] went to the [PLACE]. [B] gave a [OBJECT] to [A]",
    "Then, [B] and [A] had a long argument. Afterwards [B] said to [A]",
    "The [PLACE] [B] and [A] went to had a [OBJECT]. [B] gave it to [A]",
    "Friends [B] and [A] found a [OBJECT] at the [PLACE]. [B] gave it to [A]",
)

#: First names from Wang et al.'s list; the default keeps those that are one token.
NAMES: tuple[str, ...] = (
    "Aaron", "Adam", "Alan", "Alex", "Alice", "Amy", "Anderson", "Andre", "Andrew", "Andy", "Anna", "Anthony",
    "Arthur", "Austin", "Blake", "Brandon", "Brian", "Carter", "Charles", "Charlie", "Christian", "Christopher",
    "Clark", "Cole", "Collins", "Connor", "Crystal", "Daniel", "David", "Dean", "Edward", "Elizabeth", "Emily",
    "Eric", "Eva", "Ford", "Frank", "George", "Georgia", "Graham", "Grant", "Henry", "Ian", "Jack", "Jacob", "Jake",
    "James", "Jamie", "Jane", "Jason", "Jay", "Jennifer", "Jeremy", "Jessica", "John", "Jonathan", "Jordan",
    "Joseph", "Joshua", "Justin", "Kate", "Kelly", "Kevin", "Kyle", "Laura", "Leon", "Lewis", "Lisa", "Louis",
    "Luke", "Madison", "Marco", "Marcus", "Maria", "Mark", "Martin", "Mary", "Matthew", "Max", "Michael",
    "Michelle", "Morgan", "Patrick", "Paul", "Peter", "Prince", "Rachel", "Richard", "River", "Robert", "Roman",
    "Rose", "Ruby", "Russell", "Ryan", "Sarah", "Scott", "Sean", "Simon", "Stephen", "Steven", "Sullivan",
    "Taylor", "Thomas", "Tyler", "Victoria", "Warren", "William",
)
PLACES: tuple[str, ...] = ("store", "garden", "restaurant", "school", "hospital", "office", "house", "station")
OBJECTS: tuple[str, ...] = ("ring", "kiss", "bone", "basketball", "computer", "necklace", "drink", "snack")


@dataclass
class PromptSet:
    """Generated prompts: ``prompts`` (one dict each: clean, corrupted, io, s, template, order),
    ``groups`` (one per template, in order; rows in the order of ``prompts`` within each), and
    what made them (``names``, ``seed``)."""

    prompts: list
    groups: list
    names: list
    seed: int
    order: list = field(default_factory=list)  # prompt index of each row, groups concatenated

    def __len__(self) -> int:
        return len(self.prompts)


def one_token_words(model, words: Sequence[str], what: str, strict: bool) -> list[str]:
    """The words of ``words`` that are one token with a leading space; with ``strict`` InputError
    naming those that are not."""
    tok = model.tokenizer
    if tok is None:
        raise error(InputError, "errors.ioi_no_tokenizer", name=repr(getattr(model, "name", "?")))
    good: list[str] = []
    bad: list[str] = []
    for w in words:
        if not isinstance(w, str) or not w.strip() or w != w.strip():
            raise error(InputError, "errors.ioi_word", what=what, value=repr(w))
        ids = tok.backend.encode(" " + w, add_special_tokens=False).ids
        (good if len(ids) == 1 else bad).append(w)
    if bad and strict:
        raise error(InputError, "errors.ioi_not_one_token", what=what, words=", ".join(repr(" " + w) for w in bad[:8]),
                    n=len(bad))
    return good


def ioi_prompts(model, n: int = 120, *, seed: int = 0, names: Optional[Sequence[str]] = None,
                places: Optional[Sequence[str]] = None, objects: Optional[Sequence[str]] = None,
                templates: Sequence[str] = TEMPLATES) -> PromptSet:
    """``n`` IOI prompts for ``model``, template ``i % len(templates)``, ABBA and BABA in turn by
    rounds of the templates, names/place/object drawn by ``random.Random(seed)``. Names, places and
    objects given are refused unless each is one token with its leading space; the defaults
    (:data:`NAMES`, :data:`PLACES`, :data:`OBJECTS`) are filtered to those."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise error(InputError, "errors.ioi_count", value=repr(n))
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise error(InputError, "errors.ioi_seed", value=repr(seed))
    pool = one_token_words(model, NAMES if names is None else list(names), "name", names is not None)
    pool = sorted(set(pool), key=pool.index)
    if len(pool) < 5:  # IO, S and three other names for the ABC prompt
        raise error(InputError, "errors.ioi_few_names", n=len(pool))
    where = one_token_words(model, PLACES if places is None else list(places), "place", places is not None)
    what = one_token_words(model, OBJECTS if objects is None else list(objects), "object", objects is not None)
    if not where or not what:
        raise error(InputError, "errors.ioi_no_fillers")
    for tpl in templates:
        if not isinstance(tpl, str) or not tpl.endswith(" [A]") or tpl.count("[A]") != 2 or tpl.count("[B]") != 2:
            raise error(InputError, "errors.ioi_template", value=repr(tpl))
    rng = random.Random(seed)
    prompts = []
    for i in range(n):
        t = i % len(templates)
        order = "ABBA" if (i // len(templates)) % 2 == 0 else "BABA"
        io, s = rng.sample(pool, 2)
        c, d, e = rng.sample([x for x in pool if x not in (io, s)], 3)
        place, obj = rng.choice(where), rng.choice(what)
        body = str(templates[t])[: -len(" [A]")]
        prompts.append({"clean": _fill(body, io, s, s, place, obj, order), "corrupted": _fill(body, c, d, e, place, obj, order),
                        "io": io, "s": s, "template": t, "order": order})
    return _grouped(model, prompts, pool, seed)


def _fill(body: str, a: str, b: str, s2: str, place: str, obj: str, order: str) -> str:
    """The template with [A] = a, the first [B] = b and the second [B] = s2 (ABBA: a and b swapped
    in the first sentence's pair)."""
    first, second = (a, b) if order == "ABBA" else (b, a)
    i, j = body.index("[B]"), body.index("[A]")
    pair = (body[:min(i, j)] + "\0" + body[min(i, j) + 3: max(i, j)] + "\1" + body[max(i, j) + 3:])
    pair = pair.replace("\0", first).replace("\1", second)
    return pair.replace("[B]", s2).replace("[PLACE]", place).replace("[OBJECT]", obj)


def _grouped(model, prompts: list, names: list, seed: int) -> PromptSet:
    tok = model.tokenizer
    by: dict = {}
    for k, p in enumerate(prompts):
        a, b = model.encode(p["clean"]).input_ids[0], model.encode(p["corrupted"]).input_ids[0]
        if a.shape != b.shape:
            raise error(InputError, "errors.ioi_lengths", clean=repr(p["clean"]), corrupted=repr(p["corrupted"]))
        io = tok.backend.encode(" " + p["io"], add_special_tokens=False).ids[0]
        s = tok.backend.encode(" " + p["s"], add_special_tokens=False).ids[0]
        by.setdefault((p["template"], int(a.shape[0])), []).append((k, a, b, io, s))
    groups, order = [], []
    for (t, _length), rows in sorted(by.items()):
        groups.append(PromptGroup(torch.stack([r[1] for r in rows]), torch.stack([r[2] for r in rows]),
                                  torch.tensor([r[3] for r in rows]), torch.tensor([r[4] for r in rows]), f"template {t}"))
        order += [r[0] for r in rows]
    return PromptSet(prompts=prompts, groups=groups, names=list(names), seed=seed, order=order)
