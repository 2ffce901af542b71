"""Text generation with a key/value cache, and the attention of every generated token.

    >>> m = attnscope.load("smollm2-135m")
    >>> g = m.generate("What is the capital of France?", chat=True, max_new_tokens=20)
    >>> g.text                                  # 'The capital of France is Paris.'
    >>> g = m.generate("The capital of France is", max_new_tokens=8, attentions=True)
    >>> g.attentions[0].shape                   # (n_layers, n_heads, n_prompt): what produced token 0

The prompt runs once; each new token then runs alone against the cached keys and values of
everything before it (:class:`~attnscope.modules.kv_cache.KVCache`), so a step costs one token's
work — in the decoders of the Llama kind and in the causal single stacks (GPT-2: learned positions
go on from the cache; BLOOM: ALiBi counts keys from the first prompt token) alike.
``temperature=0`` (the default) is greedy: the most likely token, as transformers'
``generate(do_sample=False)``. Otherwise logits are divided by the temperature, cut to the
``top_k`` most likely and to the smallest set whose probability reaches ``top_p`` (in that order,
as transformers), and sampled with a ``torch.Generator`` seeded by ``seed``.

**Attention of a generated token.** ``attentions[t]`` is the attention of the step that *chose*
new token t: its query is the token just before it (the last prompt token for t = 0), its keys are
the prompt and new tokens 0 … t−1, ``(n_layers, n_heads, n_prompt + t)`` per query head, rows
summing to 1 — the same numbers as that row of a full forward pass over the whole sequence.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

import torch

from ..errors import ConfigError, InputError
from ..i18n import error
from ..modules.kv_cache import KVCache
from ..tokenizer import check_unicode

Tensor = torch.Tensor
Prompt = Union[str, Sequence[dict]]
Sampling = tuple[float, Optional[int], Optional[float]]  # temperature, top_k, top_p


@dataclass
class Generation:
    """What :func:`generate` returns.

    Attributes:
        prompt: the text given to the model (after the chat template, when one was applied).
        prompt_ids: its token ids; ``new_ids``: the generated ones (an EOS that stopped it included).
        tokens: token strings of prompt and new tokens (``model.tokenizer.readable`` spells them).
        text: the generated text (decoded new ids, without the stopping EOS).
        finish_reason: "eos" (an end-of-sequence token was generated) or "length".
        attentions: with ``attentions=True``, per new token t a ``(n_layers, n_heads, n_prompt + t)``
            float32 tensor (see the module docstring); else None.
        logits: with ``logits=True``, per new token the ``(vocab,)`` logits it was chosen from.
        settings: the sampling settings used.
        partial_character: the generation stopped inside a character (its last token carries the
            first bytes of a multi-byte UTF-8 character, say of an emoji or an Arabic letter, and the
            rest never came): ``text`` ends in U+FFFD there, as the tokenizer decodes it, but a
            ``stream`` was given only the complete characters (the incomplete bytes are dropped).
    """

    prompt: str
    prompt_ids: list
    new_ids: list
    tokens: list
    text: str
    finish_reason: str
    attentions: Optional[list] = None
    logits: Optional[list] = None
    settings: dict = field(default_factory=dict)
    partial_character: bool = False

    @property
    def ids(self) -> list:
        """Prompt and new token ids."""
        return self.prompt_ids + self.new_ids

    @property
    def n_prompt(self) -> int:
        return len(self.prompt_ids)

    def __repr__(self) -> str:
        return (f"Generation({len(self.new_ids)} new tokens after {self.n_prompt}, finish_reason="
                f"{self.finish_reason!r}, text={self.text!r})")


def positive_int(name: str, v) -> int:
    """``int(v)`` if it is an integer > 0 (not a bool; NumPy's too), else ConfigError naming the setting ``name``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
        raise error(ConfigError, "errors.models_positive_int", name=name, got=repr(v))
    return int(v)


def check_request(max_new_tokens, temperature, top_k, top_p, seed) -> tuple[int, Sampling, Optional[int]]:
    """``(max_new_tokens, (temperature, top_k, top_p), seed)`` of a generation, checked (NumPy numbers
    as Python's); ConfigError names a bad one."""
    n = positive_int("max_new_tokens", max_new_tokens)
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or not float(temperature) >= 0:
        raise error(ConfigError, "errors.models_temperature", got=repr(temperature))
    if float(temperature) == float("inf"):  # ≥ 0, but no number: logits / inf are all 0 (a uniform draw)
        raise error(ConfigError, "errors.models_temperature_finite", got=repr(temperature))
    if top_k is not None:
        top_k = positive_int("top_k", top_k)
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, numbers.Real) or not 0 < float(top_p) <= 1):
        raise error(ConfigError, "errors.models_top_p", got=repr(top_p))
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) < 2**64):
        raise error(ConfigError, "errors.models_seed", got=repr(seed))
    if float(temperature) == 0.0 and (top_k is not None or top_p is not None):  # greedy takes the argmax
        raise error(ConfigError, "errors.models_greedy_filter", name="top_k" if top_k is not None else "top_p",
                    temperature="temperature")
    seed = None if seed is None else int(seed)
    return n, (float(temperature), top_k, (float(top_p) if top_p is not None else None)), seed


