"""An encoder–decoder model loaded without its tokenizer: token ids still run, a target text is a
clear error (it was an AttributeError from inside target_batch, which read the missing tokenizer's
max_length before encode could say what was wrong)."""

import pytest
import torch

import attnscope
from attnscope import InputError


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_a_target_text_without_a_tokenizer_is_a_clear_error(name, seq2seq, seq2seq_dirs):
    bare = attnscope.load(seq2seq_dirs[name], tokenizer=False)
    assert bare.tokenizer is None
    source = seq2seq[name].encode("The cat sat.")  # a Batch: the source needs no tokenizer
    with pytest.raises(InputError, match=r"has no tokenizer to read the target text with"):
        bare.trace(source, "Die Katze")
    with pytest.raises(InputError, match=r"has no tokenizer to read the target text with"):
        bare.logits(source, "Die Katze")
    # token ids need no tokenizer: the same hidden states as the model that has one
    ids = torch.tensor([[bare.config.decoder_start_token_id, 5, 6]])
    got = bare(source.input_ids, source.attention_mask, decoder_input_ids=ids)
    want = seq2seq[name](source.input_ids, source.attention_mask, decoder_input_ids=ids)
    assert torch.equal(got, want)
