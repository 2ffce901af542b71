"""A pretrained decoder of the Llama kind (Llama, Qwen2, Mistral, Gemma 3) with its tokenizer.

``DecoderModel`` is a :class:`~attnscope.modules.TransformerDecoder` (hook-point names are the
module paths: ``layers.3.attn.q_proj``, ``layers.3.attn.weights``, …) plus what a checkpoint
brings (:class:`~attnscope.models.base.LoadedModel`): tokenizer, chat template, tracing, hooks,
logits and loss, and :meth:`DecoderModel.generate` with a key/value cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

import torch

from ..config import DecoderConfig
from ..errors import InputError, ModelLoadError, shape_or_type
from ..i18n import error
from ..modules.decoder import TransformerDecoder
from ..modules.kv_cache import KVCache
from ..tokenizer import Tokenizer
from .base import LoadedModel
from .registry import Family

Tensor = torch.Tensor


class DecoderModel(LoadedModel, TransformerDecoder):
    """A loaded decoder. Build it with :func:`attnscope.load` (a folder, a ``.gguf`` file, or the
    name of an installed model package: ``"smollm2-135m"``, ``"gemma-3-270m"``).

    Attributes (besides :class:`~attnscope.models.base.LoadedModel`'s):
        chat_template: the checkpoint's Jinja chat template, or None.
        special_tokens: ``bos_token``/``eos_token``/… → text, for the template.
        gguf: for a model read from a GGUF file, what the file said (``qtypes``: storage type per
            weight, ``defaults``: config values the file does not store and where they came from).
    """

    config: DecoderConfig

    def __init__(self, config: DecoderConfig, family: Family, *, name: str = "",
                 tokenizer: Optional[Tokenizer] = None, path: Optional[Path] = None) -> None:
        super().__init__(config)
        self._setup(family, name=name, tokenizer=tokenizer, path=path, own_head=not config.tie_embeddings)
        self.chat_template: Optional[str] = None
        self.special_tokens: dict = {}
        self.gguf: Optional[dict] = None
        if path is not None and Path(path).is_dir():
            self.chat_template, self.special_tokens = folder_chat_template(Path(path))

    has_lm_head = True  # every decoder predicts next tokens

    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None,
                token_type_ids: Optional[Tensor] = None, position_ids: Optional[Tensor] = None,
                *, cache: Optional[KVCache] = None) -> Tensor:
        """Token ids ``(B, L)`` → last hidden states ``(B, L, d_model)`` (after the final norm).

        ``attention_mask (B, L)`` (or (B, cached + L) with a cache): 1 = real token, 0 = padding.
        Texts are right-padded, so every real token has the position it has alone and sees only
        real keys: each text of a padded batch gets what it gets alone. ``token_type_ids`` must
        be None or zeros (decoders have no segments).
        """
        past = cache.length if cache is not None else 0
        self.check_context(input_ids, past)
        if token_type_ids is not None and bool(token_type_ids.ne(0).any()):
            raise error(InputError, "errors.models_no_segments")
        if attention_mask is not None:
            want = (input_ids.shape[0], past + input_ids.shape[1])
            if not isinstance(attention_mask, torch.Tensor) or tuple(attention_mask.shape) != want:
                raise error(InputError, "errors.models_cache_mask", want=want, got=shape_or_type(attention_mask))
        with self.lock:
            return self.decode(input_ids, attention_mask=attention_mask, position_ids=position_ids, cache=cache)

    def lm_logits(self, hidden: Tensor) -> Tensor:
        """Next-token logits ``(…, vocab)``; Gemma's ``final_logit_softcapping`` applied when set."""
        logits = super().lm_logits(hidden)
        cap = self.config.final_logit_softcap
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        return logits

    # ------------------------------------------------------------------------------------------
    def apply_chat_template(self, messages: Union[str, Sequence[dict]], *, add_generation_prompt: bool = True) -> str:
        """The prompt text of ``messages`` (``[{"role": "user", "content": "Hi"}]``, or one string as a
        user message) rendered with the checkpoint's chat template, as transformers'
        ``apply_chat_template(tokenize=False)``. InputError when the checkpoint has no template."""
        from .gguf_tokenizer import render_chat_template

        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if self.chat_template is None:
            raise error(InputError, "errors.models_no_chat_template", name=repr(self.name))
        return render_chat_template(self.chat_template, messages, add_generation_prompt=add_generation_prompt,
                                    **self.special_tokens)

    def generate(self, prompt, max_new_tokens: int = 32, **kw):
        """Continue ``prompt``; see :func:`attnscope.models.generation.generate` for the options."""
        from .generation import generate
        return generate(self, prompt, max_new_tokens=max_new_tokens, **kw)


def folder_chat_template(folder: Path) -> tuple[Optional[str], dict]:
    """``(template, special tokens)`` of a Hugging Face folder: ``chat_template.jinja``, else
    ``tokenizer_config.json``'s ``chat_template`` (a string, or a list of named templates of which
    "default" is used), and its ``bos_token``/``eos_token``/… texts."""
    from ..tokenizer import tokenizer_settings

    settings = tokenizer_settings(folder)
    special = {k: v for k, v in settings.items()
               if k in ("bos_token", "eos_token", "pad_token", "unk_token") and isinstance(v, str)}
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        try:
            return jinja.read_text(encoding="utf-8"), special
        except (OSError, UnicodeDecodeError) as e:
            raise error(ModelLoadError, "errors.models_cannot_read", path=jinja, why=str(e)) from None
    t = settings.get("chat_template")
    if isinstance(t, list):
        named = {d.get("name"): d.get("template") for d in t if isinstance(d, dict)}
        t = named.get("default")
    return (t if isinstance(t, str) else None), special
