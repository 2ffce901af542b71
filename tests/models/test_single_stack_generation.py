"""Generation of the causal single-stack language models (GPT-2: learned positions; BLOOM: ALiBi)
on tiny random checkpoints written by transformers, against transformers' eager models: greedy ids
equal ``generate(do_sample=False)``, the logits of every cached step (sampled tokens too) and the
attention of every generated token equal the full sequence's pass, the checkpoint's EOS stops it,
a request past GPT-2's 64 positions is one sentence, and ``attnscope generate`` runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import attnscope
from attnscope.errors import ConfigError, InputError
from attnscope.modules.kv_cache import KVCache
from attnscope.testing.tiny import tiny_bert, tiny_bloom, tiny_bloom_6heads, tiny_gpt2

PROMPT = "Cats and dogs like me? I like dogs"
BUILDERS = {"gpt2": tiny_gpt2, "bloom": tiny_bloom, "bloom_6heads": tiny_bloom_6heads}
TOL, LOGITS_TOL = 1e-5, 1e-4


def _hf(folder):
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                             dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def stacks(tmp_path_factory):
    root = tmp_path_factory.mktemp("single_stack_gen")
    out = {}
    for name, build in BUILDERS.items():
        folder = build(root / name)
        out[name] = (folder, attnscope.load(folder), _hf(folder))
    return out


def _hf_generate(hf, prompt_ids, n, **kw):
    ids = torch.tensor([prompt_ids])
    with torch.no_grad():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=n,
                          pad_token_id=0, **kw)
    return out[0, ids.shape[1]:].tolist()


@pytest.mark.parametrize("name", list(BUILDERS))
def test_greedy_ids_equal_transformers_generate(name, stacks):
    _, model, hf = stacks[name]
    g = model.generate(PROMPT, max_new_tokens=16, eos_token_ids=[])
    assert g.finish_reason == "length" and len(g.new_ids) == 16
    assert g.new_ids == _hf_generate(hf, g.prompt_ids, 16, min_new_tokens=16, eos_token_id=None)
    assert g.text == model.tokenizer.decode(g.new_ids)
    assert g.tokens[: g.n_prompt] == model.encode(PROMPT).tokens[0]


@pytest.mark.parametrize("name", list(BUILDERS))
@pytest.mark.parametrize("sample", [False, True])
def test_every_step_equals_transformers_full_pass(name, sample, stacks):
    """Each step's logits and attention (its query: the token before the new one; keys: all before
    it, from the cache) equal that row of transformers' eager pass over the whole sequence. Sampled
    tokens vary where the tiny BLOOM's greedy ones repeat: positions and ALiBi are tested on both."""
    _, model, hf = stacks[name]
    kw = dict(temperature=1.0, seed=7) if sample else {}
    n = 20
    g = model.generate(PROMPT, max_new_tokens=n, eos_token_ids=[], attentions=True, logits=True, **kw)
    if sample:
        assert len(set(g.new_ids)) >= 5  # varied tokens
    P = g.n_prompt
    with torch.no_grad():
        ref = hf(torch.tensor([g.ids]), output_attentions=True)
    H = model.config.n_heads
    for t in range(n):
        assert float((g.logits[t] - ref.logits[0, P - 1 + t]).abs().max()) <= LOGITS_TOL
        att = g.attentions[t]  # (n_layers, H, P + t)
        assert att.shape == (model.config.n_layers, H, P + t)
        want = torch.stack([a[0, :, P - 1 + t, : P + t] for a in ref.attentions])  # (n_layers, H, P + t)
        assert float((att - want).abs().max()) <= TOL


@pytest.mark.parametrize("name", list(BUILDERS))
def test_the_cache_equals_running_the_whole_prefix(name, stacks):
    """The prompt in one piece, then token by token over the cache: the hidden states of the last
    step equal one pass over the whole sequence (the model's own forward, no cache)."""
    _, model, _ = stacks[name]
    ids = model.encode(PROMPT).input_ids  # (1, L)
    cache = KVCache(model.config.n_layers)
    with torch.no_grad():
        model.decode(ids[:, :3], cache=cache)
        steps = [model.decode(ids[:, i:i + 1], cache=cache)[0, -1] for i in range(3, ids.shape[1])]
        full = model(ids)[0]  # (L, d)
    assert cache.length == ids.shape[1]
    for i, h in enumerate(steps):
        assert float((h - full[3 + i]).abs().max()) <= TOL