def stop_ids(v, vocab: int) -> list[int]:
    """``eos_token_ids`` given to :func:`generate`: a token id or ids (NumPy's too) → the list;
    ConfigError unless each is an integer from 0 to ``vocab`` − 1 (a text, say, would never stop it)."""
    ids = list(v) if isinstance(v, (list, tuple, set, frozenset)) else [v]
    if not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) and 0 <= int(i) < vocab for i in ids):
        raise error(ConfigError, "errors.models_eos_token_ids", high=vocab - 1, got=repr(v))
    return [int(i) for i in ids]


def end_ids(config) -> list[int]:
    """The ids that end a generation by default: the config's ``eos_token_ids``."""
    return [int(i) for i in config.eos_token_ids]


def choose(logits: Tensor, temperature: float, top_k: Optional[int], top_p: Optional[float],
           generator: Optional[torch.Generator]) -> int:
    """The next token from ``logits (V,)``: argmax when ``temperature == 0``, else a sample."""
    if temperature == 0.0:
        return int(logits.argmax())
    # shifted by the largest logit (softmax, top-k and top-p are unchanged) and divided in float64:
    # a tiny temperature then sends the others to −inf, never the largest to inf (inf − inf = NaN)
    full = logits.double()
    scores = ((full - full.max()) / temperature).float()  # (V,)
    if top_k is not None and top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        # transformers' TopPLogitsWarper: drop the least likely tokens whose total is ≤ 1 − top_p
        sorted_scores, order = torch.sort(scores, descending=False)
        cum = sorted_scores.softmax(-1).cumsum(-1)
        drop = cum <= (1 - top_p)
        drop[-1] = False  # keep at least the most likely token
        scores = scores.masked_fill(drop.scatter(0, order, drop), float("-inf"))
    probs = scores.softmax(-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def prompt_ids(model, prompt: Prompt, *, chat: bool, system: Optional[str] = None) -> tuple[str, list]:
    """``(text, ids)`` of the prompt; with ``chat``, rendered by the model's chat template and
    tokenized without adding special tokens again (as transformers' ``apply_chat_template``)."""
    if model.tokenizer is None:
        raise error(InputError, "errors.models_no_tokenizer_generate", name=repr(model.name))
    if not isinstance(prompt, str) and not (isinstance(prompt, (list, tuple)) and prompt
                                            and all(isinstance(m, dict) for m in prompt)):  # [] is no chat
        got = repr(prompt) if len(repr(prompt)) <= 80 else type(prompt).__name__
        raise error(InputError, "errors.models_one_prompt", got=got)
    if chat or not isinstance(prompt, str):
        if getattr(model, "chat_template", None) is None:  # GPT-2 and BLOOM have none, nor the attribute
            raise error(InputError, "errors.models_no_chat_template", name=repr(model.name))
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        if system is not None:
            messages = [{"role": "system", "content": system}] + messages
        text = model.apply_chat_template(messages, add_generation_prompt=True)
        check_unicode(text, "the prompt")
        ids = model.tokenizer.backend.encode(text, add_special_tokens=False).ids
    else:
        if system is not None:
            raise error(InputError, "errors.models_system_needs_chat")
        text = check_unicode(prompt, "the prompt")
        ids = model.tokenizer.backend.encode(text).ids
    if not ids:
        raise error(InputError, "errors.models_prompt_no_tokens")
    limit = model.config.context_limit
    if limit is not None and len(ids) > limit:
        raise error(InputError, "errors.models_prompt_too_long", n=len(ids), limit=limit)
    return text, list(ids)


class NewTokens:
    """The tokens a generation adds, one :meth:`add` per step: all kept in ``ids`` (a stopping
    end-of-sequence token included), the text passed to ``fn(piece)`` as soon as it decodes to
    whole characters, and ``reason`` "eos" once an end token came ("length" until then). A last
    token that stops inside a character is held back and, when the generation ends there, never
    streamed (``partial`` says so): the stream never ends in a broken U+FFFD."""

    def __init__(self, model, fn: Optional[Callable[[str], None]], eos) -> None:
        self.model, self.fn, self.eos = model, fn, set(eos)
        self.ids: list[int] = []
        self.reason = "length"
        self.body: list[int] = []  # the ids of the text: all but a stopping end token
        self.sent = ""
        self.partial = False

    def add(self, token: int) -> bool:
        """Keep ``token``; True when it ends the generation (an end-of-sequence token)."""
        self.ids.append(token)
        if token in self.eos:
            self.reason = "eos"
            return True
        self.body.append(token)
        self._stream(final=False)
        return False

    def text(self) -> str:
        """The generated text (without the stopping end token), its last piece streamed."""
        text = self.model.tokenizer.decode(self.body)
        self.partial = text.endswith("\ufffd")
        self._stream(final=True)
        return text

    def _stream(self, final: bool) -> None:
        if self.fn is None:
            return
        text = self.model.tokenizer.decode(self.body)
        if text.endswith("\ufffd"):  # the first bytes of a multi-byte character: wait for the rest
            if not final:
                return
            text = text.rstrip("\ufffd")  # the rest never came: stream only the complete text
        if len(text) > len(self.sent) and text.startswith(self.sent):
            self.fn(text[len(self.sent):])
            self.sent = text


def last_rows(weights: Sequence[Tensor]) -> Tensor:
    """``(n_layers, H, S)`` float32 on the CPU: the last query's row of each layer's ``(1, H, L, S)``."""
    return torch.stack([w[0, :, -1].float().cpu() for w in weights])


def sample_loop(model, advance: Callable[[list, int], tuple[Tensor, object]], max_new_tokens: int,
                sampling: Sampling, seed: Optional[int], stream: Optional[Callable[[str], None]], eos, *,
                attentions: bool, logits: bool, prompt: str, prompt_ids: list, before: list,
                settings: dict) -> Generation:
    """The loop of every generation (decoder-only and encoder–decoder), under the model's lock:
    ``advance(new_ids, t)`` runs the model up to the token before new token t (the prompt at t = 0,
    then one token a step over its cache) and returns the logits ``(V,)`` that token t is chosen
    from and, with ``attentions``, what to keep of that step's weights. ``before``: the ids whose
    tokens come before the new ones."""
    gen = None  # greedy (temperature 0) draws nothing
    if sampling[0] != 0.0:
        gen = torch.Generator(device="cpu")
        if seed is not None:
            gen.manual_seed(int(seed))
        else:  # its own fresh seed (torch.seed() would reseed the caller's global generator)
            gen.seed()
    new = NewTokens(model, stream, eos)
    atts: Optional[list] = [] if attentions else None
    kept: Optional[list] = [] if logits else None
    with torch.no_grad(), model.lock:
        for t in range(max_new_tokens):
            scores, w = advance(new.ids, t)  # (V,)
            if atts is not None:
                atts.append(w)
            if kept is not None:
                kept.append(scores.float().cpu())
            if new.add(choose(scores, *sampling, gen)):
                break
    return Generation(prompt=prompt, prompt_ids=prompt_ids, new_ids=new.ids, text=new.text(),
                      tokens=[model.tokenizer.id_to_token(i) for i in before + new.ids], partial_character=new.partial,
                      finish_reason=new.reason, attentions=atts, logits=kept,
                      settings={"max_new_tokens": max_new_tokens, "temperature": sampling[0], "top_k": sampling[1],
                                "top_p": sampling[2], "seed": seed, **settings})


def generate(model, prompt: Prompt, *, max_new_tokens: int = 32, temperature: float = 0.0,
             top_k: Optional[int] = None, top_p: Optional[float] = None, seed: Optional[int] = None,
             chat: bool = False, system: Optional[str] = None, attentions: bool = False, logits: bool = False,
             eos_token_ids: Optional[Sequence[int]] = None, stream: Optional[Callable[[str], None]] = None) -> Generation:
    """Continue ``prompt`` with up to ``max_new_tokens`` tokens (see the module docstring).

    Args:
        model: a :class:`~attnscope.models.DecoderModel`, or a causal :class:`~attnscope.models.Model`
            with a language-model head (GPT-2, BLOOM): anything with ``decode(ids, cache=…,
            need_weights=…)`` and ``lm_logits``.
        prompt: the text, or chat messages ``[{"role": …, "content": …}]`` (then ``chat`` is implied).
        max_new_tokens: at most this many new tokens; ConfigError when ≤ 0 or when prompt + new
            tokens would pass the model's context.
        temperature, top_k, top_p, seed: sampling (temperature 0: greedy; seed: reproducible samples).
        chat: apply the model's chat template to a user message ``prompt`` (and ``system``).
        attentions: keep each new token's attention (per layer and query head).
        logits: keep the logits each token was chosen from.
        eos_token_ids: the token id or ids that end the generation (default: the model's
            end-of-sequence ids; ``[]``: none, it runs to ``max_new_tokens``).
        stream: ``fn(text_piece)``, called as the text grows (for printing as it comes).
    """
    max_new_tokens, sampling, seed = check_request(max_new_tokens, temperature, top_k, top_p, seed)
    text, ids = prompt_ids(model, prompt, chat=chat, system=system)
    limit = model.config.context_limit
    if limit is not None and len(ids) + max_new_tokens > limit:
        raise error(ConfigError, "errors.models_new_tokens_fit", n=max_new_tokens, prompt=len(ids), limit=limit,
                    fit=limit - len(ids))
    eos = end_ids(model.config) if eos_token_ids is None else stop_ids(eos_token_ids, model.config.vocab_size)
    device = model.device
    cache = KVCache(model.config.n_layers)

    def advance(new_ids: list, t: int):
        # With attentions the last prompt token runs as a step of its own, so that only its row of
        # weights is formed (not the prompt's full L×L matrices).
        if not t and attentions and len(ids) > 1:
            model.decode(torch.tensor([ids[:-1]], device=device), cache=cache)
        run = new_ids[-1:] if t else (ids[-1:] if attentions else ids)
        out = model.decode(torch.tensor([run], device=device), cache=cache, need_weights=attentions)
        h, w = (out[0], last_rows(out[1])) if attentions else (out, None)
        return model.lm_logits(h[0, -1]), w  # (V,), (n_layers, H, S)

    return sample_loop(model, advance, max_new_tokens, sampling, seed, stream,
                       eos, attentions=attentions,
                       logits=logits, prompt=text, prompt_ids=ids, before=ids,
                       settings={"chat": bool(chat or not isinstance(prompt, str))})
