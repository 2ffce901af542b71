"""transformers' own reading of the two real GGUF models, the reference of the GGUF tests.

transformers needs about 90 s to load Gemma 3 270M's GGUF (model and tokenizer) and 35 s for
SmolLM2's, so what the tests compare against is computed once and kept in pytest's cache
(``.pytest_cache/d/attnscope-gguf-reference``), keyed by the file (size, mtime), the versions of
transformers and gguf, and the probe texts: a SHA-256 per tensor of transformers' float32 state
dict, its config, its token ids and decoded text for each probe, its chat-template rendering and
the parts of its tokenizer.json. ``pytest --cache-clear`` (or ATTNSCOPE_REFRESH_REFERENCE=1)
recomputes it. Nothing here comes from attnscope.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch

#: probe texts: English, Chinese, emoji (one with joiners), whitespace runs, special-token text,
#: digits, accents, leading/trailing spaces, the empty text
PROBES = [
    "Hello world! The capital of France is Paris.",
    "我喜欢人工智能",
    "北京是中国的首都，我爱北京。",
    "emoji 🤗🚀 and a family 👩‍👩‍👧 ok",
    "  two  spaces\n\n\ttab   end  ",
    "x" * 50 + " " * 17 + "y",
    "<|im_start|>user\nhi<|im_end|>\n<|endoftext|>",
    "<start_of_turn>user\nhi<end_of_turn>\n<bos>x<eos>",
    "It's 2017: 3.14159, 1,000,000 people and 42nd street",
    "année über naïve café Straße",
    " leading space",
    "trailing space ",
    "\u00a0non-breaking\u00a0space",
    "<unused5> <mask> [multimodal] <pad>",
    "",
]
CHAT = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "我喜欢人工智能"}],
]


def tensor_digest(t: torch.Tensor) -> str:
    """SHA-256 of a tensor's float32 bytes (equal digests ⟺ bitwise-equal tensors)."""
    return hashlib.sha256(t.detach().to(torch.float32).contiguous().numpy().tobytes()).hexdigest()


def _key(path: Path) -> str:
    from importlib.metadata import version

    import transformers

    st = path.stat()
    probe = hashlib.sha256(json.dumps([PROBES, CHAT]).encode()).hexdigest()[:12]
    return f"{path.name}-{st.st_size}-{st.st_mtime_ns}-tf{transformers.__version__}-gguf{version('gguf')}-{probe}"


def hf_gguf_model(path: Path):
    """transformers' model of a GGUF file (float32, eager attention, eval mode)."""
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="eager").eval()


def hf_gguf_tokenizer(path: Path):
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def compute_reference(path: Path) -> dict:
    model = hf_gguf_model(path)
    sd = model.state_dict()
    tensors = {k: [list(v.shape), str(v.dtype), tensor_digest(v)] for k, v in sd.items()}
    tied = bool(model.config.tie_word_embeddings) and \
        sd["lm_head.weight"].data_ptr() == sd["model.embed_tokens.weight"].data_ptr()
    config = json.loads(model.config.to_json_string(use_diff=False))
    del model, sd
    tok = hf_gguf_tokenizer(path)
    ids = {s: tok(s).input_ids for s in PROBES}
    decoded = {s: tok.decode(ids[s]) for s in PROBES}
    chat = None
    if getattr(tok, "chat_template", None):
        chat = [[tok.apply_chat_template(m, tokenize=False, add_generation_prompt=g) for g in (False, True)]
                for m in CHAT]
    backend = json.loads(tok.backend_tokenizer.to_str())
    parts = {k: backend[k] for k in ("normalizer", "pre_tokenizer", "post_processor", "decoder")}
    model_json = backend["model"]
    parts["model"] = {k: v for k, v in model_json.items() if k not in ("vocab", "merges")}
    parts["vocab_sha"] = hashlib.sha256(json.dumps(model_json["vocab"], sort_keys=True).encode()).hexdigest()
    parts["merges_sha"] = hashlib.sha256(json.dumps(model_json.get("merges")).encode()).hexdigest()
    parts["added_tokens"] = hashlib.sha256(json.dumps(backend["added_tokens"], sort_keys=True).encode()).hexdigest()
    return {"tensors": tensors, "lm_head_tied": tied, "config": config, "ids": ids, "decoded": decoded,
            "chat": chat, "chat_template": getattr(tok, "chat_template", None), "tokenizer_json": parts,
            "special": {"bos": tok.bos_token_id, "eos": tok.eos_token_id, "pad": tok.pad_token_id,
                        "unk": tok.unk_token_id}}


def tokenizer_json_parts(backend) -> dict:
    """The same summary of an attnscope-built ``tokenizers.Tokenizer``."""
    j = json.loads(backend.to_str())
    parts = {k: j[k] for k in ("normalizer", "pre_tokenizer", "post_processor", "decoder")}
    parts["model"] = {k: v for k, v in j["model"].items() if k not in ("vocab", "merges")}
    parts["vocab_sha"] = hashlib.sha256(json.dumps(j["model"]["vocab"], sort_keys=True).encode()).hexdigest()
    parts["merges_sha"] = hashlib.sha256(json.dumps(j["model"].get("merges")).encode()).hexdigest()
    parts["added_tokens"] = hashlib.sha256(json.dumps(j["added_tokens"], sort_keys=True).encode()).hexdigest()
    return parts


def reference(config, path: Path, *, fresh: bool = False) -> dict:
    """The cached reference of ``path`` (computed under a lock by one pytest worker)."""
    import fcntl

    if getattr(config, "cache", None) is None:  # pytest -p no:cacheprovider: no cache, compute each time
        return reference_in_subprocess(path)
    root = Path(config.cache.mkdir("attnscope-gguf-reference"))
    f = root / (_key(path) + ".json")
    refresh = fresh or os.environ.get("ATTNSCOPE_REFRESH_REFERENCE") == "1"
    with open(root / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if f.is_file() and not refresh:
            try:
                return json.loads(f.read_text())
            except ValueError:
                pass
        ref = reference_in_subprocess(path)
        tmp = f.with_suffix(".tmp")
        tmp.write_text(json.dumps(ref))
        os.replace(tmp, f)
        return ref


def reference_in_subprocess(path: Path) -> dict:
    """:func:`compute_reference` in a new Python process: transformers' float32 Gemma takes about
    2.5 GB while it loads, which a test worker then keeps (glibc holds freed pages)."""
    import subprocess
    import sys
    import tempfile

    root = Path(__file__).resolve().parents[3]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "reference.json"
        r = subprocess.run([sys.executable, "-m", "tests.models.decoders.reference", str(path), str(out)], cwd=root,
                           capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, f"transformers' reference of {path.name} failed:\n{r.stderr[-3000:]}"
        return json.loads(out.read_text())


if __name__ == "__main__":  # python -m tests.models.decoders.reference GGUF OUT.json
    import sys

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    Path(sys.argv[2]).write_text(json.dumps(compute_reference(Path(sys.argv[1]))))
