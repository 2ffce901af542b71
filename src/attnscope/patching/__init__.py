"""Activation patching: which heads and positions carry the difference between two prompts?

    >>> import attnscope
    >>> from attnscope.patching import patch
    >>> model = attnscope.load("smollm2-135m")
    >>> r = patch(model, "When Mary and John went to the store, John gave a drink to",
    ...           "When John and Mary went to the store, John gave a drink to", " Mary", " John")
    >>> r.values.shape, r.clean, r.corrupted         # (n_layers, n_heads), the two logit differences
    >>> r.normalized                                 # (patched − corrupted) / (clean − corrupted)
    >>> r.top(5), r.figure().savefig("patch.png"), r.save("patch.json")

The method (Vig et al. 2020, Meng et al. 2022; "activation patching" in TransformerLens): run a
*clean* prompt and a *corrupted* one that differs in a detail that changes the answer; then run the
corrupted prompt again with one activation copied from the clean run, and measure how much of the
clean answer comes back. By default the measure is the logit difference ``logit[answer] −
logit[wrong]`` at the last position, reported raw and normalised: 0 = the patch changes nothing,
1 = it restores the clean run's difference.

``what="heads"`` patches one head's output ``layers.{i}.attn.z[h]`` (its weighted values, before
W_O) at every position, for every layer × head; ``what="residual"`` patches the residual stream at
one position, for every layer × position, at a site of :data:`SITES` (``resid_pre`` — what enters
the layer — by default; ``attn_in``, ``resid_mid``, ``resid_post``).

Cost: one clean trace records every activation once, and the corrupted run what enters each
patched layer; the patches then run in batches of ``batch_size`` copies of the corrupted prompt,
copy k carrying patch k (rows of a batch do not interact, so this is a run per patch, up to the
float rounding of batched matrix products; bit for bit at ``batch_size=1``). A copy patched at
layer l starts there, from the corrupted run's stream (:mod:`attnscope.patching.prefix`):
``result.layer_evaluations`` counts the (copy, layer) pairs computed — 4,245 for SmolLM2's 270
heads, 52 % of rerunning every layer.

Beyond one head at a time (issue 28): :func:`path_patch` / :func:`path_sweep` patch a sender head
only along its path into chosen receivers' q, k or v or into the logits (:mod:`.path`);
:func:`ioi_prompts` makes a seeded IOI prompt set from the model's tokenizer (:mod:`.ioi`);
:func:`head_means` and :func:`ablated_metric` mean-ablate heads (:mod:`.ablation`);
:func:`circuit_metrics` gives Wang et al.'s faithfulness, completeness and minimality with bootstrap
intervals (:mod:`.circuit`); ``attnscope circuit run FILE`` replays an experiment file
(:mod:`.experiment_file`).
"""

from .ablation import ablated_metric, head_means
from .circuit import CircuitReport, bootstrap, circuit_metrics
from .core import BATCH, SITES, patch, patch_heads, patch_residual, site_name
from .ioi import PromptSet, ioi_prompts
from .pair import PatchPair, encode_pair, logit_diff, single_token
from .path import PathResult, path_patch, path_sweep
from .prompts import pair_group
from .result import PatchingResult
from .runs import PromptGroup

__all__ = ["patch", "patch_heads", "patch_residual", "PatchingResult", "SITES", "BATCH", "site_name",
           "PatchPair", "encode_pair", "logit_diff", "single_token",
           "path_patch", "path_sweep", "PathResult", "PromptGroup", "pair_group", "ioi_prompts", "PromptSet",
           "head_means", "ablated_metric", "circuit_metrics", "CircuitReport", "bootstrap"]
