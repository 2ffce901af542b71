"""RoPE frequencies of every scaling kind equal transformers' own ROPE_INIT_FUNCTIONS (the code
its Llama models run), dynamic NTK scaling included at lengths past max_position_embeddings —
which attnscope's models refuse as text, so the frequencies are checked directly here."""

import pytest
import torch
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from attnscope.positions import rope_inv_freq

HEAD_DIM, MAX = 16, 128
CASES = {
    "linear": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0},
    "llama3": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
}


def _config(rope):
    return LlamaConfig(hidden_size=HEAD_DIM * 4, num_attention_heads=4, head_dim=HEAD_DIM,
                       max_position_embeddings=MAX, rope_parameters=dict(rope))


@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.parametrize("seq_len", [None, 64, MAX, 3 * MAX + 5])
def test_inverse_frequencies_equal_transformers(kind, seq_len):
    rope = CASES[kind]
    want, _ = ROPE_INIT_FUNCTIONS[kind](_config(rope), torch.device("cpu"), seq_len=seq_len)
    got = rope_inv_freq(HEAD_DIM, rope["rope_theta"], rope, seq_len=seq_len, max_positions=MAX)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want.float(), rtol=0, atol=0)


def test_dynamic_scaling_changes_the_base_only_past_the_limit():
    rope = CASES["dynamic"]
    plain = rope_inv_freq(HEAD_DIM, 10000.0, None)
    assert torch.equal(rope_inv_freq(HEAD_DIM, 10000.0, rope, seq_len=MAX, max_positions=MAX), plain)
    longer = rope_inv_freq(HEAD_DIM, 10000.0, rope, seq_len=2 * MAX, max_positions=MAX)
    assert (longer[1:] < plain[1:]).all()  # a larger base: every frequency but the first slows down


@pytest.mark.parametrize("theta", [10000.0, 500000.0])
def test_dynamic_tables_past_the_limit_are_transformers_own(theta):
    # transformers' rotary module recomputes the speeds from seq_len = max(position_ids) + 1, a
    # tensor, so its new base is float32 tensor arithmetic; attnscope's Rotary did it in Python
    # floats (float64), one float32 ulp away for some lengths (2.3e-10 on a speed, 2.4e-7 on a cos)
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from attnscope.positions import Rotary
    rope = dict(CASES["dynamic"], rope_theta=theta)
    theirs = LlamaRotaryEmbedding(_config(rope))
    ours = Rotary(HEAD_DIM, theta, rope, max_positions=MAX)
    for n in (MAX + 1, 3 * MAX + 5, 1000, 4001):  # growing: transformers keeps the speeds of its longest text
        pos = torch.arange(n)[None]  # (1, n)
        cos, sin = theirs(torch.zeros(1, n, HEAD_DIM), pos)  # (1, n, d)
        c, s = ours.cos_sin(pos, torch.float32)  # (1, 1, n, d), s with its first half negated
        assert torch.equal(ours.frequencies(pos), theirs.inv_freq), n
        assert torch.equal(c[:, 0], cos) and torch.equal(s[:, 0].abs(), sin.abs()), n
