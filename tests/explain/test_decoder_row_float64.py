"""A decoder row's digits are the true ones (issue 23 item 2): SmolLM2's row from ``explain`` against
transformers' LlamaModel run in float64 — with the three steps that transformers' ``.double()`` model
still does in float32 made float64 here.

transformers (5.x, eager) computes in float32 even in a float64 model: the rotary frequencies
``inv_freq = 1/θ^(2i/d)`` and the angles ``p·inv_freq`` with their cos and sin (LlamaRotaryEmbedding),
RMSNorm (LlamaRMSNorm casts to float32) and the softmax (``softmax(dtype=float32)``). Those make its
raw scores differ from the float64 ones by ~1e-7 of their size (up to ~3e-5 on SmolLM2), which is the
reference's error, not attnscope's: with the three steps in float64 (the frequencies computed here as
θ^(−2i/d) in float64), the reference and attnscope's row agree to ~1e-15. This module checks both.

The reference uses transformers' own modules, matrix products, MLP and GQA layout on the GGUF file's
dequantized weights (exact; tests/models/test_gguf.py compares them with transformers' own reading).
Only the layers up to the row's are built (memory: ~0.6 GB in float64); attnscope's model is freed
before the reference is built.
"""

import gc
import re
import types
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
import torch

import attnscope
from attnscope.explain import explain
from tests.explain.reference import half_up
from tests.models.decoders.texts import CHINESE

transformers = pytest.importorskip("transformers")

LAYER, HEAD, POS = 12, 4, 40  # a Chinese row: query 40 of 65 tokens, k/v head 1 of 3
F64_NAME = "attnscope_float64_eager"


def _float64_eager(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Eager attention with the softmax in float64 and the causal mask applied here (a registered
    name without a mask function gets no mask from transformers). Records the raw scores."""
    g = query.shape[1] // key.shape[1]
    k = key.repeat_interleave(g, dim=1)  # (B, H, L, d): query head h reads k/v head h // g
    v = value.repeat_interleave(g, dim=1)
    raw = query @ k.transpose(2, 3)  # (B, H, L, L)
    n = raw.shape[-1]
    later = torch.ones(n, n, dtype=torch.bool).triu(1)
    w = torch.softmax((raw * scaling).masked_fill(later, float("-inf")), dim=-1)
    module.recorded = {"raw": raw, "weights": w, "z": w @ v}
    return (w @ v).transpose(1, 2).contiguous(), w


def _recording_stock_eager(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """transformers' own eager attention (float32 softmax), recording the raw scores."""
    from transformers.models.llama import modeling_llama as ML
    g = query.shape[1] // key.shape[1]
    module.recorded = {"raw": query @ key.repeat_interleave(g, dim=1).transpose(2, 3)}
    n = query.shape[2]
    mask = torch.zeros(n, n, dtype=query.dtype).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1),
                                                             torch.finfo(query.dtype).min)[None, None]
    return ML.eager_attention_forward(module, query, key, value, mask, scaling=scaling, dropout=dropout)


def _rope_float64(inv_freq):
    def forward(self, x, position_ids):
        angles = position_ids[..., None].to(torch.float64) * inv_freq  # (B, L, d/2)
        emb = torch.cat((angles, angles), dim=-1)  # (B, L, d)
        return emb.cos(), emb.sin()
    return forward


