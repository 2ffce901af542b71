"""Record (and replace) every intermediate of a forward pass under stable names.

    >>> import attnscope
    >>> model = attnscope.load()                                   # all-MiniLM-L6-v2
    >>> tr = model.trace("The cat sat on the mat.", names="layers.*.attn.weights")
    >>> tr["layers.0.attn.weights"].shape                          # (B, H, L, L)

Names (public API, pinned by a test: :data:`TRACE_NAMES`; ``{i}`` = layer index), in forward order:

=================================  ====================  ========================================
name                               shape                 what
=================================  ====================  ========================================
``embed.tokens``                   (B, L, d)             token embedding rows
``embed.segments``                 (B, L, d)             segment (token type) embeddings; not GPT-2
``embed.positions``                (B, L, d)             position embeddings (one row per position)
``embed.out``                      (B, L, d)             sum (+ LayerNorm in BERT/RoBERTa); width E in ALBERT/ELECTRA
``embed.projected``                (B, L, d)             E → d projection (ALBERT, ELECTRA, DeBERTa when E ≠ d)
``layers.{i}.attn_in``             (B, L, d)             attention input (after ln1 in GPT-2)
``layers.{i}.attn.q|k|v``          (B, H, L, d_head)     per-head projections
``layers.{i}.attn.pos_q|pos_k``    (1, H, 2k, d_head)    DeBERTa: relative embeddings projected (p2c, c2p)
``layers.{i}.attn.scores_c2c``     (B, H, L, L)          DeBERTa: content→content q·kᵀ (= ``scores``)
``layers.{i}.attn.scores_c2p``     (B, H, L, L)          DeBERTa: content→position q_i·pos_k[δ(i,j)]
``layers.{i}.attn.scores_p2c``     (B, H, L, L)          DeBERTa: position→content k_j·pos_q[−δ(j,i)]
``layers.{i}.attn.bias``           (B, H, L, L)          score term added to ``scaled``: DeBERTa (c2p+p2c)/√(3d)
``layers.{i}.attn.scores``         (B, H, L, L)          raw q·kᵀ
``layers.{i}.attn.scaled``         (B, H, L, L)          scores / √d_head (DeBERTa: / √(3·d_head))
``layers.{i}.attn.masked``         (B, H, L, L)          + bias + mask (-inf at padding / future keys)
``layers.{i}.attn.weights``        (B, H, L, L)          softmax; each row sums to 1
``layers.{i}.attn.z``              (B, H, L, d_head)     weights · v, per head
``layers.{i}.attn.merged``         (B, L, d)             heads concatenated
``layers.{i}.attn.out``            (B, L, d)             after W_O
``layers.{i}.attn_resid``          (B, L, d)             residual stream + attention
``layers.{i}.ffn_in``              (B, L, d)             FFN input (LayerNorm of the above)
``layers.{i}.ffn.hidden``          (B, L, d_ff)          act(W_1 x + b_1)
``layers.{i}.ffn.out``             (B, L, d)             W_2 hidden + b_2
``layers.{i}.ffn_resid``           (B, L, d)             + the residual
``layers.{i}.out``                 (B, L, d)             the layer's output (after ln2 in BERT)
``final_norm``                     (B, L, d)             after the final LayerNorm; GPT-2 only
=================================  ====================  ========================================

**One head.** A ``[h]`` suffix on a per-head name (``q k v scores scaled masked weights z``)
selects head h and drops the head axis: ``layers.3.attn.weights[5]`` is ``(B, L, L)``. Globs
work with it (``layers.*.attn.weights[0]``). Asking for one head's scores/weights computes them
for that head only, beside the fast fused kernel that still computes the layer's output, so it
costs about 1/H of a full weights trace of that layer; asking for the full ``layers.3.attn.weights``
switches only layer 3 to the explicit (step-by-step) path. Other layers are untouched.

**Hooks.** ``hooks={name_or_glob: fn}``; ``fn(tensor, name)`` returns a replacement of the same
shape, or None to leave it. A replacement flows into every later step and the output. A hook on
``name[h]`` receives head h's slice and its replacement is written back into that head only.
Hooks on scores/scaled/masked/weights put that layer on the explicit path. ``model.hooks(fwd,
bwd=…)`` attaches the same hooks for a ``with`` block (removed however it ends); backward hooks get
the gradient of a step. ``model.trace(…, grad=True)`` keeps the recorded tensors in the autograd
graph, so that gradients with respect to any of them can be taken.

**Reading.** ``trace.qkv(layer, head, text=…)``, ``trace.step(layer, "z", head)``,
``trace.weights(layer, heads, queries)`` (computed from q and k on demand when not recorded),
``trace.mask(layer)``, ``trace.text_tokens(i)``: see :mod:`attnscope.trace.read`.

**Padding.** A list of texts runs as one batch, right-padded to the longest. ``trace.tokens``
lists each text's tokens without padding and ``trace.lengths`` their counts; the recorded
tensors still have all L positions. Keys at padded positions are masked (``masked`` holds -inf
there, ``weights`` 0); rows and vectors *at* padded positions are computed but meaningless —
slice ``[:n]`` with ``n = trace.lengths[b]``.
"""

from .names import HEAD_STEPS, TRACE_NAMES, expand_names, key, resolve
from .record import FORMAT, FORMAT_VERSION, Trace, TraceKeyError
from .run import attached_hooks, run_trace

__all__ = ["TRACE_NAMES", "HEAD_STEPS", "Trace", "TraceKeyError", "run_trace", "attached_hooks",
           "expand_names", "resolve", "key", "FORMAT", "FORMAT_VERSION"]
