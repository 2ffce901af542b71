"""docs/guide/real-models.md's sizes of a trace of one 512-token text through MiniLM, recounted by
hand from the model's shapes (6 layers, 12 heads, d = 384, d_ff = 1536, float32), and the trace's
own ``nbytes`` against the same count.

Every name, ``replay=False``: the four embedding steps (tokens, segments, positions, their
LayerNorm) and per layer eleven L×d steps (q, k, v, z, merged, attn.out, attn_resid, ffn_in,
ffn.out, ffn_resid, out; a layer's attn_in is the step before's out), the L×d_ff hidden and one
H×L×L matrix (the scores; scaled, masked and weights are recomputed from them on read). Before
that, scaled (= masked: no padding) and weights were two more matrices per layer. Replayed (the
default for every name): per layer only the scores and the residual stream (ffn_resid, out).
"""

import re

from tests.docs.blocks import ROOT

PAGE = ROOT / "docs" / "guide" / "real-models.md"
N, H, D, F, L = 6, 12, 384, 1536, 512
MIB = 2 ** 20


def _hand() -> dict:
    matrix, row = H * L * L * 4, L * D * 4
    embeds = 4 * row
    return {"stored": embeds + N * (11 * row + L * F * 4 + matrix),
            "before": embeds + N * (11 * row + L * F * 4 + 3 * matrix),
            "replayed": embeds + N * (2 * row + matrix)}


def _page() -> str:
    return re.sub(r"\s+", " ", PAGE.read_text(encoding="utf-8"))


def test_the_pages_sizes_are_the_hand_count():
    hand = {k: round(v / MIB) for k, v in _hand().items()}
    page = _page()
    assert f"MiniLM {hand['before']} → {hand['stored']} MiB" in page
    assert f"MiniLM {hand['stored']} → {hand['replayed']} MiB kept" in page


def test_the_trace_keeps_the_hand_count():
    import attnscope

    model = attnscope.load()
    text = " ".join(["word"] * (L - 2))
    hand = _hand()
    assert model.trace(text, replay=False).nbytes == hand["stored"]
    assert model.trace(text).nbytes == hand["replayed"]
