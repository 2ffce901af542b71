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
``layers.{i}.attn_in``             (B, L, d)             attention input (after ln1 in GPT-2; RMSNorm in decoders)
``layers.{i}.attn.q_proj``         (B, H, L, d_head)     decoders: x W_Q per head, before anything else
``layers.{i}.attn.k_proj``         (B, H_kv, L, d_head)  decoders: x W_K per key/value head
``layers.{i}.attn.q_normed``       (B, H, L, d_head)     QK-norm of q_proj: Gemma 3, Qwen3 (RMSNorm over d_head),
                                                         OLMo 2 (over all heads' features, then split)
``layers.{i}.attn.k_normed``       (B, H_kv, L, d_head)  QK-norm of k_proj (as q_normed)
``layers.{i}.attn.q|k|v``          (B, H, L, d_head)     per-head projections as the dot product takes them;
                                                         decoders: q, k after the rotation, k and v with
                                                         H_kv = n_kv_heads heads
``layers.{i}.attn.pos_q|pos_k``    (1, H, 2k, d_head)    DeBERTa: relative embeddings projected (p2c, c2p)
``layers.{i}.attn.scores_c2c``     (B, H, L, L)          DeBERTa: content→content q·kᵀ (= ``scores``)
``layers.{i}.attn.scores_c2p``     (B, H, L, L)          DeBERTa: content→position q_i·pos_k[δ(i,j)]
``layers.{i}.attn.scores_p2c``     (B, H, L, L)          DeBERTa: position→content k_j·pos_q[−δ(j,i)]
``layers.{i}.attn.bias``           (B, H, L, L)          score term added to ``scaled``: DeBERTa (c2p+p2c)/√(3d),
                                                         ALiBi (BLOOM) slope_h · key position
``layers.{i}.attn.mask``           (B|1, 1, L, S) bool   decoders: True = may attend (causal ∧ window ∧ real key;
                                                         a padded query also sees itself)
``layers.{i}.attn.scores``         (B, H, L, L)          raw q·kᵀ (per query head)
``layers.{i}.attn.scaled``         (B, H, L, L)          scores / √d_head (DeBERTa: / √(3·d_head))
``layers.{i}.attn.masked``         (B, H, L, L)          + bias + mask (-inf at padding / future keys)
``layers.{i}.attn.weights``        (B, H, L, L)          softmax; each row sums to 1
``layers.{i}.attn.z``              (B, H, L, d_head)     weights · v, per head
``layers.{i}.attn.merged``         (B, L, d)             heads concatenated
``layers.{i}.attn.out``            (B, L, d)             after W_O
``layers.{i}.attn_post_norm``      (B, L, d)             Gemma 3: RMSNorm of attn.out (what attention adds)
``layers.{i}.attn_resid``          (B, L, d)             residual stream + attention
``layers.{i}.ffn_in``              (B, L, d)             FFN input (LayerNorm / RMSNorm of the above)
``layers.{i}.ffn.gate``            (B, L, d_ff)          decoders: act(W_gate x), SwiGLU / GeGLU
``layers.{i}.ffn.hidden``          (B, L, d_ff)          act(W_1 x + b_1); decoders: gate ⊙ W_up x
``layers.{i}.ffn.out``             (B, L, d)             W_2 hidden + b_2
``layers.{i}.ffn_post_norm``       (B, L, d)             Gemma 3: RMSNorm of ffn.out (what the MLP adds)
``layers.{i}.ffn_resid``           (B, L, d)             + the residual
``layers.{i}.out``                 (B, L, d)             the layer's output (after ln2 in BERT)
``final_norm``                     (B, L, d)             after the final norm; GPT-2 and the decoders
=================================  ====================  ========================================

A model's names (``model.hook_names``) are read from its module tree: the path of each of its
hook points, in ``named_modules()`` order, which is the forward order (a layer registers the hook
point of each step of its recipe in turn, :mod:`attnscope.recipe`). So a model lists only the steps
its architecture has: the decoder steps (``q_proj`` … ``mask``, ``ffn.gate``) only in Llama, Qwen2,
Mistral and Gemma 3, QK-norm and the post-norms only in Gemma 3, no ``embed.positions`` with rotary
positions, no ``final_norm`` without a final norm. A config alone gives its names with
:func:`~attnscope.trace.names.expand_names` (from an empty model of that config on the meta device).
The tables above and below are the public vocabulary: every hook point is one of its names (a test
holds every family to it).

**Encoder–decoder models** (T5, BART: ``model.trace(source, target)``, names
:data:`~attnscope.trace.names.SEQ2SEQ_NAMES`, a :class:`~attnscope.trace.seq2seq.Seq2SeqTrace`;
S = source length, T = decoder length, start token included):

=============================================  ====================  ==================================
name                                           shape                 what
=============================================  ====================  ==================================
``encoder.embed.tokens|positions|out``         (B, S, d)             as above (positions: BART only)
``encoder.layers.{i}.attn.*``                  (B, H, S, S), …       encoder self-attention, every step
``encoder.layers.{i}.attn.bias``               (B, H, S, S)          T5's relative position bias (one
                                                                     tensor in every layer)
``encoder.layers.{i}.{attn_in … out}``         (B, S, d)             the layer's stream, as above
``encoder.final_norm``                         (B, S, d)             T5's final RMS norm
``decoder.embed.*``                            (B, T, d)             the target's embeddings
``decoder.layers.{i}.self_attn_in|_resid``     (B, T, d)             around causal self-attention
``decoder.layers.{i}.self_attn.*``             (B, H, T, T), …       causal self-attention (T5: + bias)
``decoder.layers.{i}.cross_attn_in|_resid``    (B, T, d)             around cross-attention
``decoder.layers.{i}.cross_attn.q``            (B, H, T, d_head)     queries from the target
``decoder.layers.{i}.cross_attn.k|v``          (B, H, S, d_head)     keys and values from the source
``decoder.layers.{i}.cross_attn.weights``      (B, H, T, S)          target rows over source columns
``decoder.layers.{i}.{ffn_in … out}``          (B, T, d)             FFN (``ffn.gate``: T5 v1.1)
``decoder.final_norm``                         (B, T, d)             T5's final RMS norm
=============================================  ====================  ==================================

**One head.** A ``[h]`` suffix on a per-head name (``q k v scores scaled masked weights z``, and
``q_proj k_proj q_normed k_normed``) selects head h and drops the head axis:
``layers.3.attn.weights[5]`` is ``(B, L, L)``. h is always a query head: on a k/v name it is the
key/value head that query head h reads, ``h // (n_heads / n_kv_heads)`` (SmolLM2's
``layers.0.attn.k[5]``, 9 query heads sharing 3, is k/v head 1). Globs
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

from .memory import estimate_trace_memory
from .names import HEAD_STEPS, SEQ2SEQ_NAMES, TRACE_NAMES, expand_names, key, resolve, tree_names
from .record import FORMAT, FORMAT_VERSION, Trace, TraceKeyError
from .run import attached_hooks, run_trace

__all__ = ["TRACE_NAMES", "SEQ2SEQ_NAMES", "HEAD_STEPS", "Trace", "TraceKeyError", "run_trace", "attached_hooks",
           "expand_names", "tree_names", "resolve", "key", "FORMAT", "FORMAT_VERSION", "estimate_trace_memory"]
