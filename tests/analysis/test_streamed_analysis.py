"""SmolLM2 analysed with its layers streamed from the GGUF file (``load(…, stream_layers=True)``)
gives the in-memory analysis bit for bit: every statistic, the labels, the decoder scores and the
induction heads' copying scores. A window of texts is one forward pass in stream mode, so the
in-memory run it is compared with has ``batch_size = chunk_size``; the same kernels then run on
the same weights (tests/models/test_streaming.py checks the weights and every traced name)."""

from __future__ import annotations

import numpy as np

import attnscope
from attnscope.analysis import analyze
from attnscope.models.streaming import layer_stream

TEXTS = ["The cat sat on the mat because it was tired.", "A river bank is not the bank that holds money.",
         "import numpy as np; x = np.arange(10) ** 2"]


def test_smollm2_streamed_analysis_equals_the_in_memory_one(tmp_path, installed_model):
    corpus = tmp_path / "texts.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    kw = dict(importance_texts=0, norm_texts=0, induction_seqs=4, induction_length=8, chunk_size=3, batch_size=3,
              lanes=1, progress=False)
    streamed = attnscope.load("smollm2-135m", stream_layers=True)
    got = analyze(corpus, streamed, **kw)
    stream = layer_stream(streamed)
    assert stream is not None and stream.reads >= 2 * streamed.config.n_layers  # the window, the induction batch
    del streamed, stream
    want = analyze(corpus, installed_model("smollm2-135m"), **kw)
    assert set(got.means) == set(want.means)
    for k, v in want.means.items():
        assert np.array_equal(got.means[k], v, equal_nan=True), k
    assert (got.labels == want.labels).all() and got.counters == want.counters
    assert got.copying == want.copying
