"""Dataclasses that describe every Transformer stack attnscope builds.

:class:`TransformerConfig`: BERT (post-LN, learned positions, segment embeddings, LayerNorm on the
embeddings), GPT-2 (pre-LN, causal, a final LayerNorm) and the small encoders of the experiments
are all points in this space. Grouped-query heads (``n_kv_heads``) and a head width that is not
``d_model / n_heads`` (``head_dim``) belong to attention itself and live here too.

:class:`DecoderConfig` adds what today's decoders (Llama, Qwen2, Mistral, Gemma 3) are made of:
RMSNorm, a gated MLP, rotary positions (with Llama 3 / linear / dynamic scaling), sliding windows
on some layers, QK-norm, Gemma's scaled embeddings and sandwich norms.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

from .errors import ConfigError
from .i18n import error
from .positions import get_position, mask_names, position_names
from .recipe import LayerRecipe, get_layer_recipe, layer_recipe_names
from .scorings import SCORINGS
from .wording import OR, joined

ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "silu")


@dataclass
class TransformerConfig:
    vocab_size: int = 30522
    d_model: int = 768
    n_heads: int = 12
    n_layers: int = 12
    d_ff: int = 3072
    max_positions: int = 512
    type_vocab_size: int = 2          # segment embeddings; 0 = none (GPT-2)
    position: str = "learned"         # "learned" | "sinusoidal" | "none"
    position_offset: int = 0          # RoBERTa numbers positions from padding_idx + 1
    norm: str = "post"                # the layer recipe: "post" (BERT) | "pre" (GPT-2) | "sandwich" | "post_block"
    embed_norm: bool = True           # LayerNorm after the embedding sum (BERT)
    final_norm: bool = False          # LayerNorm after the last layer (pre-LN stacks)
    activation: str = "gelu"          # "gelu" (erf) | "gelu_tanh" (GPT-2's gelu_new) | "relu"
    layer_norm_eps: float = 1e-12
    dropout: float = 0.1              # on embeddings, attention output and FFN output
    attn_dropout: float = 0.1         # on the attention weights
    bias: bool = True
    scoring: str = "scaled"
    causal: bool = False              # decoder-style stack: each token sees only its past
    pad_token_id: int = 0
    extra: dict = field(default_factory=dict)  # family-specific facts kept for the record
    # the ids that end a generation: config.json's eos_token_id, replaced by a folder's
    # generation_config.json as transformers' generate replaces it
    eos_token_ids: list = field(default_factory=list)
    n_kv_heads: Optional[int] = None  # key/value heads (grouped-query attention); None = n_heads
    head_dim: Optional[int] = None    # width of one head; None = d_model // n_heads

    def __post_init__(self) -> None:
        self.validate()

    @property
    def d_head(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``n_kv_heads``, or ``n_heads`` without grouped-query attention."""
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    @property
    def kv_group(self) -> int:
        """Query heads that share one key/value head (query head h uses k/v head ``h // kv_group``)."""
        return self.n_heads // self.kv_heads

    @property
    def score_bias(self) -> bool:
        """Attention adds a score term (``attn.bias``): the position scheme acts on the scores (ALiBi)."""
        return get_position(self.position).acts_on == "bias"

    @property
    def context_limit(self) -> Optional[int]:
        """The most positions a sequence may have: ``max_positions``, or None where a fixed score
        term is computed from the positions, for any distance (ALiBi: transformers sets BLOOM no
        limit; its ``seq_length`` is the training length, not a table's end)."""
        return None if get_position(self.position).bias is not None else self.max_positions

    def validate(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise error(ConfigError, "errors.core_positive_int", name=f"config.{name}", value=repr(value))
        for name in ("n_kv_heads", "head_dim"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise error(ConfigError, "errors.core_positive_int_or_none", name=f"config.{name}", value=repr(value))
        if self.head_dim is None and self.d_model % self.n_heads:
            raise error(ConfigError, "errors.core_heads_divide", p="config.", d_model=self.d_model, n_heads=self.n_heads,
                        rest=self.d_model % self.n_heads)
        if self.n_heads % self.kv_heads:
            raise error(ConfigError, "errors.core_kv_heads", p="config.", n_heads=self.n_heads, n_kv=self.kv_heads)
        for name, allowed in (("position", position_names()), ("norm", layer_recipe_names()), ("activation", ACTIVATIONS),
                              ("scoring", SCORINGS)):
            if getattr(self, name) not in allowed:
                raise error(ConfigError, "errors.core_unknown_choice", name=f"config.{name}",
                            value=repr(getattr(self, name)), choices=", ".join(allowed))
        scheme = get_position(self.position)
        if scheme.check is not None:
            scheme.check(self)
        eps = self.layer_norm_eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < math.inf:
            raise error(ConfigError, "errors.core_positive_finite", name="config.layer_norm_eps", value=repr(eps))
        for name in ("dropout", "attn_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise error(ConfigError, "errors.kernel_probability", name=f"config.{name}", value=getattr(self, name))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kind"] = self.kind
        return d

    #: What :meth:`from_dict` reads back (a saved trace records it).
    kind = "transformer"

    @classmethod
    def from_dict(cls, d: dict) -> "TransformerConfig":
        """The config of :meth:`to_dict` (a decoder's dict gives a :class:`DecoderConfig`)."""
        if cls is TransformerConfig:  # the subclass that wrote it (DecoderConfig, a family's own)
            cls = _kinds().get(d.get("kind"), TransformerConfig)
        d = cls.upgrade_dict(d)
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    @classmethod
    def upgrade_dict(cls, d: dict) -> dict:
        """A dict written by an earlier version in today's fields (a saved trace keeps its config)."""
        return d

    @property
    def recipe(self) -> LayerRecipe:
        """The :class:`~attnscope.recipe.LayerRecipe` of every layer (``config.norm`` names it)."""
        return get_layer_recipe(self.norm)


def _kinds(root: type[TransformerConfig] = TransformerConfig) -> dict[Optional[str], type[TransformerConfig]]:
    """``kind`` → config class, over every subclass defined so far (looked up with a dict's kind or None)."""
    out: dict[Optional[str], type[TransformerConfig]] = {root.kind: root}
    for sub in root.__subclasses__():
        for kind, c in _kinds(sub).items():
            out.setdefault(kind, c)  # a subclass that keeps its parent's kind does not replace it
    return out


#: What a QK-norm normalises over: each head's d_head features ("head"), or all heads' features at once ("all").
QK_NORM_SPANS = ("head", "all")
ROPE_TYPES = ("default", "linear", "dynamic", "llama3")
#: The numbers each scaling kind reads from ``rope_scaling`` (each a positive finite number).
ROPE_FIELDS = {"linear": ("factor",), "dynamic": ("factor",),
               "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}


def is_seq2seq(model_or_config) -> bool:
    """True for an encoder–decoder model (T5, BART) or its config."""
    return getattr(getattr(model_or_config, "config", model_or_config), "kind", "") == "seq2seq"


@dataclass
class DecoderConfig(TransformerConfig):
    """A decoder of the Llama kind (Llama, Qwen2, Qwen3, Mistral, Gemma 3, OLMo 2), one ``pre`` layer::

        attn_in  = RMSNorm_1(x)
        a        = Attn(attn_in)            rotary q, k (after QK-norm in Gemma, Qwen3, OLMo 2), GQA, window
        attn_resid = x + a                  Gemma: x + RMSNorm(a)  (norm = "sandwich")
        ffn_in   = RMSNorm_2(attn_resid)
        f        = W_2 (act(W_gate ffn_in) ⊙ W_up ffn_in)      SwiGLU (silu) / GeGLU (gelu_tanh)
        out      = attn_resid + f           Gemma: attn_resid + RMSNorm(f)

    ``norm`` names the layer recipe (:mod:`attnscope.recipe`): "pre", "sandwich" (Gemma),
    "post_block" (OLMo 2: no norm before the blocks, one after each). RMSNorm's ε is
    ``layer_norm_eps``; ``norm_offset`` 1 is Gemma's ``(1 + w)`` scale.
    """

    # the base fields, with a decoder's defaults
    vocab_size: int = 32000
    d_model: int = 576
    n_heads: int = 9
    n_layers: int = 30
    d_ff: int = 1536
    max_positions: int = 8192
    type_vocab_size: int = 0
    position: str = "rotary"
    norm: str = "pre"
    embed_norm: bool = False
    final_norm: bool = True
    activation: str = "silu"
    layer_norm_eps: float = 1e-5
    dropout: float = 0.0
    attn_dropout: float = 0.0
    bias: bool = False                # q/k/v projection biases (Qwen2)
    causal: bool = True
    # what decoders add
    out_bias: bool = False            # bias on W_O
    mlp_bias: bool = False            # biases on the MLP's projections
    norm_offset: float = 0.0          # RMSNorm scales by (norm_offset + w): Gemma 1
    norm_weight_first: bool = False   # RMSNorm multiplies by w before casting back to the input's dtype (OLMo 2)
    qk_norm: bool = False             # RMSNorm of q and k before rotation (Gemma 3, Qwen3, OLMo 2)
    qk_norm_span: str = "head"        # "head": each head over d_head (Gemma 3, Qwen3); "all": all heads' features (OLMo 2)
    embed_scale: float = 1.0          # Gemma: token embeddings × √d_model
    query_scale: Optional[float] = None   # factor on q·k (None: 1/√head_dim); Gemma: query_pre_attn_scalar^-½
    rope_theta: float = 10000.0       # RoPE base of full-attention layers
    rope_scaling: Optional[dict] = None   # {"rope_type": "linear"|"dynamic"|"llama3", "factor": …, …}
    rope_local_theta: Optional[float] = None  # RoPE base of sliding-window layers (Gemma 3), unscaled
    sliding_window: Optional[int] = None  # keys within this distance (q − k < window) on sliding layers
    layer_types: Optional[list] = None    # "full" | "sliding" per layer (None: all full)
    tie_embeddings: bool = True       # logits use the token embedding (else the loader sets lm_head_weight)
    final_logit_softcap: Optional[float] = None  # logits = cap · tanh(logits / cap)
    bos_token_id: Optional[int] = None

    @property
    def context_limit(self) -> Optional[int]:
        """Dynamic NTK scaling exists for texts past ``max_positions`` (its base grows there), and
        transformers runs them: no limit then; other rotary positions end at ``max_positions``."""
        if isinstance(self.rope_scaling, dict) and self.rope_scaling.get("rope_type") == "dynamic":
            return None
        return super().context_limit

    kind = "decoder"

    @classmethod
    def upgrade_dict(cls, d: dict) -> dict:
        """``sandwich_norm: true`` (a flag before the layer recipes) is the recipe ``norm: "sandwich"``."""
        if d.get("sandwich_norm"):
            d = dict(d, norm="sandwich")
        return {k: v for k, v in d.items() if k != "sandwich_norm"}

    def validate(self) -> None:
        super().validate()
        if self.qk_norm_span not in QK_NORM_SPANS:
            raise error(ConfigError, "errors.core_unknown_choice", name="config.qk_norm_span",
                        value=repr(self.qk_norm_span), choices=", ".join(QK_NORM_SPANS))
        if get_position(self.position).acts_on != "qk":
            raise error(ConfigError, "errors.core_decoder_position", value=repr(self.position))
        if self.d_head % 2:
            raise error(ConfigError, "errors.core_rotary_head_dim", value=self.d_head)
        if self.layer_types is not None:
            if not isinstance(self.layer_types, (list, tuple)) or len(self.layer_types) != self.n_layers or \
                    any(t not in mask_names() for t in self.layer_types):
                raise error(ConfigError, "errors.core_layer_types", kinds=joined(map(repr, mask_names()), OR),
                            n=self.n_layers, value=repr(self.layer_types))
            self.layer_types = list(self.layer_types)
        if self.sliding_window is not None and (isinstance(self.sliding_window, bool) or
                                                not isinstance(self.sliding_window, int) or self.sliding_window <= 0):
            raise error(ConfigError, "errors.core_positive_int_or_none", name="config.sliding_window",
                        value=repr(self.sliding_window))
        for kind in dict.fromkeys(self.layer_types or ()):  # each layer type is a mask scheme
            check = get_position(kind).check
            if check is not None:
                check(self)
        for name in ("rope_theta", "rope_local_theta", "query_scale", "final_logit_softcap"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf):
                raise error(ConfigError, "errors.core_positive_finite", name=f"config.{name}", value=repr(v))
        if self.rope_scaling is not None:
            kind = self.rope_scaling.get("rope_type") if isinstance(self.rope_scaling, dict) else None
            if kind not in ROPE_TYPES:
                raise error(ConfigError, "errors.core_rope_scaling", kind=repr(kind), kinds=", ".join(ROPE_TYPES))
            for key in ROPE_FIELDS.get(kind, ()):  # as models.decoder_family checks a loaded config
                v = self.rope_scaling.get(key)
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
                    raise error(ConfigError, "errors.core_positive_finite", name=f"config.rope_scaling[{key!r}]",
                                value=repr(v))
            if kind == "llama3" and not self.rope_scaling["high_freq_factor"] > self.rope_scaling["low_freq_factor"]:
                raise error(ConfigError, "errors.core_llama3_factors", high=self.rope_scaling["high_freq_factor"],
                            low=self.rope_scaling["low_freq_factor"])

    def layer_type(self, i: int) -> str:
        """"full" or "sliding" for layer ``i``."""
        return "full" if self.layer_types is None else self.layer_types[i]

    def window(self, i: int) -> Optional[int]:
        """The window of layer ``i``'s mask scheme (None: full causal attention)."""
        return get_position(self.layer_type(i)).window(self)

    def rope(self, i: int) -> str:
        """Which rotary table layer ``i`` uses: "local" (sliding layers with their own base) or "global"."""
        return "local" if self.layer_type(i) == "sliding" and self.rope_local_theta is not None else "global"
