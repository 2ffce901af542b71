"""Generation with a key/value cache on the tiny decoders: cached logits and attentions equal a
full recompute (windows crossed included), greedy ids equal transformers' generate, sampling
settings do what they say, EOS stops, and bad settings are one clear error."""

from __future__ import annotations

import pytest
import torch

from attnscope.errors import ConfigError, InputError
from attnscope.models.generation import choose
from attnscope.modules.kv_cache import KVCache

PROMPT = "Queries and keys are rotated by"
FAMILIES = ["llama_gqa", "llama_mqa", "llama3_scaled", "qwen2_window", "mistral_window", "gemma3", "qwen3", "olmo2"]


@pytest.mark.parametrize("name", FAMILIES)
def test_cached_steps_equal_a_full_recompute(name, decoders):
    """24 new tokens after an 8-token prompt: past every window (5, 6) and llama3's 16 positions."""
    model = decoders[name]
    g = model.generate(PROMPT, max_new_tokens=24, eos_token_ids=[], attentions=True, logits=True)
    assert len(g.new_ids) == 24 and g.finish_reason == "length"
    ids = torch.tensor([g.ids])
    P = g.n_prompt
    with torch.no_grad():
        full = model.lm_logits(model(ids))[0]  # (L, V)
    tr = model.trace(_batch(model, g.ids), names="layers.*.attn.weights")  # the whole sequence at once
    for t in range(24):
        assert float((g.logits[t] - full[P - 1 + t]).abs().max()) <= 1e-5
        att = g.attentions[t]  # (n_layers, H, P + t): the step that chose token t
        assert att.shape == (model.config.n_layers, model.config.n_heads, P + t)
        for layer in range(model.config.n_layers):
            row = tr[f"layers.{layer}.attn.weights"][0, :, P - 1 + t, : P + t]
            assert float((att[layer] - row).abs().max()) <= 1e-5
    assert torch.allclose(g.attentions[-1].sum(-1), torch.ones(()), atol=1e-5)


def _batch(model, ids):
    from attnscope.tokenizer import Batch

    t = torch.tensor([ids])
    return Batch(t, torch.ones_like(t), torch.zeros_like(t), [[model.tokenizer.id_to_token(i) for i in ids]],
                 [model.tokenizer.decode(ids)])


@pytest.mark.parametrize("name", FAMILIES)
def test_greedy_ids_equal_transformers_generate(name, decoders, hf_decoders):
    model = decoders[name]
    g = model.generate(PROMPT, max_new_tokens=16, eos_token_ids=[])
    hf = hf_decoders(name)
    ids = torch.tensor([g.prompt_ids])
    with torch.no_grad():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=16, min_new_tokens=16,
                          do_sample=False, pad_token_id=0, eos_token_id=None)
    assert g.new_ids == out[0, ids.shape[1]:].tolist()
    assert g.text == model.tokenizer.decode(g.new_ids)
    assert g.tokens[: g.n_prompt] == model.encode(PROMPT).tokens[0]


def test_eos_stops_and_is_not_in_the_text(decoders):
    model = decoders["llama_gqa"]
    free = model.generate(PROMPT, max_new_tokens=10, eos_token_ids=[])
    stop = free.new_ids[3]
    first = free.new_ids.index(stop)
    g = model.generate(PROMPT, max_new_tokens=10, eos_token_ids=[stop])
    assert g.finish_reason == "eos" and g.new_ids == free.new_ids[: first + 1]
    assert g.text == model.tokenizer.decode(free.new_ids[:first])


def test_streaming_pieces_add_up_to_the_text(decoders):
    model = decoders["gemma3"]
    pieces = []
    g = model.generate("我喜欢", max_new_tokens=12, eos_token_ids=[], stream=pieces.append)
    assert "".join(pieces) == g.text and len(pieces) >= 2


