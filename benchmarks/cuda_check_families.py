"""The families and methods parts of benchmarks/cuda_check.py: what a model does on a CUDA device.

The real models' packages are larger than what can travel to a GPU machine, so these parts use the
family battery's tiny checkpoints (every builder registered with
:func:`attnscope.testing.tiny.tiny_family`, those of tests/models/*/tiny.py included), written there
by that machine's ``transformers``.

``check_families(dev, record)``, for every registered family:
  parity    ``attnscope.load(folder, device=dev)`` against transformers' eager model on ``dev``:
            every layer's hidden states and attention weights (≤ 1e-5), the plain (fused) forward
            (≤ 1e-5) and the logits (≤ 1e-4), one text and a padded batch of two; pairs: both
            stacks, self- and cross-attention
  float64   the float64 reference (on the CPU) against the CUDA trace, every traced name
            (≤ 1e-5 relative to the step's largest value)
  bfloat16  the model loaded in bfloat16 on ``dev``: its last hidden state no further from the
            float64 reference than 2 × transformers' bfloat16 eager model + 4 steps of bfloat16

``check_methods(dev, record)``, on a tiny encoder (BERT), decoders (Llama, Gemma 3, BLOOM) and an
encoder–decoder (T5): each public method run with the model on ``dev``
gives what it gives with the model on the CPU (the CPU results are checked against independent
references by the test suite): every attribution method, the logit lens, direct logit
attribution, QK/OV circuits and the copying score, head and residual patching, ``analyze``,
greedy generation (the same tokens), ``explain`` row and ``--path`` (the same document) and the
viewer's data (every layer's q and k). A method that refuses a model must refuse it on both devices with the same sentence.
"""

from __future__ import annotations

import re
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Callable

import torch

Record = Callable[[str, str, float, float], None]
FLOAT_DIFF = re.compile(r"\d\.\de-\d\d")  # a float32-vs-float64 difference as explain writes it
METHOD_FAMILIES = ("bert", "llama_gqa", "gemma3", "bloom", "t5")


def _err(a, b) -> float:
    """max |a − b| relative to max(1, |a|), with infinities equal where both have them."""
    a, b = torch.as_tensor(a).detach().double().cpu(), torch.as_tensor(b).detach().double().cpu()
    if a.shape != b.shape:
        return float("inf")
    if a.numel() == 0:
        return 0.0
    fin = torch.isfinite(a)
    if not torch.equal(fin, torch.isfinite(b)) or not torch.equal(a[~fin].nan_to_num(0.0), b[~fin].nan_to_num(0.0)):
        return float("inf")  # an infinity, or a NaN (a statistic a model does not have), where the other has none
    if not fin.any():
        return 0.0
    return float((a[fin] - b[fin]).abs().max()) / max(1.0, float(a[fin].abs().max()))


class _OnDevice:
    """A trace's input tensors moved to ``dev`` (a trace keeps them on the CPU), for transformers."""

    def __init__(self, tr, dev) -> None:
        for name in ("input_ids", "attention_mask", "decoder_input_ids", "decoder_attention_mask"):
            setattr(self, name, getattr(tr, name).to(dev))


def _families():
    from tests.models.fixtures import tiny_families
    return tiny_families()


def _hf(fam, folder, dev, dtype=torch.float32):
    import transformers
    return getattr(transformers, fam.hf_class).from_pretrained(str(folder), attn_implementation="eager",
                                                              dtype=dtype).to(dev).eval()


def check_families(dev, record: Record, root: Path) -> None:
    import transformers

    import attnscope
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    for name, fam in _families().items():
        folder = fam.build(root / name)
        try:
            model = attnscope.load(folder, device=dev)
            hf = _hf(fam, folder, dev)
            for lang in fam.lang.split("+"):
                for single in (True, False):
                    _parity(record, fam, model, hf, dev, single, lang)
            _float64(record, fam, model, folder)
            _bfloat16(record, fam, folder, dev)
        except Exception as e:  # noqa: BLE001 - one family's failure is reported, the others still run
            record("families", f"{name}: raised {type(e).__name__}: {str(e).splitlines()[0][:100]}",
                   float("inf"), 0.0)


