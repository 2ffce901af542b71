"""A folder's generation_config.json says which tokens end a generation, and replaces config.json's
eos_token_id there, as transformers' ``generate`` reads it (Qwen2.5-Instruct: config.json names one
end token, generation_config.json two). Tiny GPT-2, BLOOM and Llama checkpoints written by
transformers; the reference is transformers' own greedy ``generate`` on the same folder."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import attnscope
from attnscope.errors import ModelLoadError
from attnscope.testing.tiny import tiny_bloom, tiny_gpt2
from tests.models.decoders.tiny import llama_gqa

PROMPT = "Cats and dogs like me? I like dogs"
BUILDERS = {"gpt2": tiny_gpt2, "bloom": tiny_bloom, "llama_gqa": llama_gqa}


def _hf_greedy(folder, prompt_ids, n):
    import transformers

    transformers.logging.set_verbosity_error()
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                           dtype=torch.float32).eval()
    ids = torch.tensor([prompt_ids])
    with torch.no_grad():  # the folder's generation config decides where it ends
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=n, pad_token_id=0)
    return out[0, ids.shape[1]:].tolist()


@pytest.mark.parametrize("name", list(BUILDERS))
def test_generation_config_eos_ends_it_as_in_transformers(name, tmp_path):
    folder = BUILDERS[name](tmp_path / "base")
    base = attnscope.load(folder)
    free = base.generate(PROMPT, max_new_tokens=12, eos_token_ids=[])
    stop = free.new_ids[4]
    copy = shutil.copytree(folder, tmp_path / "copy")
    first_eos = json.loads((copy / "config.json").read_text()).get("eos_token_id", 2)
    gen = json.loads((copy / "generation_config.json").read_text()) if (copy / "generation_config.json").exists() else {}
    (copy / "generation_config.json").write_text(json.dumps({**gen, "eos_token_id": [first_eos, stop]}))

    m = attnscope.load(copy)
    assert m.config.eos_token_ids == [first_eos, stop]
    g = m.generate(PROMPT, max_new_tokens=12)
    assert g.finish_reason == "eos" and g.new_ids == free.new_ids[: free.new_ids.index(stop) + 1]
    assert g.new_ids == _hf_greedy(copy, g.prompt_ids, 12)


def test_a_bad_generation_config_eos_is_named(tmp_path):
    folder = tiny_gpt2(tmp_path / "gpt2")
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": "end"}))
    with pytest.raises(ModelLoadError, match="generation_config.json.*eos_token_id"):
        attnscope.load(folder)
