"""transformers' outputs on the two real GGUF models, the reference of the real-model decoder tests.

For each model (transformers' own GGUF reading, eager attention) and each text of
:mod:`tests.models.decoders.texts`, in float32 and in float64 (``.double()`` of the same weights):

* ``ids``: transformers' token ids of the text;
* ``budget``: transformers' own float32 error, the largest |float32 − float64| over *every*
  attention weight and hidden state, and over the logits of the sampled rows (``max_abs_diff``;
  every logit of a 631-token Gemma text is 1.3 GB in float64, and the tests compare logits only at
  those rows);
* samples of both runs at a few query rows (``rows``: spread over the text, the last ones
  included): attention weights ``(layers, H, R, L)``, hidden states ``(layers + 1, R, d)``, logits
  ``(R_logits, V)`` — the full tensors of a 630-token text would be hundreds of MB;
* greedy continuations (``generate(do_sample=False)``) of a few prompts.

Memory: computed in a process of its own (:func:`compute_in_subprocess`), so that a test worker
never holds transformers' float64 Gemma (2.1 GB of weights alone); there, float32 first (its runs
and its generations), then the same weights cast to float64 in place (a float64 copy beside the
float32 model, and every logit, took 8 GB in the worker).

transformers needs 35–90 s to read each file, so this is computed once and kept in pytest's cache
(``.pytest_cache/d/attnscope-decoder-reference``), keyed by the file (size, mtime), the versions of
transformers and gguf, and the texts; ``pytest --cache-clear`` or ATTNSCOPE_REFRESH_REFERENCE=1
recomputes it. Nothing here comes from attnscope.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch

from tests.models.decoders.reference import hf_gguf_model, hf_gguf_tokenizer
from tests.models.decoders.texts import CHINESE, ENGLISH, LONG
from tests.models.decoders.tiny import hf_run, max_abs_diff

TEXTS = {"en": ENGLISH, "zh": CHINESE, "long": LONG}
#: greedy continuations: (prompt, chat?) per model
PROMPTS = {
    "smollm2-135m": [("What is the capital of France?", True), ("The capital of France is", False),
                     ("我喜欢人工智能，因为", False)],
    "gemma-3-270m": [("The capital of France is", False), ("我喜欢人工智能，因为", False)],
}
NEW_TOKENS = 24


def sample_rows(n: int, k: int = 12) -> list[int]:
    """k query rows spread over n positions, the first and the last three included."""
    rows = set(np.linspace(0, n - 1, k).round().astype(int).tolist()) | {max(0, n - 3), max(0, n - 2), n - 1}
    return sorted(rows)


def logit_rows(n: int) -> list[int]:
    return sorted({0, n // 2, max(0, n - 2), n - 1})


def _key(name: str, path: Path) -> str:
    from importlib.metadata import version

    import transformers

    st = path.stat()
    probe = hashlib.sha256(json.dumps([TEXTS, PROMPTS.get(name), NEW_TOKENS]).encode()).hexdigest()[:12]
    # v2: the logits' budget at the sampled rows only
    return f"v2-{name}-{st.st_size}-{st.st_mtime_ns}-tf{transformers.__version__}-gguf{version('gguf')}-{probe}"


def compute(name: str, path: Path) -> tuple[dict, dict]:
    """``(meta, arrays)`` (see the module docstring)."""
    import gc

    model = hf_gguf_model(path)
    tok = hf_gguf_tokenizer(path)
    meta: dict = {"texts": {}, "generate": []}
    arrays: dict = {}
    runs32: dict = {}
    for label, text in TEXTS.items():
        ids = torch.tensor([tok(text).input_ids])
        n = ids.shape[1]
        rows, lrows = sample_rows(n), logit_rows(n)
        meta["texts"][label] = {"ids": ids[0].tolist(), "rows": rows, "logit_rows": lrows}
        runs32[label] = hf_run(model, ids, logits_to_keep=torch.tensor(lrows))
    for prompt, chat in PROMPTS.get(name, []):
        if chat:
            ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                          return_tensors="pt", return_dict=True)["input_ids"]
        else:
            ids = torch.tensor([tok(prompt).input_ids])
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS, do_sample=False,
                                 pad_token_id=tok.pad_token_id)
        new = out[0, ids.shape[1]:].tolist()
        meta["generate"].append({"prompt": prompt, "chat": chat, "prompt_ids": ids[0].tolist(), "new_ids": new,
                                 "text": tok.decode(new, skip_special_tokens=True)})
    model.double()  # in place, one weight at a time: the float32 weights go as their float64 twins come
    gc.collect()
    for label, t in meta["texts"].items():
        r32, rows = runs32.pop(label), t["rows"]
        r64 = hf_run(model, torch.tensor([t["ids"]]), dtype=torch.float64, logits_to_keep=torch.tensor(t["logit_rows"]))
        t["budget"] = max_abs_diff(r32, r64)
        for prec, r in (("32", r32), ("64", r64)):
            arrays[f"{label}.attn{prec}"] = torch.stack([a[0][:, rows] for a in r["attentions"]]).numpy()
            arrays[f"{label}.hidden{prec}"] = torch.stack([h[0][rows] for h in r["hidden_states"]]).numpy()
            arrays[f"{label}.logits{prec}"] = r["logits"][0].numpy()
        del r32, r64
        gc.collect()
    return meta, arrays


def reference(config, name: str, path: Path) -> tuple[dict, dict]:
    """The cached reference of model ``name`` (computed under a lock, for one pytest worker, by a
    process of its own)."""
    import fcntl

    cache = getattr(config, "cache", None)
    root = Path(cache.mkdir("attnscope-decoder-reference")) if cache is not None else None
    if root is None:  # pytest's cache disabled: compute every time
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            return compute_in_subprocess(name, path, Path(tmp) / "meta.json", Path(tmp) / "arrays.npz")
    key = _key(name, path)
    meta_f, arr_f = root / f"{key}.json", root / f"{key}.npz"
    refresh = os.environ.get("ATTNSCOPE_REFRESH_REFERENCE") == "1"
    with open(root / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if meta_f.is_file() and arr_f.is_file() and not refresh:
            try:
                with np.load(arr_f) as z:
                    return json.loads(meta_f.read_text()), {k: z[k] for k in z.files}
            except (ValueError, OSError):
                pass
        return compute_in_subprocess(name, path, meta_f, arr_f)


def save(meta: dict, arrays: dict, meta_f: Path, arr_f: Path) -> None:
    tmp = arr_f.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, arr_f)
    tmp = meta_f.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, meta_f)


def compute_in_subprocess(name: str, path: Path, meta_f: Path, arr_f: Path) -> tuple[dict, dict]:
    """:func:`compute` in a new Python process that writes ``meta_f`` and ``arr_f``; read back."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    r = subprocess.run([sys.executable, "-m", "tests.models.decoders.real_reference", name, str(path), str(meta_f),
                        str(arr_f)], cwd=root, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, f"transformers' reference of {name} failed:\n{r.stderr[-3000:]}"
    with np.load(arr_f) as z:
        return json.loads(meta_f.read_text()), {k: z[k] for k in z.files}


if __name__ == "__main__":  # python -m tests.models.decoders.real_reference NAME GGUF META.json ARRAYS.npz
    import sys

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    torch.set_num_threads(max(1, int(os.environ.get("ATTNSCOPE_TEST_THREADS", "1"))))  # as in a test worker
    save(*compute(sys.argv[1], Path(sys.argv[2])), Path(sys.argv[3]), Path(sys.argv[4]))