def _parity(record: Record, fam, model, hf, dev, single: bool, lang: str) -> None:
    from tests.models.battery import LOGITS_TOL, TOL, hf_one_text, hf_pair, hidden_names, texts_of
    label = f"{fam.name} {lang} {'one text' if single else 'padded batch'} on {dev}"
    if fam.reads == "pair":
        sources, targets = texts_of(fam, lang)
        n = 1 if single else 2
        c = model.config
        enc = ["encoder.embed.out"] + [f"encoder.layers.{i}.out" for i in range(c.n_layers)]
        dec = ["decoder.embed.out"] + [f"decoder.layers.{i}.out" for i in range(c.n_decoder_layers)]
        if "final_norm" in fam.names:
            enc[-1], dec[-1] = "encoder.final_norm", "decoder.final_norm"
        tr = model.trace(sources[:n], targets[:n], names=enc + dec + ["*.attn.weights", "*.self_attn.weights",
                                                                         "*.cross_attn.weights"])
        ref = hf_pair(hf, _OnDevice(tr, dev))
        hidden = max(_err(tr[o][b, :S if o.startswith("encoder.") else T], t[b, :S if o.startswith("encoder.") else T])
                     for b, (S, T) in enumerate(zip(tr.lengths, tr.target_lengths))
                     for o, t in [*zip(enc, ref.encoder_hidden_states), *zip(dec, ref.decoder_hidden_states)])
        weights = max(_err(tr[f"{s}.layers.{i}.{a}.weights"][b, :, :T if s == "decoder" else S, :T if a == "self_attn" else S],
                           w[b, :, :T if s == "decoder" else S, :T if a == "self_attn" else S])
                      for b, (S, T) in enumerate(zip(tr.lengths, tr.target_lengths))
                      for s, a, ws in (("encoder", "attn", ref.encoder_attentions),
                                       ("decoder", "self_attn", ref.decoder_attentions),
                                       ("decoder", "cross_attn", ref.cross_attentions))
                      for i, w in enumerate(ws))
        with torch.no_grad():
            plain, logits = model.run(sources[:n], targets[:n]), model.logits(sources[:n], targets[:n])
        lengths, last, hf_logits = tr.target_lengths, ref.decoder_hidden_states[-1], ref.logits
    else:
        texts = texts_of(fam, lang)[: 1 if single else 2]
        names = hidden_names(fam, model)
        tr = model.trace(texts, names=names + ["layers.*.attn.weights"])
        hs, attentions, hf_logits = hf_one_text(hf, model, model.encode(texts).to(dev))
        hidden = max(_err(tr[o][b, :n], t[b, :n]) for b, n in enumerate(tr.lengths) for o, t in zip(names, hs))
        weights = max(_err(tr[f"layers.{i}.attn.weights"][b, :, :n, :n], w[b, :, :n, :n])
                      for b, n in enumerate(tr.lengths) for i, w in enumerate(attentions))
        with torch.no_grad():
            plain = model.run(texts)
            logits = model.logits(texts) if fam.lm_head else None
        lengths, last = tr.lengths, hs[-1]
    record("families", f"{label}: every layer's hidden states", hidden, TOL)
    record("families", f"{label}: every head's attention weights", weights, TOL)
    record("families", f"{label}: plain (fused) forward", max(_err(plain[b, :n], last[b, :n])
                                                             for b, n in enumerate(lengths)), TOL)
    if fam.lm_head:
        record("families", f"{label}: logits", max(_err(logits[b, :n], hf_logits[b, :n]) for b, n in enumerate(lengths)),
               LOGITS_TOL)


def _float64(record: Record, fam, model, folder) -> None:
    from tests.models.battery import TOL, float64_forward, reference_name, step_error
    f, tr = float64_forward(fam, model)  # the reference reads the weights back to the CPU in float64
    worst = max(step_error(f[reference_name(n)], tr[n][0]) for n in model.hook_names)
    record("families", f"{fam.name}: float64 reference vs the {model.device.type} trace, "
                       f"{len(model.hook_names)} names", worst, TOL)


