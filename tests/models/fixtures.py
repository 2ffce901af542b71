"""Session fixtures shared by tests/models and tests/trace: the packaged MiniLM, tiny random
checkpoints written by transformers (one per family), and the transformers models that read them."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

import attnscope
from attnscope.testing import tiny as testing

FAMILIES = ("bert", "bert-chinese", "roberta", "gpt2")


def tiny_families() -> dict[str, testing.TinyFamily]:
    """Every registered tiny checkpoint (:data:`attnscope.testing.tiny.FAMILIES`): those of
    attnscope.testing.tiny and those of every tests/models/*/tiny.py, imported here (importing one
    registers its builders), so that a builder registered in any of them reaches the family battery."""
    for path in sorted(Path(__file__).resolve().parent.glob("*/tiny.py")):
        importlib.import_module(f"tests.models.{path.parent.name}.tiny")
    return dict(testing.FAMILIES)


@pytest.fixture(scope="session")
def minilm():
    return attnscope.load()


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {name: build(root / name) for name, build in testing.BUILDERS.items()}


@pytest.fixture(scope="session")
def tiny_models(tiny_dirs):
    return {name: attnscope.load(path) for name, path in tiny_dirs.items()}


def hf_class(name: str):
    import transformers
    return {"bert": transformers.BertModel, "bert-chinese": transformers.BertModel,
            "roberta": transformers.RobertaModel, "gpt2": transformers.GPT2LMHeadModel,
            "minilm": transformers.BertModel}[name]


@pytest.fixture(scope="session")
def hf_models(tiny_dirs):
    """transformers' own eager-attention models of the same folders (the reference)."""
    import transformers
    transformers.logging.set_verbosity_error()
    dirs = dict(tiny_dirs, minilm=attnscope.models.default_model_path())
    cache = {}

    def get(name: str):
        if name not in cache:
            cache[name] = hf_class(name).from_pretrained(str(dirs[name]), attn_implementation="eager").eval()
        return cache[name]
    return get


def hf_forward(hf, batch):
    """Hidden states and attentions of a transformers model on an attnscope Batch."""
    kw = dict(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
              output_hidden_states=True, output_attentions=True)
    if "token_type_ids" in hf.forward.__code__.co_varnames and hf.config.model_type == "bert":
        kw["token_type_ids"] = batch.token_type_ids
    with torch.no_grad():
        return hf(**kw)
