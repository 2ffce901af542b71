"""Peak memory of ``analyze`` on a model streamed one layer at a time (``load(…, stream_layers=True)``).

    nice -n 19 python benchmarks/streaming.py [--models smollm2-135m gemma-3-270m] [--synthetic-dir /tmp]
                                              [--layers 16] [--no-synthetic] [--texts 4]

Each point runs in a fresh Python process (one torch thread): it imports attnscope (the *imports*
baseline), loads the model (*loaded*: what stays resident — the embeddings, the final norm, the
tokenizer; for a streamed model no layer), resets the kernel's high-water mark
(``/proc/self/clear_refs``), runs ``analyze`` on ``--texts`` short texts in one window
(``chunk_size = batch_size = texts``, no importance, norm shares or induction sequences), and reads
``VmHWM``: *cold* is the call's high-water mark above the memory before it, which includes
analyze's fixed costs — the tokenizer's, not the model's: two private copies of the tokenizer and a
punctuation table built over the vocabulary in Python (for Gemma's 262 144 tokens some 400 MB of
short-lived objects). Then it runs one forward pass over the window's padded batch alone (what
analyze runs per window, less its per-layer statistics): its high-water mark is the *peak*, one
layer's weights being read and the window's activations. The pass runs three times, each
measured from the memory before it (the state in which a long analysis runs its second and
later windows: what the allocator keeps of earlier passes is in that base, and a pass is measured
by what it adds); the median is the *pass peak*. The *activations* are the same pass on the
in-memory model (its peak: the window's activations, every weight resident already) or the
analyzer's own estimate of a batch in flight
(``analysis.analyzer.batch_bytes``: four B·H·L² matrices and eight B·L·max(d, d_ff) tensors),
whichever is larger; the synthetic model, which cannot be loaded whole, has the estimate alone. The
*ratio* is the pass's peak over one layer's weights (float32 bytes of the largest layer's
parameters) plus the activations.

The synthetic checkpoint is a Llama ``model.safetensors`` (hidden 4096, intermediate 11008, 32 heads,
vocabulary 32 000, ``--layers`` layers, random N(0, 0.02²) weights, float32) written tensor by tensor,
each in 64 MB pieces, so that the writer never holds more than a piece; with 16 layers it is 13.5 GB
(12.55 GiB), more than half of a 24 GiB machine. It is deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import bench_env  # first: sets the thread wait policy before torch starts

TEXTS = ["The cat sat on the mat because it was tired.",
         "Attention weights are a softmax over scaled dot products.",
         "A river bank is not the bank that holds your money.",
         "She read the book twice before she gave it back.",
         "The quick brown fox jumps over the lazy dog.",
         "Every token looks at the tokens before it.",
         "Queries and keys are rotated by their positions.",
         "A sliding window keeps each token's view short."]

_POINT = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
name, side, corpus, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def rss(key="VmRSS:"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024

import attnscope
from attnscope.analysis import analyze
from attnscope.analysis.analyzer import batch_bytes
imports = rss()
t0 = time.perf_counter()
model = attnscope.load(name, stream_layers=side == "stream")
load_s = time.perf_counter() - t0
loaded = rss()
layer = max(sum(p.numel() * p.element_size() for p in l.parameters()) for l in model.layers)  # bytes
texts = [t for t in open(corpus, encoding="utf-8").read().splitlines() if t.strip()][:n]
estimate = batch_bytes(model, model.encode(texts))

def reset():
    import gc
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS: a call's own peak from here
    return rss()

# 1. the whole analyze call, cold
base = reset()
t0 = time.perf_counter()
r = analyze(corpus, model, chunk_size=n, batch_size=n, lanes=1, max_texts=n, importance_texts=0, norm_texts=0,
            induction_seqs=0, progress=False)
seconds = time.perf_counter() - t0
cold = rss("VmHWM:") - base
# 2. one forward pass over the window alone (the pass analyze runs per window, without its setup)
batch = model.encode(texts)
passes = []
with torch.no_grad():
    for _ in range(3):  # the steady state of a long analysis: each window's pass after earlier ones
        base = reset()
        model(batch.input_ids, batch.attention_mask)
        passes.append(rss("VmHWM:") - base)
peak = sorted(passes)[1]
print(json.dumps({"imports": imports, "loaded": loaded, "cold": cold, "peak": peak, "passes": passes,
                  "layer": layer, "estimate": estimate, "seconds": seconds, "load_seconds": load_s,
                  "texts": r.counters["texts"], "tokens": r.counters["tokens"],
                  "entropy": r.means["entropy"].tolist()}))
"""


def point(name: str, side: str, corpus: Path, n: int) -> dict:
    """One fresh process: the numbers of ``_POINT`` (bytes, seconds), or {"error": …}."""
    return bench_env.fresh_process(_POINT, name, side, str(corpus), str(n))


# ----------------------------------------------------------------------------------------------
# the synthetic checkpoint

