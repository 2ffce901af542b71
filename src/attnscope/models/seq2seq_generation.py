"""Generation for encoder–decoder models (T5, BART), with a cache, as transformers' greedy search.

The source runs through the encoder once. The decoder starts from ``decoder_start_token_id`` and
each step runs one new token: its self-attention appends that token's keys and values to the
cache, its cross-attention reuses the source's keys and values computed at the first step
(:class:`~attnscope.modules.cross_decoder.Seq2SeqCache`).

**Checkpoint settings.** ``generation_config.json`` (else the same keys in ``config.json``, as
transformers reads old checkpoints) gives the start, end and padding tokens and the rules below.
With ``temperature=0`` the ids equal ``transformers``' ``generate(do_sample=False, num_beams=1,
max_new_tokens=n)``: these are applied, in transformers' order, to each step's logits —

=========================  =====================================================================
``repetition_penalty``     logits of tokens already in the decoder ids ÷ p (if > 0) or × p
``no_repeat_ngram_size``   a token that would repeat an n-gram of the decoder ids is banned
``min_length``             EOS banned while the decoder ids (start token included) are shorter
``min_new_tokens``         EOS banned before that many new tokens (where it is set, transformers
                           replaces ``min_length`` by it: ``min_length`` is then not applied)
``forced_bos_token_id``    the first new token is this one (BART-large: ``<s>``)
``forced_eos_token_id``    the last token allowed by ``max_new_tokens`` is EOS (BART's default:
                           a generation that reaches the length limit ends with ``</s>``)
=========================  =====================================================================

Not applied (greedy search has no beams): ``num_beams``, ``length_penalty``, ``early_stopping``;
``max_length`` is replaced by ``max_new_tokens``. :attr:`Generation.settings` lists what was
applied and what was ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import torch

from ..errors import ConfigError, InputError, ModelLoadError
from ..i18n import error
from .generation import Generation, check_request, last_rows, sample_loop
from .loader import read_json
from .registry import token_ids

Tensor = torch.Tensor

#: Generation keys attnscope reads (the rest of a generation config is recorded, not used).
APPLIED = ("repetition_penalty", "no_repeat_ngram_size", "min_length", "min_new_tokens", "forced_bos_token_id",
           "forced_eos_token_id")
IGNORED = ("num_beams", "length_penalty", "early_stopping", "max_length", "num_beam_groups", "diversity_penalty")


def generation_settings(hf: dict, folder: Path, source: str) -> dict:
    """The :class:`~attnscope.modules.seq2seq.Seq2SeqConfig` fields of a checkpoint's generation
    settings: ``decoder_start_token_id``, ``bos_token_id``, ``eos_token_ids`` and ``generation``
    (the rules of the module docstring that are set)."""
    gen_file = Path(folder) / "generation_config.json"
    g: dict = {}
    if gen_file.is_file():
        g = read_json(gen_file)
        where = str(gen_file)
    else:
        g, where = hf, source
    start = g.get("decoder_start_token_id", hf.get("decoder_start_token_id"))
    if start is None:
        start = hf.get("pad_token_id", 0)
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise error(ModelLoadError, "errors.models_decoder_start", where=where, got=repr(start))
    eos = token_ids(g.get("eos_token_id", hf.get("eos_token_id")), "eos_token_id", where)
    bos = g.get("bos_token_id", hf.get("bos_token_id"))
    rules = {}
    for key in APPLIED + IGNORED:
        v = g.get(key)
        if v is None or (key == "repetition_penalty" and v == 1.0) or (key in ("min_length", "min_new_tokens",
                                                                                  "no_repeat_ngram_size") and v == 0):
            continue
        if key in ("forced_bos_token_id", "forced_eos_token_id"):
            token_ids(v, key, where)
        elif key == "repetition_penalty":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise error(ModelLoadError, "errors.models_repetition_penalty", where=where, got=repr(v))
        elif key in ("no_repeat_ngram_size", "min_length", "min_new_tokens", "num_beams", "max_length") and \
                (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise error(ModelLoadError, "errors.models_non_negative_int", where=where, name=key, got=repr(v))
        rules[key] = v
    if g.get("min_new_tokens") is not None:  # transformers: min_new_tokens takes precedence, min_length is replaced
        rules.pop("min_length", None)
    return {"decoder_start_token_id": start, "bos_token_id": bos if isinstance(bos, int) else None,
            "eos_token_ids": eos, "generation": rules}


def banned_ngram_tokens(ids: list[int], n: int) -> set[int]:
    """Tokens that would complete an n-gram already in ``ids`` (transformers' NoRepeatNGram rule)."""
    if n <= 0 or len(ids) + 1 < n:
        return set()
    prefix = tuple(ids[len(ids) - n + 1:]) if n > 1 else ()
    return {ids[i + n - 1] for i in range(len(ids) - n + 1) if tuple(ids[i:i + n - 1]) == prefix}


def apply_rules(scores: Tensor, ids: list[int], step: int, max_new_tokens: int, rules: dict, eos: list[int]) -> Tensor:
    """The checkpoint's rules on one step's logits ``(V,)``; ``ids`` are the decoder ids so far
    (start token included), ``step`` the index of the token being chosen."""
    scores = scores.float().clone()
    p = rules.get("repetition_penalty")
    if p is not None:
        seen = torch.tensor(sorted(set(ids)), dtype=torch.long, device=scores.device)
        s = scores[seen]
        scores[seen] = torch.where(s < 0, s * p, s / p)
    n = rules.get("no_repeat_ngram_size")
    if n:
        banned = banned_ngram_tokens(ids, n)
        if banned:
            scores[list(banned)] = float("-inf")
    if eos and ((rules.get("min_length") and len(ids) < rules["min_length"])
                or (rules.get("min_new_tokens") and step < rules["min_new_tokens"])):
        scores[eos] = float("-inf")
    forced = None
    if rules.get("forced_bos_token_id") is not None and len(ids) == 1:
        forced = rules["forced_bos_token_id"]
    if rules.get("forced_eos_token_id") is not None and step == max_new_tokens - 1:
        forced = rules["forced_eos_token_id"]  # after the BOS rule, as transformers: one new token is EOS
    if forced is not None:
        keep = forced if isinstance(forced, list) else [forced]
        out = torch.full_like(scores, float("-inf"))
        out[keep] = 0.0
        scores = out
    return scores


def generate(model, source: str, *, max_new_tokens: int = 32, temperature: float = 0.0, top_k: Optional[int] = None,
             top_p: Optional[float] = None, seed: Optional[int] = None, attentions: bool = False,
             logits: bool = False, checkpoint_rules: bool = True,
             stream: Optional[Callable[[str], None]] = None) -> Generation:
    """Decode a target for one ``source`` text with up to ``max_new_tokens`` new tokens.

    Args:
        model: a :class:`~attnscope.models.seq2seq_model.Seq2SeqModel`.
        source: the text the encoder reads.
        max_new_tokens: at most this many new tokens (ConfigError when ≤ 0 or past the decoder's positions).
        temperature, top_k, top_p, seed: as for decoders (temperature 0: greedy).
        attentions: keep, per new token, ``{"self": (n_layers, H, t + 1), "cross": (n_layers, H, S)}``:
            the attention of the step that chose it (its query is the token before it).
        logits: keep the logits each token was chosen from (after the rules).
        checkpoint_rules: apply the checkpoint's generation rules (module docstring); False turns them off.
        stream: ``fn(text_piece)`` called as the text grows.
    Returns:
        a :class:`~attnscope.models.generation.Generation`: ``prompt``/``prompt_ids`` are the source,
        ``new_ids`` the generated tokens (the stopping EOS included), ``tokens`` the decoder tokens
        (start token first), ``text`` the decoded new tokens.
    """
    max_new_tokens, sampling, seed = check_request(max_new_tokens, temperature, top_k, top_p, seed)
    if not isinstance(source, str):
        raise error(InputError, "errors.models_one_source", got=type(source).__name__)
    c = model.config
    if model.position_limited and max_new_tokens + 1 > c.max_positions:
        raise error(ConfigError, "errors.models_decoder_positions", n=max_new_tokens, limit=c.max_positions,
                    fit=c.max_positions - 1)
    batch = model.source_batch(source)
    rules = dict(c.generation) if checkpoint_rules else {}
    eos = list(c.eos_token_ids)
    device = model.device
    cache = model.new_cache()
    src_ids, src_mask = batch.input_ids.to(device), batch.attention_mask.to(device)
    enc: list = []

    def advance(new_ids: list, t: int):
        if not enc:
            enc.append(model.encoder(src_ids, src_mask))  # (1, S, d), once
        ids = [c.decoder_start_token_id] + new_ids  # the decoder's ids so far
        out = model.decoder(torch.tensor([[ids[-1]]], device=device), enc[0], source_mask=src_mask, cache=cache,
                            need_weights=attentions)
        h, w = (out[0], {"self": last_rows(out[1]), "cross": last_rows(out[2])}) if attentions else (out, None)
        return apply_rules(model.lm_logits(h[0, -1]), ids, t, max_new_tokens, rules, eos), w  # (V,)

    return sample_loop(model, advance, max_new_tokens, sampling, seed, stream, eos,
                       attentions=attentions, logits=logits, prompt=source, prompt_ids=batch.ids[0],
                       before=[c.decoder_start_token_id],
                       settings={"decoder_start_token_id": c.decoder_start_token_id, "eos_token_ids": eos,
                                 "applied": {k: v for k, v in rules.items() if k in APPLIED},
                                 "ignored": {k: v for k, v in c.generation.items() if k in IGNORED}})
