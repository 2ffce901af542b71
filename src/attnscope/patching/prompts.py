"""Prompt sets as groups of equal-length prompts: from a clean/corrupted pair, or a generated set.

Path patching, mean ablation and the circuit metrics take ``prompts``: a
:class:`~attnscope.patching.ioi.PromptSet` (its ``groups``), a list of
:class:`~attnscope.patching.runs.PromptGroup`, one group, or :func:`pair_group` of two texts.
"""

from __future__ import annotations

from typing import Union

import torch

from ..errors import InputError
from ..i18n import Msg, error
from .pair import encode_pair, single_token
from .runs import PromptGroup


def pair_group(model, clean: str, corrupted: str, answer: Union[str, int], wrong: Union[str, int]) -> PromptGroup:
    """One group of one prompt: ``clean`` and ``corrupted`` (the same number of tokens) with the
    metric ``logit[answer] − logit[wrong]`` (texts of one token each, or ids)."""
    pair = encode_pair(model, clean, corrupted)
    a, _ = single_token(model, answer, Msg("errors.patch_word_answer"))
    w, _ = single_token(model, wrong, Msg("errors.patch_word_wrong"))
    return PromptGroup(pair.clean_ids, pair.corrupted_ids, torch.tensor([a]), torch.tensor([w]), "pair")


def groups_of(prompts) -> list[PromptGroup]:
    """The groups of ``prompts`` (a prompt set, a list of groups or one group), checked: each group's
    clean and corrupted ids are ``(n, L)`` alike and its tokens ``(n,)``."""
    if isinstance(prompts, PromptGroup):
        groups = [prompts]
    elif hasattr(prompts, "groups"):
        groups = list(prompts.groups)
    else:
        try:
            groups = list(prompts)
        except TypeError:
            raise error(InputError, "errors.path_prompts_type", type=type(prompts).__name__) from None
    if not groups or not all(isinstance(g, PromptGroup) for g in groups):
        raise error(InputError, "errors.path_prompts_type", type=type(prompts).__name__)
    for g in groups:
        n = g.clean.shape[0]
        if g.clean.dim() != 2 or g.clean.shape != g.corrupted.shape or g.answer.shape != (n,) or g.wrong.shape != (n,):
            raise error(InputError, "errors.path_group_shapes", name=repr(g.name), clean=tuple(g.clean.shape),
                        corrupted=tuple(g.corrupted.shape), answer=tuple(g.answer.shape), wrong=tuple(g.wrong.shape))
    return groups


def as_prompts(model, prompts, corrupted=None, answer=None, wrong=None):
    """``prompts`` itself (a prompt set or groups), or, when it is a text, :func:`pair_group` of it and
    ``corrupted`` with the metric's ``answer`` and ``wrong`` tokens."""
    if isinstance(prompts, str):
        if corrupted is None or answer is None or wrong is None:
            raise error(InputError, "errors.path_pair_needs")
        return pair_group(model, prompts, corrupted, answer, wrong)
    if corrupted is not None or answer is not None or wrong is not None:
        raise error(InputError, "errors.path_pair_extra")
    return prompts