def test_decode_and_decoder_forward_check_the_context_in_one_place(decoders, tiny_models, monkeypatch):
    """GPT-2's Model.decode and a decoder's forward refuse positions past the context with one rule,
    LoadedModel.check_context (each had its own copy of the two lines)."""
    from attnscope.models.base import LoadedModel

    gpt2, llama = tiny_models["gpt2"], decoders["llama_mqa"]  # 64 learned positions; 128 rotary ones
    for model, limit in ((gpt2, 64), (llama, 128)):
        model.check_context(torch.zeros(1, 4, dtype=torch.long), limit - 4)  # the last position that fits
        with pytest.raises(InputError, match=f"^{limit + 1} positions are more than the model's context of {limit}$"):
            model.check_context(torch.zeros(1, 5, dtype=torch.long), limit - 4)
    seen: list = []
    monkeypatch.setattr(LoadedModel, "check_context",
                        lambda self, ids, past=0: seen.append((self.family, past, ids.shape[1])))
    cache = KVCache(gpt2.config.n_layers)
    gpt2.decode(torch.zeros(1, 3, dtype=torch.long), cache=cache)
    gpt2.decode(torch.zeros(1, 2, dtype=torch.long), cache=cache)
    llama(torch.zeros(1, 3, dtype=torch.long))
    assert seen == [("gpt2", 0, 3), ("gpt2", 3, 2), ("llama", 0, 3)]


@pytest.mark.parametrize("ids", [torch.zeros(3, dtype=torch.long), [[1, 2]], torch.zeros(1, 2, 3, dtype=torch.long)])
def test_decode_of_ids_that_are_not_a_batch_is_one_sentence(tiny_models, decoders, ids):
    """Model.decode (GPT-2, BLOOM) of a 1-D tensor or a list failed inside it ('not enough values to
    unpack', "'list' object has no attribute 'shape'"); it is the sentence a decoder's forward gives."""
    for model in (tiny_models["gpt2"], decoders["llama_mqa"]):
        run = model.decode if model.family == "gpt2" else model
        with pytest.raises(InputError, match=r"^input_ids must be an integer tensor \(B, L\), got "):
            run(ids)


def test_dynamic_rope_runs_past_max_positions_as_transformers(decoders, hf_decoders):
    """Dynamic NTK scaling grows RoPE's base once a text is longer than max_position_embeddings
    (128 here), and transformers runs such texts; attnscope refused them ("more than the model's
    context of 128"), so the scaling never acted in a loaded model. Logits of a 600-token text and
    greedy tokens after a 376-token prompt equal transformers' eager Llama."""
    model, hf = decoders["llama_dynamic"], hf_decoders("llama_dynamic")
    assert model.config.max_positions == 128
    batch = model.encode("Queries and keys are rotated by angles that grow with position. " * 14)
    assert batch.input_ids.shape[1] > 4 * 128
    with torch.no_grad():
        ours = model.lm_logits(model(batch.input_ids, batch.attention_mask))  # (1, L, V)
        theirs = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits  # (1, L, V)
    assert float((ours - theirs).abs().max()) <= 1e-4
    g = model.generate("Queries and keys are rotated by angles " * 15, max_new_tokens=20, eos_token_ids=[])
    ids = torch.tensor([g.prompt_ids])
    with torch.no_grad():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=20,
                          min_new_tokens=20, eos_token_id=None, pad_token_id=0)
    assert len(g.prompt_ids) > 128 and g.new_ids == out[0, ids.shape[1]:].tolist()
    assert model.config.context_limit is None
    assert decoders["llama_linear"].config.context_limit == 128  # other scalings keep the limit


def test_sampling_settings():
    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])
    g = torch.Generator().manual_seed(0)
    assert choose(logits, 0.0, None, None, None) == 0
    assert {choose(logits, 1.0, 2, None, g) for _ in range(200)} == {0, 1}  # top_k = 2
    # top_p: softmax = .64 .24 .09 .03 .01; the smallest set reaching 0.8 is {0, 1}
    assert {choose(logits, 1.0, None, 0.8, g) for _ in range(300)} == {0, 1}
    assert {choose(logits, 1.0, None, 0.5, g) for _ in range(50)} == {0}
    draws = torch.tensor([choose(logits, 1.0, None, None, g) for _ in range(4000)])
    freq = torch.bincount(draws, minlength=5).double() / 4000
    assert torch.allclose(freq, logits.softmax(-1).double(), atol=0.03)  # temperature 1: the softmax
    hot = torch.tensor([choose(logits, 100.0, None, None, g) for _ in range(2000)])
    assert torch.bincount(hot, minlength=5).min() > 300  # a high temperature flattens it