def _bfloat16(record: Record, fam, folder, dev) -> None:
    import attnscope
    from tests.models.battery import hf_one_text, hf_pair, texts_of
    ref = attnscope.load(folder, dtype=torch.float64)
    ours = attnscope.load(folder, device=dev, dtype=torch.bfloat16)
    hf = _hf(fam, folder, dev, torch.bfloat16)
    if fam.reads == "pair":
        sources, targets = texts_of(fam)
        with torch.no_grad():
            want, got = ref.run(sources[:1], targets[:1])[0], ours.run(sources[:1], targets[:1])[0]
        tr = ours.trace(sources[:1], targets[:1], names=["encoder.embed.out"])
        theirs = hf_pair(hf, _OnDevice(tr, dev)).decoder_hidden_states[-1][0]
    else:
        text = texts_of(fam)[:1]
        with torch.no_grad():
            want, got = ref.run(text)[0], ours.run(text)[0]
        theirs = hf_one_text(hf, ours, ours.encode(text).to(dev))[0][-1][0]  # after the final norm, as run()
    eps = torch.finfo(torch.bfloat16).eps
    scale = float(want.abs().max())
    e_ours = float((got.double().cpu() - want).abs().max())
    e_theirs = float((theirs.double().cpu() - want).abs().max())
    record("bfloat16", f"{fam.name}: last hidden state vs float64, / (2 x transformers' bf16 + 4 eps)",
           e_ours / (2 * e_theirs + 4 * eps * scale), 1.0)


# ----------------------------------------------------------------------------------------------
# methods: the same call with the model on the CPU and on the device
# ----------------------------------------------------------------------------------------------

def _outcome(fn):
    """``(value, None)`` or ``(None, the refusal's sentence)`` for an attnscope error."""
    from attnscope import AttnscopeError
    try:
        return fn(), None
    except AttnscopeError as e:
        return None, str(e)


def _same(record: Record, part: str, case: str, fn: Callable, cpu, gpu, compare: Callable, tol: float) -> None:
    """``fn(model)`` on the CPU model and on the device's, compared; any other exception is a failure."""
    try:
        a, why_a = _outcome(lambda: fn(cpu))
        b, why_b = _outcome(lambda: fn(gpu))
        if why_a is not None or why_b is not None:
            record(part, f"{case}: refused on both with the same sentence ({(why_a or why_b)[:60]}…)",
                   0.0 if why_a == why_b else float("inf"), 0.0)
            return
        record(part, case, compare(a, b), tol)
    except Exception as e:  # noqa: BLE001 - every failure is reported, the other cases still run
        record(part, f"{case}: raised {type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}",
               float("inf"), 0.0)
        traceback.print_exc(file=sys.stderr)


def _tensors(*fields: str) -> Callable:
    return lambda a, b: max(_err(getattr(a, f), getattr(b, f)) for f in fields if getattr(a, f) is not None)


def check_methods(dev, record: Record, root: Path) -> None:
    import attnscope
    fams = _families()
    for name in METHOD_FAMILIES:
        if name not in fams:
            record("methods", f"{name}: no such tiny family registered", float("inf"), 0.0)
            continue
        fam = fams[name]
        folder = root / name if (root / name).exists() else fams[name].build(root / name)
        cpu, gpu = attnscope.load(folder), attnscope.load(folder, device=dev)
        part = f"methods ({name})"
        if fam.reads == "pair":
            _pair_methods(record, part, fam, folder, cpu, gpu)
            continue
        _text_methods(record, part, fam, cpu, gpu, root)


def _text_methods(record: Record, part: str, fam, cpu, gpu, root: Path) -> None:
    from attnscope.attribution import METHODS
    from tests.models.battery import texts_of
    text = texts_of(fam)[1]
    for method in METHODS:
        _same(record, part, f"attribute {method}", lambda m, method=method: m.attribute(text, method=method),
              cpu, gpu, _tensors("scores", "per_layer"), 1e-4)
    if fam.lm_head:
        from attnscope.circuits import copying_score, ov_circuit, qk_circuit
        from attnscope.lens import direct_logit_attribution, logit_lens
        from attnscope.patching import patch
        _same(record, part, "logit lens (top probabilities, KL)", lambda m: logit_lens(m, text),
              cpu, gpu, _tensors("top_probs", "target_prob", "kl"), 1e-4)
        _same(record, part, "direct logit attribution", lambda m: direct_logit_attribution(m, text),
              cpu, gpu, lambda a, b: max(_err(a.parts, b.parts), _err(a.logit, b.logit)), 1e-4)
        _same(record, part, "QK and OV circuits, copying score",
              lambda m: [qk_circuit(m, 1, 0).norm(), ov_circuit(m, 1, 0).svd()[1], copying_score(m, 1, 0)],
              cpu, gpu, lambda a, b: max(_err(torch.as_tensor(x), torch.as_tensor(y)) for x, y in zip(a, b)), 1e-4)
        other = text.replace("need", "want") if "need" in text else text + " again"
        for what in ("heads", "residual"):
            _same(record, part, f"patching ({what})", lambda m, what=what: patch(m, text, other, what=what),
                  cpu, gpu, _tensors("values"), 1e-4)
        if cpu.can_generate:
            _same(record, part, "greedy generation (same tokens: 0 = same)",
                  lambda m: m.generate(text, max_new_tokens=8), cpu, gpu,
                  lambda a, b: 0.0 if str(a) == str(b) else 1.0, 0.0)
    _analyze(record, part, fam, cpu, gpu, root)
    _explain(record, part, text, cpu, gpu)
    _viewer(record, part, text, cpu, gpu)


