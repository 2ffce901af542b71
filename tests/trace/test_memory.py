"""The memory a trace takes, before it runs: the bytes it keeps (fitted from probe traces) equal
those of the real trace; the estimate of the peak is within 20 % (or 10 MiB, the allocator's own
noise on a small trace) of the peak resident memory measured in a fresh process above the loaded
model; ``max_memory`` refuses with one sentence before any work."""

import subprocess
import sys
import textwrap

import pytest
import torch

from attnscope.errors import InputError
from attnscope.tokenizer import Batch
from attnscope.trace import estimate_trace_memory
from attnscope.trace.memory import kept_bytes, parse_memory


def batch(B, L, token=7):
    ids = torch.full((B, L), token, dtype=torch.long)
    return Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), [[""] * L] * B, [""] * B)


@pytest.mark.parametrize("names", [None, "layers.*.attn.weights", ["embed.out", "layers.1.attn.q", "layers.0.attn.weights[2]"]])
def test_the_kept_bytes_are_those_of_the_trace(names, minilm, decoders):
    for model, B, L in ((minilm, 2, 37), (decoders["llama_gqa"], 1, 50)):
        want = model.trace(batch(B, L), names=names).nbytes
        assert kept_bytes(model, L, names, batch=B) == want


PEAK = textwrap.dedent('''
    import ctypes, gc, json, sys, torch, attnscope
    from attnscope.tokenizer import Batch
    from attnscope.trace import estimate_trace_memory
    name, names, lengths = sys.argv[1], json.loads(sys.argv[2]), [int(x) for x in sys.argv[3:]]
    name, _, dtype = name.partition(":")  # "minilm:float16": loaded in that dtype
    model = attnscope.load(None if name == "minilm" else name, **({"dtype": getattr(torch, dtype)} if dtype else {}))
    def batch(n):
        ids = torch.full((1, n), 7, dtype=torch.long)
        return Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), [[""] * n], [""])
    with torch.no_grad():  # the kernels' own work space for the longest input: the model's, not the trace's
        model(batch(max(lengths)).input_ids)
    def rss(key):
        return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith(key))
    out = []
    for L in lengths:
        est = estimate_trace_memory(model, L, names)
        gc.collect(); ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed memory back to the system
        open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM, ru_maxrss) from here
        base = rss("VmRSS")
        tr = model.trace(batch(L), names=names)
        out.append((L, est, rss("VmHWM") - base))
        del tr
    print(json.dumps(out))
''')


def measured(name, lengths, runs=3, names=None):
    """``[(L, estimate, peak above the loaded model)]``, the peak the median of ``runs`` fresh
    processes: the allocator's holes move a single peak by ±10 % between runs (MiniLM at 256 tokens
    37-41 MiB in five runs), which is the allocator, not the trace."""
    import json
    import statistics
    rows = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", PEAK, name, json.dumps(names), *map(str, lengths)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return [(L, est, statistics.median(run[i][2] for run in rows)) for i, (L, est, _) in enumerate(rows[0])]


#: what the allocator alone moves a small trace's peak by, whatever its size: SmolLM2 at 128 tokens
#: peaked at 47.4 MiB (median of three) when the formula was fitted and at 43.5 MiB in a CI run of
#: the same code, 20.3 % below the estimate of 52.4 MiB. A relative bound alone fails on such traces.
SLACK = 10 * 2**20


def check_within(rows, share=0.2):
    for L, est, peak in rows:
        assert peak > 0 and abs(est - peak) <= max(share * peak, SLACK), (L, est / 2**20, peak / 2**20)


def test_the_estimate_is_within_20_percent_of_the_peak_minilm():
    check_within(measured("minilm", [256, 512]))


def test_the_estimate_is_within_20_percent_of_the_peak_in_half_precision():
    """float16 and bfloat16 steps are not written over each other (kernels.dense.writable) and the
    softmax works in float32: without counting that the estimate was 0.6 of the peak."""
    check_within(measured("minilm:float16", [256, 512]))
    check_within(measured("minilm:bfloat16", [512]))


@pytest.mark.parametrize("names", ["layers.*.attn.scores", "layers.*.out",
                                   ["embed.out", "layers.1.attn.q", "layers.0.attn.weights[2]"]])
def test_the_estimate_for_chosen_names_is_within_30_percent_of_the_peak(names):
    """The explicit path (scores recorded) holds an L×S matrix besides the kept ones; the fused
    kernel (no attention step recorded) none. Counting three for every trace was 1.5-2.2× the
    peak at 512 tokens; leaving out the running layer's own steps was 0.5× on SmolLM2."""
    check_within(measured("minilm", [256, 512], names=names), share=0.3)


@pytest.mark.real_model
def test_the_estimate_is_within_20_percent_of_the_peak_smollm2():
    check_within(measured("smollm2-135m", [128, 256]))


def test_max_memory_refuses_before_any_work(minilm):
    calls = []
    need = estimate_trace_memory(minilm, 300, batch=2)
    with pytest.raises(InputError) as e:
        minilm.trace(batch(2, 300), hooks={"embed.out": lambda t, n: calls.append(n)}, max_memory=need // 2)
    msg = str(e.value)
    assert "\n" not in msg and "2 texts × 300 tokens" in msg and "max_memory" in msg and "estimate" in msg
    assert calls == []  # the hook never ran: no forward pass of the texts
    tr = minilm.trace(batch(2, 300), names="embed.out", max_memory="1GB")  # fewer names fit
    assert tr.nbytes < 1e9
    assert minilm.trace(batch(1, 8), max_memory=need).names  # enough memory: it runs


@pytest.mark.parametrize("text, n", [("2GB", 2 * 10**9), ("1.5 GiB", 3 * 2**29), ("500mb", 5 * 10**8),
                                     (1024, 1024), ("64K", 65536)])
def test_parse_memory(text, n):
    assert parse_memory(text) == n


@pytest.mark.parametrize("bad", ["two GB", "2 XB", -1, 0, True, None, "inf"])
def test_bad_max_memory_is_one_sentence(bad, minilm):
    with pytest.raises(InputError, match="max_memory"):
        minilm.trace("hi", max_memory=bad) if bad is not None else parse_memory(bad)
