"""``torchrun --nproc-per-node 2 attnscope analyze`` (gloo, CPU) gives the single-process result, bit for bit.

Launched as ``python -m torch.distributed.run`` on a free port. The corpus has an empty line and a
line that is not UTF-8 (skipped): counts must not double. The single-process reference is the
same settings run by analyze() in this process.
"""

import json
import os
import socket
import subprocess
import sys

import pytest
import torch

from attnscope.analysis import AnalysisConfig, analyze
from attnscope.analysis.report import to_json

pytestmark = pytest.mark.distributed

TEXTS = ["The cat sat on the mat.", "Heads attend to the previous token, or to [SEP].",
         "Lower layers local; higher layers global?", "A much longer sentence, with commas, clauses and a "
         "final full stop, so that batches pad.", "Short.", "Queries, keys, values.",
         "Every number must be right.", "Nothing is lost silently: errors are counted."]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    f = tmp_path_factory.mktemp("dist") / "corpus.txt"
    body = "\n".join(TEXTS[:3]).encode() + b"\n\nbad \xff byte\n" + "\n".join(TEXTS[3:]).encode() + b"\n"
    f.write_bytes(body)
    return f


ARGS = ["--batch-size", "2", "--chunk-size", "2", "--importance-texts", "5", "--importance-batch", "2",
        "--on-decode-error", "skip", "--threads", "1", "--no-progress"]


def test_two_processes_equal_one(corpus, tmp_path):
    two = tmp_path / "two"
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
           "--master-port", str(free_port()), "-m", "attnscope", "analyze", str(corpus), "--out", str(two), *ARGS]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 processes" in proc.stdout
    # the reference: the same settings in this one process, through the library, on one thread as
    # each torchrun process (--threads 1): the importance pass's rounding follows the thread count
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ref = analyze(corpus, None, AnalysisConfig(batch_size=2, chunk_size=2, importance_texts=5, importance_batch=2,
                                                   on_decode_error="skip", progress=False))
    finally:
        torch.set_num_threads(threads)
    a = json.loads(json.dumps(to_json(ref)))
    b = json.loads((two / "analysis.json").read_text())
    assert b["processes"] == 2 and a["processes"] == 1
    assert a["counters"] == b["counters"]
    assert a["counters"]["texts"] == len(TEXTS) and a["counters"]["skipped_decode"] == 1
    # the first 5 texts by number include the undecodable line, so 4 are ablated
    assert a["counters"]["empty"] == 1 and a["counters"]["importance_texts"] == 4
    assert a["decode_errors"] == b["decode_errors"] == [f"{corpus}:5: byte ff at byte 4 is not valid utf-8"]
    # the sums are exact (analysis/exact.py) and gathered whole: every number is the single run's, bit for bit
    assert a["heads"] == b["heads"] and a["layers"] == b["layers"] and a["trends"] == b["trends"]
    assert a["claim"] == b["claim"]
    assert (two / "report.md").is_file() and (two / "heatmaps" / "distance.png").is_file()