@pytest.mark.parametrize("name", list(BUILDERS))
def test_the_checkpoints_eos_stops_it(name, stacks, tmp_path):
    """config.json's eos_token_id (set to a token the model makes) ends the generation where
    transformers' generate ends, the EOS kept in new_ids and not in the text."""
    folder, model, _ = stacks[name]
    free = model.generate(PROMPT, max_new_tokens=12, eos_token_ids=[], temperature=1.0, seed=3)
    stop = free.new_ids[4]
    first = free.new_ids.index(stop)
    copy = tmp_path / name
    copy.mkdir()
    for f in Path(folder).iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((copy / "config.json").read_text())
    cfg["eos_token_id"] = stop
    (copy / "config.json").write_text(json.dumps(cfg))
    (copy / "generation_config.json").unlink(missing_ok=True)  # transformers would read its EOS there
    m = attnscope.load(copy)
    g = m.generate(PROMPT, max_new_tokens=12, temperature=1.0, seed=3)
    assert g.finish_reason == "eos" and g.new_ids == free.new_ids[: first + 1]
    assert g.text == m.tokenizer.decode(free.new_ids[:first])
    greedy = m.generate(PROMPT, max_new_tokens=12)
    assert greedy.new_ids == _hf_generate(_hf(copy), greedy.prompt_ids, 12)


def test_default_eos_is_the_checkpoints(stacks):
    from attnscope.models.generation import end_ids

    assert end_ids(stacks["gpt2"][1].config) == [stacks["gpt2"][2].config.eos_token_id] == [0]
    assert end_ids(stacks["bloom"][1].config) == [stacks["bloom"][2].config.eos_token_id] == [2]


def test_stream_and_seed(stacks):
    _, model, _ = stacks["gpt2"]
    pieces: list = []
    g = model.generate(PROMPT, max_new_tokens=12, eos_token_ids=[], temperature=1.0, seed=1, stream=pieces.append)
    assert "".join(pieces) == g.text.rstrip("\ufffd") and pieces
    again = model.generate(PROMPT, max_new_tokens=12, eos_token_ids=[], temperature=1.0, seed=1)
    other = model.generate(PROMPT, max_new_tokens=12, eos_token_ids=[], temperature=1.0, seed=2)
    assert again.new_ids == g.new_ids != other.new_ids
    one = model.generate(PROMPT, max_new_tokens=12, eos_token_ids=[], temperature=0.7, top_k=1, seed=5)
    assert one.new_ids == model.generate(PROMPT, max_new_tokens=12, eos_token_ids=[]).new_ids


def test_too_long_and_other_refusals(stacks, tmp_path):
    _, model, _ = stacks["gpt2"]  # 64 learned positions
    P = len(model.encode(PROMPT).input_ids[0])
    assert len(model.generate(PROMPT, max_new_tokens=64 - P, eos_token_ids=[]).new_ids) == 64 - P  # the last that fits
    with pytest.raises(ConfigError, match=rf"max_new_tokens = {65 - P} after a {P}-token prompt passes the model's "
                                          rf"context of 64 positions; at most {64 - P} new tokens fit"):
        model.generate(PROMPT, max_new_tokens=65 - P)
    cache = KVCache(model.config.n_layers)
    model.decode(torch.zeros(1, 60, dtype=torch.long), cache=cache)
    with pytest.raises(InputError, match="^65 positions are more than the model's context of 64$"):
        model.decode(torch.zeros(1, 5, dtype=torch.long), cache=cache)
    with pytest.raises(InputError, match="has no chat template"):
        model.generate(PROMPT, chat=True)
    bert = attnscope.load(tiny_bert(tmp_path / "bert"))
    with pytest.raises(InputError, match=r"^model 'bert' \(bert\) does not generate text: generate needs a causal"):
        bert.generate("hello")


def _cli(*argv):
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(Path(attnscope.__file__).parents[1]))
    return subprocess.run([sys.executable, "-m", "attnscope", "generate", *argv], capture_output=True, text=True,
                          env=env, timeout=300)


def test_cli_generate(stacks, tmp_path):
    folder, model, _ = stacks["bloom_6heads"]
    g = model.generate(PROMPT, max_new_tokens=8)
    page = tmp_path / "gen.html"
    r = _cli(PROMPT, "--model", str(folder), "--max-new-tokens", "8", "--view", str(page))
    assert r.returncode == 0, r.stderr
    assert r.stdout == g.text + "\n" and page.stat().st_size > 0
    folder, model, _ = stacks["gpt2"]
    s = model.generate(PROMPT, max_new_tokens=6, temperature=0.9, top_p=0.9, seed=4)
    r = _cli(PROMPT, "--model", str(folder), "--max-new-tokens", "6", "--temperature", "0.9", "--top-p", "0.9",
             "--seed", "4")
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip("\n") == s.text.rstrip("\ufffd")
    r = _cli(PROMPT, "--model", str(folder), "--max-new-tokens", "100")
    assert r.returncode != 0 and "at most" in r.stderr and len(r.stderr.strip().splitlines()) == 1