def test_seed_makes_samples_reproducible(decoders):
    model = decoders["qwen2_full"]
    a = model.generate(PROMPT, max_new_tokens=12, temperature=1.0, seed=3, eos_token_ids=[])
    b = model.generate(PROMPT, max_new_tokens=12, temperature=1.0, seed=3, eos_token_ids=[])
    c = model.generate(PROMPT, max_new_tokens=12, temperature=1.0, seed=4, eos_token_ids=[])
    assert a.new_ids == b.new_ids and a.new_ids != c.new_ids
    one = model.generate(PROMPT, max_new_tokens=12, temperature=1.0, top_k=1, seed=5, eos_token_ids=[])
    assert one.new_ids == model.generate(PROMPT, max_new_tokens=12, eos_token_ids=[]).new_ids


def test_bad_settings_are_one_clear_error(decoders):
    model = decoders["llama_mqa"]  # 128 positions
    for n in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="max_new_tokens must be a positive integer"):
            model.generate(PROMPT, max_new_tokens=n)
    with pytest.raises(ConfigError, match=r"passes the model's context of 128 positions; at most \d+ new tokens fit"):
        model.generate(PROMPT, max_new_tokens=125)
    with pytest.raises(InputError, match="more than the model's context of 128"):
        model.generate("a b c d " * 100, max_new_tokens=1)
    with pytest.raises(ConfigError, match="temperature"):
        model.generate(PROMPT, temperature=-1)
    with pytest.raises(ConfigError, match="temperature must be a finite number .*, got inf"):  # said "≥ 0"
        model.generate(PROMPT, temperature=float("inf"))
    with pytest.raises(ConfigError, match="top_p"):
        model.generate(PROMPT, temperature=1, top_p=0)
    with pytest.raises(ConfigError, match="top_k"):
        model.generate(PROMPT, temperature=1, top_k=0)
    for seed in (2**64, -1, 99999999999999999999999, 1.5):
        with pytest.raises(ConfigError, match=r"seed must be an integer from 0 to 2\*\*64 - 1"):
            model.generate(PROMPT, temperature=1, seed=seed)
    with pytest.raises(InputError, match="no chat template"):
        model.generate(PROMPT, chat=True)
    with pytest.raises(InputError, match=r"generate takes one prompt.*; got \[\]"):  # generated from nothing
        model.generate([])
    for kw in ({"top_k": 5}, {"top_p": 0.5}):  # greedy takes the argmax: they were dropped without a word
        with pytest.raises(ConfigError, match=f"at temperature 0 .* leave {next(iter(kw))} out"):
            model.generate(PROMPT, **kw)


@pytest.mark.parametrize("text", ["hi😀", "مرحبا", "我喜欢"])
def test_a_stream_never_ends_in_a_broken_character(decoders, text):
    """The tiny Gemma's byte-level pieces split each of these characters over two or three tokens:
    a generation that stops after any prefix of them streams only complete characters, and says
    when it cut one (Generation.partial_character); the text itself is the tokenizer's decoding."""
    from attnscope.models.generation import NewTokens

    model = decoders["gemma3"]
    ids = model.tokenizer.backend.encode(text, add_special_tokens=False).ids
    assert len(ids) > len(text)  # some character really is split over tokens
    for k in range(1, len(ids) + 1):
        pieces: list = []
        new = NewTokens(model, pieces.append, eos=[])
        for token in ids[:k]:
            new.add(token)
        decoded = new.text()
        whole = decoded.rstrip("\ufffd")
        assert "".join(pieces) == whole and "\ufffd" not in "".join(pieces), (k, pieces)
        assert decoded == model.tokenizer.decode(ids[:k]) and new.partial == (decoded != whole)
        assert text.startswith(whole)
    assert not new.partial and "".join(pieces) == text


def test_generate_reports_a_cut_character(decoders, monkeypatch):
    import attnscope.models.generation as G

    model = decoders["gemma3"]
    ids = model.tokenizer.backend.encode("hi😀", add_special_tokens=False).ids  # 'h' 'i' + 4 byte pieces
    script = iter(ids[:3])  # stop after the emoji's first byte
    monkeypatch.setattr(G, "choose", lambda *a: next(script))
    pieces: list = []
    g = model.generate(PROMPT, max_new_tokens=3, eos_token_ids=[], stream=pieces.append)
    assert g.new_ids == ids[:3] and g.partial_character and g.text == "hi\ufffd"
    assert "".join(pieces) == "hi"