def _viewer(record: Record, part: str, text: str, cpu, gpu) -> None:
    from attnscope.viewer import data as V
    from attnscope.viewer.run import view_data

    def arrays(d: dict) -> list:
        entry = d["texts"][0]
        return [V.decode(entry["q"]), V.decode(entry["k"])]
    _same(record, part, "the viewer's data (every layer's q and k)", lambda m: arrays(view_data(m, text)), cpu, gpu,
          lambda a, b: max(_err(torch.as_tensor(x), torch.as_tensor(y)) for x, y in zip(a, b)), 1e-4)


def _analyze(record: Record, part: str, fam, cpu, gpu, root: Path) -> None:
    from attnscope.analysis import analyze
    from tests.models.battery import texts_of
    corpus = root / f"{fam.name}-corpus.txt"
    corpus.write_text("".join(t + "\n" for t in texts_of(fam)), encoding="utf-8")
    kw = dict(batch_size=2, importance_texts=0, induction_seqs=0, lanes=1, progress=False)
    _same(record, part, "analyze (every statistic's means)", lambda m: analyze(corpus, m, **kw).means, cpu, gpu,
          lambda a, b: max(_err(a[k], b[k]) for k in a), 1e-4)


def _tree_err(a, b, where: str = "") -> float:
    """The largest relative difference of the numbers of two JSON-like trees; inf (and the place on
    stderr) where their structure or a string differs."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return max((_tree_err(a[k], b[k], f"{where}.{k}") for k in a), default=0.0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return max((_tree_err(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b))), default=0.0)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return _err(torch.tensor(float(a)), torch.tensor(float(b)))
    if isinstance(a, str) and isinstance(b, str) and a != b:
        # the document reports how far the model's float32 forward is from float64 (e.g. 1.9e-07):
        # that is float32 rounding, which differs between devices; those numbers only need to stay
        # below 1e-4 on both, the rest of the words and numbers must be the same
        small = [(x, y) for x, y in zip(FLOAT_DIFF.findall(a), FLOAT_DIFF.findall(b))]
        if FLOAT_DIFF.sub("#", a) == FLOAT_DIFF.sub("#", b) and all(float(x) < 1e-4 and float(y) < 1e-4 for x, y in small):
            return 0.0
    if a != b:
        print(f"explain differs at {where}: {str(a)[:200]!r} (cpu) vs {str(b)[:200]!r} (device)", file=sys.stderr)
        return float("inf")
    return 0.0


def _explain(record: Record, part: str, text: str, cpu, gpu) -> None:
    """The document's values (``Worked.to_dict``) within 1e-5 of the CPU model's, its words the same."""
    from attnscope import explain
    layer, head = cpu.config.n_layers - 1, cpu.config.n_heads - 1
    for path in (False, True):
        _same(record, part, f"explain {'--path' if path else 'row'}: every value, the same words",
              lambda m, path=path: explain(text=text, model=m, layer=layer, head=head, position=2, path=path).to_dict(),
              cpu, gpu, _tree_err, 1e-5)


def _pair_methods(record: Record, part: str, fam, folder, cpu, gpu) -> None:
    from attnscope import explain
    from tests.models.battery import texts_of
    sources, targets = texts_of(fam)
    for attention in ("encoder", "self", "cross"):
        _same(record, part, f"explain {attention} row: every value, the same words",
              lambda m, a=attention: explain(text=sources[0], target=targets[0], model=m, layer=0, head=0, position=1,
                                             attention=a).to_dict(),
              cpu, gpu, _tree_err, 1e-5)
    _same(record, part, "logits of a pair", lambda m: m.logits(sources[:2], targets[:2]), cpu, gpu,
          lambda a, b: _err(a, b), 1e-4)


def run_all(dev, record: Record) -> None:
    """Both parts in one temporary folder (each family written once)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        check_families(dev, record, root)
        check_methods(dev, record, root)