def _rms_float64(self, h):
    return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def _reference(ids: torch.Tensor) -> dict:
    """transformers' float64 row (LAYER, HEAD, POS): ``stock`` (its float32 steps kept) and ``fixed``
    (those steps in float64): raw scores (POS + 1,), and for ``fixed`` the weights and z (d,)."""
    from transformers import AttentionInterface

    from attnscope.models.gguf import load_gguf
    from attnscope.models.packages import package_model_path

    ck = load_gguf(package_model_path("smollm2-135m"), dtype=torch.float32, tokenizer=False, progress=False)
    config = dict(ck.config, num_hidden_layers=LAYER + 1)
    keep = {k[len("model."):]: v.to(torch.float64) for k, v in ck.state_dict.items()
            if k.startswith("model.") and not any(k.startswith(f"model.layers.{i}.") for i in range(LAYER + 1, 99))}
    del ck
    cfg = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = transformers.LlamaModel(cfg).to(torch.float64)
    model.load_state_dict(keep, strict=True, assign=True)
    model.eval()
    rot = model.rotary_emb
    rot.inv_freq = rot.compute_default_rope_parameters(cfg)[0]  # transformers' own (float32), for the stock run
    AttentionInterface.register(F64_NAME, _float64_eager)
    AttentionInterface.register("attnscope_recording_eager", _recording_stock_eager)
    attn = model.layers[LAYER].self_attn
    out = {}
    with torch.no_grad():
        model.config._attn_implementation = "attnscope_recording_eager"
        model(input_ids=ids, use_cache=False)
        out["stock"] = attn.recorded["raw"][0, HEAD, POS, :POS + 1].numpy().copy()
        d, base = cfg.head_dim, float(cfg.rope_parameters["rope_theta"])
        inv = torch.tensor(base, dtype=torch.float64) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
        rot.forward = types.MethodType(_rope_float64(inv), rot)
        for m in model.modules():
            if type(m).__name__ == "LlamaRMSNorm":
                m.forward = types.MethodType(_rms_float64, m)
        model.config._attn_implementation = F64_NAME
        model(input_ids=ids, use_cache=False)
        r = attn.recorded
        out["fixed"] = {"raw": r["raw"][0, HEAD, POS, :POS + 1].numpy().copy(),
                        "weights": r["weights"][0, HEAD, POS, :POS + 1].numpy().copy(),
                        "z": r["z"][0, HEAD, POS].numpy().copy(), "scaling": attn.scaling}
    del model, keep
    gc.collect()
    return out


@pytest.fixture(scope="module")
def rows():
    """attnscope's row (its float64 numbers and its Markdown), then transformers' (one model at a time)."""
    m = attnscope.load("smollm2-135m")
    ids = torch.tensor([m.encode(CHINESE).ids[0]])
    w = explain(text=CHINESE, model=m, layer=LAYER, head=HEAD, position=POS)
    ours = {k: np.asarray(w.values[k], dtype=np.float64) for k in ("scores", "scaled", "exp", "sum", "weights",
                                                                     "output_full")}
    ours["shift"], ours["md"] = float(w.meta["exp_shift"]), w.render("markdown")
    del m, w
    gc.collect()
    return ours, _reference(ids)


def _shows(text: str, x: float) -> bool:
    """Whether ``text`` (0.0006, or 1.1327e-5 for a small value) is ``x`` rounded half-up at its last digit."""
    shown = Decimal(text)
    unit = Decimal(1).scaleb(shown.as_tuple().exponent)
    return Decimal(repr(float(x))).quantize(unit, rounding=ROUND_HALF_UP) == shown


def _rel(a, b) -> float:
    """Largest difference relative to the largest magnitude of ``b``."""
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(b).max())


def test_the_row_equals_a_float64_run_of_transformers(rows):
    ours, ref = rows
    fixed = ref["fixed"]
    n = POS + 1
    assert _rel(ours["scores"][:n], fixed["raw"]) < 1e-10
    scaled = fixed["raw"] * fixed["scaling"]
    assert _rel(ours["scaled"][:n], scaled) < 1e-10
    e = np.exp(scaled - ours["shift"])
    assert _rel(ours["exp"][:n], e) < 1e-10
    assert abs(float(ours["sum"]) / e.sum() - 1) < 1e-10
    assert _rel(ours["weights"][:n], fixed["weights"]) < 1e-10
    assert _rel(ours["output_full"], fixed["z"]) < 1e-10
    # the digits shown (four decimals, half-up) are the float64 run's: Σ, and each key's e^s' and p
    md = ours["md"]
    sigma = re.search(r"## Step 7.*?\n  = (\S+)\n```", md, re.S)
    assert sigma is not None and sigma.group(1) == half_up(e.sum(), 4)
    table = dict((int(j), (x, p)) for j, x, p in re.findall(r"^\| (\d+) \| [^|]* \| (\S+) \| (\S+) \| \S+ \|$", md, re.M))
    assert sorted(table)[:n] == list(range(n))
    for j in range(n):
        assert _shows(table[j][0], e[j]) and _shows(table[j][1], fixed["weights"][j]), (j, table[j])


def test_transformers_double_model_is_the_one_that_is_off(rows):
    """transformers' ``.double()`` run keeps float32 frequencies, angles, RMSNorm and softmax: its raw
    scores are ~1e-7 of their size away from the float64 ones (the docs give the figures)."""
    ours, ref = rows
    n = POS + 1
    off = _rel(ref["stock"], ref["fixed"]["raw"])
    assert 1e-8 < off < 1e-5
    assert _rel(ours["scores"][:n], ref["fixed"]["raw"]) < off / 1e4