def test_a_tiny_temperature_samples_the_most_likely_token(decoders):
    """logits / 1e-40 overflowed float32 (the largest to inf, its softmax NaN): torch.multinomial
    raised "probability tensor contains either inf, nan or element < 0". As T → 0 the tempered
    softmax goes to the argmax (hand limit), which is then the only token drawn."""
    logits = torch.tensor([3.0, 2.0, 2.9999, 0.0, -1.0])
    g = torch.Generator().manual_seed(0)
    for t in (1e-6, 1e-40, 1e-300, 5e-324):  # 1e-6: the runner-up is e^-100 times less likely
        assert {choose(logits, t, None, None, g) for _ in range(50)} == {0}
        assert {choose(logits, t, 2, 0.9, g) for _ in range(50)} == {0}
    model = decoders["llama_gqa"]
    greedy = model.generate(PROMPT, max_new_tokens=6, eos_token_ids=[]).new_ids
    assert model.generate(PROMPT, max_new_tokens=6, eos_token_ids=[], temperature=1e-40, seed=0).new_ids == greedy


@pytest.mark.parametrize("prompt", [None, 3, ["two", "texts"], b"bytes"])
def test_a_prompt_that_is_not_one_text_is_one_clear_error(decoders, prompt):
    """None raised TypeError ('NoneType' object is not iterable) from list(prompt); a list of texts
    (a batch, which generate does not take) on a model without a chat template was told to drop a
    chat=True it never passed."""
    model = decoders["llama_gqa"]  # no chat template
    with pytest.raises(InputError, match="generate takes one prompt: a text, or a list of chat messages"):
        model.generate(prompt, max_new_tokens=2)


def test_sampling_without_a_seed_leaves_the_global_random_state_alone(decoders):
    """torch.seed() reseeded torch's global generator: after torch.manual_seed(0), a sampled
    generation without a seed changed what torch.rand drew next in the caller's own code."""
    model = decoders["llama_gqa"]
    torch.manual_seed(0)
    expected = torch.rand(4)
    torch.manual_seed(0)
    a = model.generate(PROMPT, max_new_tokens=4, temperature=1.0, eos_token_ids=[])
    assert torch.equal(torch.rand(4), expected)
    b = model.generate(PROMPT, max_new_tokens=24, temperature=5.0, eos_token_ids=[])
    c = model.generate(PROMPT, max_new_tokens=24, temperature=5.0, eos_token_ids=[])
    assert len(a.new_ids) == 4 and b.new_ids != c.new_ids  # still a fresh seed each time


def test_numpy_numbers_are_taken_as_the_numbers_they_are(decoders):
    """np.int64(6) was refused with "max_new_tokens must be a positive integer, got np.int64(6)" and
    np.float32(0.5) with "temperature must be a number ≥ 0" (both are), as attnscope's other
    integer settings take NumPy's; they now give what the Python numbers give."""
    import numpy as np

    model = decoders["llama_gqa"]
    want = model.generate(PROMPT, max_new_tokens=6, temperature=0.5, top_k=20, top_p=0.75, seed=11, eos_token_ids=[])
    got = model.generate(PROMPT, max_new_tokens=np.int64(6), temperature=np.float32(0.5), top_k=np.int32(20),
                         top_p=np.float64(0.75), seed=np.uint64(11), eos_token_ids=[])
    assert got.new_ids == want.new_ids and got.settings == want.settings
    assert type(got.settings["seed"]) is int and type(got.settings["max_new_tokens"]) is int
    for bad in (np.int64(0), np.float64(2.0)):
        with pytest.raises(ConfigError, match="max_new_tokens must be a positive integer"):
            model.generate(PROMPT, max_new_tokens=bad)


def test_eos_token_ids_is_an_id_or_ids_of_the_vocabulary(decoders):
    """eos_token_ids=5 raised TypeError ('int' object is not iterable; transformers takes an int);
    "x", [-1] or an id past the vocabulary never matched a token, so the generation silently ran
    to max_new_tokens."""
    model = decoders["llama_gqa"]
    free = model.generate(PROMPT, max_new_tokens=10, eos_token_ids=[])
    stop = free.new_ids[3]
    one = model.generate(PROMPT, max_new_tokens=10, eos_token_ids=stop)
    assert one.new_ids == model.generate(PROMPT, max_new_tokens=10, eos_token_ids=[stop]).new_ids
    assert one.finish_reason == "eos" and one.new_ids[-1] == stop
    V = model.config.vocab_size
    for bad in ("x", [-1], [V], [1.0], None.__class__, [stop, "x"]):
        with pytest.raises(ConfigError, match=f"eos_token_ids must be a token id or a list of token ids, each from 0 to {V - 1}"):
            model.generate(PROMPT, max_new_tokens=2, eos_token_ids=bad)
