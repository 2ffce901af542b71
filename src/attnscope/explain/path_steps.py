"""The steps of one token's path outside its layer's recipe — the tokens, the embedding, the layers
below — and the summary beside the model's float32 trace (:class:`PathSteps`, a writer over
:class:`.path_values.PathValues`), and the :class:`~.doc.Worked` they make with the layer's own
steps (:func:`assemble`, :mod:`.path_layer`): shared by :mod:`.path` (the one-stack families) and
:mod:`.path_relative` (DeBERTa, T5, BART)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import reference as R
from .. import reference_model as RM
from ..pieces import is_metaspace
from .blocks import Block, Formula, Para, Step, Sym, Table, t, t_or
from .doc import Worked
from .path_blocks import norm_blocks, projection_table, trace_para, vector_table
from .path_layer import layer_steps
from .path_values import PathValues


def assemble(P, row: Worked, notes: list, intro_key: str = "path.intro") -> Worked:
    """The Worked of a path: its intro, the steps before the layer, the layer's (its recipe's, the
    row of ``row`` among them), the summary."""
    model = P.m
    route = t("path.route0") if P.i == 0 else (t("path.route1") if P.i == 1 else t("path.route", last=P.i - 1))
    intro = [Para(t(intro_key, model=model.name, family=model.family, layer=P.i, head=P.h, tok=P.tok, L=P.n,
                    route=route)), Para(t("path.intro_trace"), style="note")] + [Para(x, style="note") for x in notes]
    steps = P.before()
    steps += layer_steps(P)
    steps.append(P.summary())
    values = dict(row.values)
    values.update(P.values)
    meta = dict(row.meta, kind="path", path=P.meta, trace_path_max_abs_diff=P.diffs)
    title = t("path.title_" + P.pfx[:-1] if P.pfx else "path.title", tok=P.tok, layer=P.i, head=P.h)
    return Worked("path", title, intro, steps, values=values, meta=meta)


class PathSteps(PathValues):
    """The steps outside the layer's recipe, and ``note``, which every step uses to record the
    token's vector it shows beside the model's trace. ``rows``: the attention row of each
    attention step (``{"attn": (Worked, its trace differences)}``), built before the writing."""

    #: A family's own trace names of a row's steps, beside the ones every row has (:meth:`mark_row`).
    row_names: dict = {}

    def __init__(self, model, f: dict, d: dict, dims: int, stack: str = "") -> None:
        super().__init__(model, f, d, stack)
        self.dims = dims
        self.values: dict = {}
        self.meta: list = []
        self.diffs: dict = {}
        self.rows: dict = {}

    def note(self, step: str, name: str, head: Optional[int] = None) -> str:
        """Record the token's float64 vector at ``name`` and its largest difference from the trace."""
        key = name if head is None else f"{name}[{head}]"
        self.values[key] = self.x(name, head)
        self.record(step, key, self.diff(name, head))
        return key

    def record(self, step: str, key: str, diff: Optional[float]) -> None:
        """Set ``key``'s largest |float32 − float64| (None: not traced) among the summary's rows."""
        if diff is not None:
            self.diffs[key] = diff
        self.meta.append({"step": step, "trace": key, "max_abs_diff": diff})

    def row_diffs(self, att: str, keys) -> dict:
        """Largest |float32 − float64| of the head's row of the query in attention ``att``, per
        row step of ``keys`` the trace has (masked entries, ∞ − ∞, left out)."""
        names = {k: f"{self.lp}.{att}.{k}" for k in keys if f"{self.lp}.{att}.{k}" in self.tr}
        return {k: float(np.nanmax(np.abs(R.as_f64(self.tr[n])[0][self.h][self.p] - self.f[n][self.h][self.p])))
                for k, n in names.items() if n in self.f}

    def before_query(self, step) -> list:
        """Steps before the query of an attention step of the recipe (a family's own: the source of
        cross-attention)."""
        return []

    def after_query(self, step) -> list:
        """Steps between the query and the row (DeBERTa's relative table)."""
        return []

    # -- before the layer ----------------------------------------------------------------------
    def before(self) -> list:
        steps = [self.tokens_step(), self.embed_step()]
        if "embed.positions" in self.f and RM.position_kind(self.m) == "sinusoidal":
            steps.insert(2, self.sinusoid_step())
        e, pf = self.e, self.pfx
        norm_last = bool(self.f.get("embed.norm_last"))  # DeBERTa: E → d first, then the LayerNorm
        if norm_last and "embed.projected" in self.f:
            steps.append(self.projected_step("embed.sum"))
        if not self.decoder and e.norm is not None:
            k = self.note("embed_norm", pf + "embed.out")
            projected = norm_last and "embed.projected" in self.f
            x_ln = pf + ("embed.projected" if projected else "embed.sum")
            # the title names what is normalised: a sum of rows, the one token row (BLOOM), or its projection
            what = "_projected" if projected else "" if len(self.embed_parts()) > 1 else "_row"
            steps.append(Step("embed_norm", t("path.step_embed_norm" + what),
                              [Para(t("path.embed_norm_why" if what == "" else "path.embed_norm_why_row"))] +
                              norm_blocks(self.x(x_ln), e.norm, self.x(pf + "embed.out"), self.dims) + [trace_para(k)]))
        if not norm_last and "embed.projected" in self.f:
            steps.append(self.projected_step("embed.out"))
        if self.i > 0:
            k = self.note("earlier", pf + f"layers.{self.i - 1}.out")
            below = "0" if self.i == 1 else f"0 … {self.i - 1}"
            steps.append(Step("earlier", t("path.step_earlier", layers=below),
                              [Para(t("path.earlier_why", i=self.i, layers=below, last=self.i - 1, tok=self.tok)),
                               vector_table([(k, self.x(k))], self.dims), trace_para(k)]))
        return steps

    def projected_step(self, src: str) -> Step:
        """E → d_model (ALBERT, ELECTRA after the LayerNorm; DeBERTa before it)."""
        e = self.e
        k = self.note("embed_projected", "embed.projected")
        E, dm = e.proj.weight.shape[1], e.proj.weight.shape[0]
        tab = projection_table(self.x(src), e.proj.weight, range(dm), e.proj.bias, self.x("embed.projected"),
                               dims=self.dims, wname="W_p")
        return Step("embed_projected", t("path.step_projected"), [Para(t("path.projected_why", E=E, d=dm)), tab,
                                                                   trace_para(k)])

    def tokens_step(self) -> Step:
        f = self.f
        seg = f["segments"]
        tz = self.m.tokenizer
        # SentencePiece's ▁ read as the space it marks, where the labels do (T5's and mT5's paths)
        spaced = is_metaspace(tz) and list(self.labels) != list(f["tokens"])
        reads = tz is not None and (tz.byte_level or spaced)
        header = ([t("col.pos"), t("path.col_piece")] + ([t("path.col_reads")] if reads else []) + [t("path.col_id")]
                  + ([t("path.col_segment")] if seg is not None else []))
        body = []
        for j, (tk, i) in enumerate(zip(f["tokens"], f["ids"])):
            body.append([j, tk] + ([self.labels[j]] if reads else []) + [int(i)]
                        + ([int(seg[j])] if seg is not None else []))
        blocks = [Para(t("path.tokens_why", L=self.n, V=self.c.vocab_size, tok=self.tok, id=int(f["ids"][self.p]))),
                  Table(header, body)]
        if reads:
            blocks.append(Para(t("path.byte_level" if tz.byte_level else "path.metaspace"), style="note"))
        self.values["ids"] = f["ids"]
        return Step("tokens", t("path.step_tokens"), blocks)

    def embed_parts(self) -> list[str]:
        """The embedding rows this model adds: "token", then "segment" and "position" where it has them."""
        return ["token"] + [k for k in ("segment", "position") if f"{self.pfx}embed.{k}s" in self.f]

    def embed_step(self) -> Step:
        """The token's rows of the embedding tables and their sum (the formula names the rows there
        are), or a decoder's token row (× Gemma's √d)."""
        f, p, pf, e, c = self.f, self.p, self.pfx, self.e, self.c
        V, E = e.token_embedding.weight.shape
        blocks: list[Block] = [Para(t("path.token_row", id=int(f["ids"][p]), V=V, E=E, tok=self.tok))]
        parts = self.embed_parts()
        if "segment" in parts:
            blocks.append(Para(t("path.segment_row", s=int(f["segments"][p]), n=e.segment_embedding.weight.shape[0])))
        pid = int(f["positions"][p])
        if "position" in parts and RM.position_kind(self.m) == "sinusoidal":
            blocks.append(Para(t("path.position_sinusoid", p=pid)))
        elif "position" in parts:
            key = "path.position_row_bart" if self.seq2seq else "path.position_row_offset" if pid != p else "path.position_row"
            blocks.append(Para(t(key, p=pid, j=p, P=e.position_embedding.weight.shape[0])))
        elif c.position == "rotary":
            blocks.append(Para(t("path.position_rotary")))
        names = [self.note("embed", f"{pf}embed.{k}s") for k in parts]
        rows: list[tuple[Any, np.ndarray]] = [(k, self.x(k)) for k in names]
        scale = float(getattr(c, "embed_scale", 1.0) or 1.0)
        if self.seq2seq and scale != 1.0:  # BART's scale_embedding: the token row × √d before the sum
            blocks.append(Para(t("path.embed_scale_bart", d=c.d_model, s=scale)))
        if self.decoder:
            scale = float(np.float32(c.embed_scale))
            if scale != 1.0:
                blocks.append(Para(t("path.embed_scale", d=c.d_model, s=scale)))
                names.append(self.note("embed", pf + "embed.out"))
                rows.append((names[-1], self.x(names[-1])))
            root = len(rows) > 1
            formula = Formula("x = token row" + (" · √d" if root else ""),
                              r"x=\mathrm{token}" + (r"\cdot\sqrt{d}" if root else ""))
        else:
            self.values["embed.sum"] = self.x(pf + "embed.sum")
            if len(rows) > 1:
                rows.append((t("path.sum_row"), self.x(pf + "embed.sum")))
            if e.norm is None:
                names.append(self.note("embed", pf + "embed.out"))
            formula = Formula("x = " + " + ".join(parts), "x=" + "+".join(rf"\mathrm{{{k}}}" for k in parts)) \
                if len(parts) > 1 else Formula("x = token row", r"x=\mathrm{token}")
        # the title names what is there: rows and their sum, or the one token row (× Gemma's √d)
        title = "path.step_embed" if len(parts) > 1 else "path.step_embed_row_scaled" if len(rows) > 1 else \
            "path.step_embed_row"
        return Step("embed", t(title), blocks + [formula, vector_table(rows, self.dims), trace_para(*names)])

    def sinusoid_step(self) -> Step:
        pid = int(self.f["positions"][self.p])
        d = len(self.x(self.pfx + "embed.positions"))
        n = min(max(self.dims, 4), d)
        body = []
        for j in range(n):
            i2 = 2 * (j // 2)
            ang = pid / 10000.0 ** (i2 / d)
            fn = "sin" if j % 2 == 0 else "cos"
            body.append([j, i2, f"{fn}", ang, math.sin(ang) if j % 2 == 0 else math.cos(ang)])
        header = [t("col.feature"), Sym("2i", "2i"), t("path.col_fn"), Sym("p / 10000^(2i/d)", r"p/10000^{2i/d}"),
                  Sym("PE", r"\mathrm{PE}")]
        blocks = [Formula("PE[p, 2i] = sin(p / 10000^(2i/d)),   PE[p, 2i+1] = cos(p / 10000^(2i/d))",
                          r"\mathrm{PE}_{p,2i}=\sin(p/10000^{2i/d}),\quad \mathrm{PE}_{p,2i+1}=\cos(p/10000^{2i/d})"),
                  Para(t("path.sinusoid_why", p=pid, d=d)),
                  Table(header, body, caption=t("path.first_features", n=n, d=d) if n < d else None)]
        return Step("sinusoid", t("path.step_sinusoid"), blocks)

    # -- the end ------------------------------------------------------------------------------
    def mark_row(self, steps: list, att: str, diffs: dict, cross: bool = False) -> None:
        """Add the trace names to the attention row's steps (built by :func:`.row.build_row`);
        ``cross``: the decoder's second row (its step keys get ``cross_``)."""
        p, h = f"{self.lp}.{att}", self.h
        names = {"scores": [f"{p}.scores[{h}]"], "scaled": [f"{p}.scaled[{h}]"], "exp": [f"{p}.masked[{h}]"],
                 "weights": [f"{p}.weights[{h}]"], "output": [f"{p}.z[{h}]"],
                 "qk_norm": [f"{p}.q_normed[{h}]", f"{p}.k_normed[{h}]"], "rotation": [f"{p}.q[{h}]", f"{p}.k[{h}]"]}
        if self.seq2seq:  # T5's bias buckets (BART's rows have no bias step)
            names["bias"] = [f"{p}.bias[{h}]"]
        names.update({k: [f"{p}.{x}[{h}]" for x in v] for k, v in self.row_names.items()})
        for s in steps:
            if s.key in names:
                s.blocks.append(trace_para(*names[s.key]))
            if s.key == "result":
                s.title = t("path.step_row_result_cross" if cross else "path.step_row_result", h=h)
            if cross:
                s.key = "cross_" + s.key
        for key, diff in diffs.items():
            self.meta.append({"step": "row", "trace": f"{p}.{key}[{h}]", "max_abs_diff": diff})

    def summary(self) -> Step:
        rows = []
        for m in self.meta:
            if m["step"] == "z" and not m["trace"].endswith(f"[{self.h}]"):
                continue  # the other heads' z: in JSON, not in the table
            what = "source" if m["step"] == "source" else _what(m["trace"], self.i, self.pfx)
            rows.append([m["trace"], t_or(f"path.what.{what}", "path.what.step", name=what),
                         f"{m['max_abs_diff']:.1e}" if m["max_abs_diff"] is not None else "—"])
        x_in = self.layer_in()[self.p]
        out = self.x(f"{self.lp}.out")
        cos = float(x_in @ out / (np.linalg.norm(x_in) * np.linalg.norm(out)))
        worst = max((m["max_abs_diff"] for m in self.meta if m["max_abs_diff"] is not None), default=0.0)
        blocks = [Table([t("path.col_trace"), t("path.col_what"), t("path.col_diff")], rows),
                  Para(t("path.summary_diff", worst=f"{worst:.1e}")),
                  Para(t("path.context", tok=self.tok, i=self.i, a=float(np.linalg.norm(x_in)),
                         b=float(np.linalg.norm(out)), cos=cos))]
        return Step("summary", t("path.step_summary"), blocks)


def _what(name: str, layer: int, pfx: str = "") -> str:
    """The label suffix that says what a trace name holds (``layers.3.attn.q[2]`` → ``attn.q``;
    ``decoder.layers.0.cross_attn.q[1]`` → ``cross_attn.q``)."""
    if name == f"{pfx}layers.{layer - 1}.out":
        return "earlier"
    base = name.split("[")[0]
    base = base[len(pfx):] if pfx and base.startswith(pfx) else base
    base = base.split(f"layers.{layer}.", 1)[1] if base.startswith(f"layers.{layer}.") else base
    for own in ("self_attn", "cross_attn"):  # the decoder's two attentions: the labels of every attention
        if base.startswith(own):
            return "attn" + base[len(own):]
    return base