def llama_tensors(layers: int, d: int, ff: int, vocab: int) -> list[tuple[str, tuple[int, ...]]]:
    """(Hugging Face name, shape) of every tensor of a tied Llama, in file order."""
    out = [("model.embed_tokens.weight", (vocab, d))]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (d,))]
        out += [(f"{p}self_attn.{x}_proj.weight", (d, d)) for x in "qkvo"]
        out += [(p + "post_attention_layernorm.weight", (d,)), (p + "mlp.gate_proj.weight", (ff, d)),
                (p + "mlp.up_proj.weight", (ff, d)), (p + "mlp.down_proj.weight", (d, ff))]
    return out + [("model.norm.weight", (d,))]


def write_synthetic(folder: Path, layers: int, d: int = 4096, ff: int = 11008, vocab: int = 32000) -> int:
    """Write a random Llama checkpoint (config.json, tokenizer.json, model.safetensors) into ``folder``
    without holding more than one 64 MB piece of it; return the safetensors file's size in bytes."""
    import numpy as np
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    folder.mkdir(parents=True, exist_ok=True)
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": d,
              "intermediate_size": ff, "num_hidden_layers": layers, "num_attention_heads": 32,
              "num_key_value_heads": 32, "vocab_size": vocab, "max_position_embeddings": 2048,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True, "hidden_act": "silu",
              "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}
    (folder / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXTS * 4, trainer=trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<pad>", "<s>", "</s>", "<unk>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tok.save(str(folder / "tokenizer.json"))

    tensors = llama_tensors(layers, d, ff, vocab)
    header: dict = {}
    offset = 0
    for name, shape in tensors:
        n = int(np.prod(shape)) * 4
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the data starts 8-byte aligned
    rng = np.random.default_rng(0)
    piece = 16 << 20  # float32 values per write: 64 MB
    path = folder / "model.safetensors"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for _, shape in tensors:
            left = int(np.prod(shape))
            while left:
                k = min(piece, left)
                if len(shape) == 1:  # the norms' scales: 1
                    values = np.ones(k, dtype=np.float32)
                else:
                    values = rng.standard_normal(k, dtype=np.float32) * np.float32(0.02)
                f.write(values.tobytes())
                left -= k
    return path.stat().st_size


# ----------------------------------------------------------------------------------------------

def mb(x: float) -> str:
    return f"{x / 1e6:,.0f}"


def row(label: str, stream: dict, memory: dict | None, size: int) -> str:
    if "error" in stream:
        return f"| {label} | error: {stream['error']} |"
    measured = memory is not None and "error" not in memory
    act = max(stream["estimate"], memory["peak"]) if measured else stream["estimate"]
    bound = stream["layer"] + act
    return (f"| {label} | {mb(size)} | {mb(stream['loaded'] - stream['imports'])} | {mb(stream['layer'])} | "
            f"{mb(act)} | {mb(stream['peak'])} ({', '.join(mb(x) for x in stream['passes'])}) | "
            f"{stream['peak'] / bound:.2f} | {mb(stream['cold'])} | "
            f"{mb(memory['cold']) + ' / ' + mb(memory['peak']) if measured else '—'} | {stream['seconds']:.1f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=["smollm2-135m", "gemma-3-270m"])
    ap.add_argument("--texts", type=int, default=4, help="short texts analysed, in one window (default 4)")
    ap.add_argument("--synthetic-dir", default=tempfile.gettempdir(), help="where the synthetic checkpoint goes")
    ap.add_argument("--layers", type=int, default=16, help="layers of the synthetic checkpoint (default 16)")
    ap.add_argument("--no-synthetic", action="store_true")
    args = ap.parse_args(argv)
    print(bench_env.describe())
    work = Path(tempfile.mkdtemp(prefix="attnscope-streaming-"))
    corpus = work / "texts.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    rows = []
    try:
        for name in args.models:
            from attnscope.models.gguf_model import gguf_file_of
            size = gguf_file_of(name)[1].stat().st_size
            stream, memory = point(name, "stream", corpus, args.texts), point(name, "memory", corpus, args.texts)
            if "error" not in stream and "error" not in memory:
                same = stream["entropy"] == memory["entropy"]
                print(f"{name}: streamed statistics {'equal' if same else 'DIFFER from'} the in-memory ones; "
                      f"in memory: loaded {mb(memory['loaded'] - memory['imports'])} MB above imports")
            rows.append(row(name, stream, memory, size))
        if not args.no_synthetic:
            folder = Path(tempfile.mkdtemp(prefix="attnscope-synthetic-", dir=args.synthetic_dir))
            try:
                t0 = time.perf_counter()
                size = write_synthetic(folder, args.layers)
                print(f"synthetic Llama, {args.layers} layers: {size / 2**30:.2f} GiB written in "
                      f"{time.perf_counter() - t0:.0f} s to {folder}")
                rows.append(row(f"synthetic Llama ({args.layers} layers)", point(str(folder), "stream", corpus,
                                                                                 args.texts), None, size))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("| model | file MB | resident after load MB | one layer MB | activations MB | pass peak MB (3 passes) | "
          "peak / (layer + act.) | analyze call peak MB | in memory: call / pass peak MB | analyze s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
