"""The steps of one token's path before and after its attention row (:class:`PathSteps`, from the
float64 pass and the model's trace) and the :class:`~.doc.Worked` they make (:func:`assemble`):
shared by :mod:`.path` (the one-stack families) and :mod:`.path_relative` (DeBERTa, T5, BART)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import reference as R
from .. import reference_model as RM
from .blocks import Block, Formula, Para, Step, Sym, Table, t
from .doc import Worked
from .path_after import After
from .path_blocks import (
    norm_blocks,
    norm_kind,
    projection_table,
    trace_para,
    vec,
    vector_table,
)


def assemble(P, before: list, row: Worked, after: list, notes: list, intro_key: str = "path.intro") -> Worked:
    """The Worked of a path: its intro, the steps before the row, the row, after it, the summary."""
    model = P.m
    route = t("path.route0") if P.i == 0 else (t("path.route1") if P.i == 1 else t("path.route", last=P.i - 1))
    intro = [Para(t(intro_key, model=model.name, family=model.family, layer=P.i, head=P.h, tok=P.tok, L=P.n,
                    route=route)), Para(t("path.intro_trace"), style="note")] + [Para(x, style="note") for x in notes]
    steps = before + row.steps + after + [P.summary()]
    values = dict(row.values)
    values.update(P.values)
    meta = dict(row.meta, kind="path", path=P.meta, trace_path_max_abs_diff=P.diffs)
    title = t("path.title_" + P.pfx[:-1] if P.pfx else "path.title", tok=P.tok, layer=P.i, head=P.h)
    return Worked("path", title, intro, steps, values=values, meta=meta)


class PathSteps(After):
    """The steps before and after the attention row, from the float64 pass ``f`` and the trace."""

    att = "attn"  # the attention module the row is of (encoder–decoder models' decoder: self_attn)

    def __init__(self, model, f: dict, d: dict, dims: int, stack: str = "") -> None:
        """``stack``: "" (one-stack models) or "encoder" / "decoder" of an encoder–decoder model,
        whose trace names start with it."""
        self.m, self.f, self.d, self.dims = model, f, d, dims
        self.c = model.config
        self.i, self.h, self.p = d["layer"], d["head"], d["qpos"]
        self.n = len(d["tokens"])
        self.labels = d.get("labels") or d["tokens"]  # as a person reads them (byte-level pieces decoded)
        self.tok = f"{self.p}:{self.labels[self.p]}"
        self.decoder = getattr(self.c, "kind", "") == "decoder"
        self.seq2seq = bool(stack)
        self.pfx = f"{stack}." if stack else ""
        self.lp = self.pfx + f"layers.{self.i}"
        owner = getattr(model, stack) if stack else model
        self.e = owner.embed
        self.layer = owner.layers[self.i]
        self.pre = self.decoder or bool(getattr(self.layer, "pre_norm", getattr(self.layer, "pre", False)))
        self.gated = self.decoder or bool(getattr(self.c, "gated_ffn", False))
        self.g = R.kv_head(self.h, self.c.n_heads, getattr(self.c, "kv_heads", self.c.n_heads))
        self.values: dict = {}
        self.meta: list = []
        self.diffs: dict = {}
        names = [nm for nm in model.hook_names if nm.startswith(self.pfx + "embed.") or nm.startswith(self.lp + ".")]
        names = [nm for nm in names if nm.split(".")[-1] not in ("scores", "scaled", "masked", "weights", "mask", "bias",
                                                                  "scores_c2c", "scores_c2p", "scores_p2c")]
        if self.i > 0:
            names.append(self.pfx + f"layers.{self.i - 1}.out")
        names += d.get("extra_names", [])
        self.tr = model.trace(d["text"], d["target"], names=names) if self.seq2seq else model.trace(d["text"], names=names)

    def layer_in(self) -> np.ndarray:
        """What enters the layer, every token: (L, d)."""
        if self.i > 0:
            return self.f[self.pfx + f"layers.{self.i - 1}.out"]
        return self.f[self.pfx + "embed.out"] if self.seq2seq else RM.layer_input(self.f, 0)

    # -- reading the pass and the trace -------------------------------------------------------
    def x(self, name: str, head: Optional[int] = None) -> np.ndarray:
        """The token's float64 vector at ``name`` (a per-head name: that head's)."""
        a = self.f[name]
        return a[head][self.p] if head is not None else a[self.p]

    def note(self, step: str, name: str, head: Optional[int] = None) -> str:
        """Record the token's float64 vector at ``name`` and its largest difference from the trace."""
        key = name if head is None else f"{name}[{head}]"
        ours = self.x(name, head)
        self.values[key] = ours
        diff = None
        if name in self.tr:
            theirs = R.as_f64(self.tr[name])[0]
            theirs = theirs[head][self.p] if head is not None else theirs[self.p]
            diff = float(np.abs(theirs - ours).max())
            self.diffs[key] = diff
        self.meta.append({"step": step, "trace": key, "max_abs_diff": diff})
        return key

    # -- before attention ---------------------------------------------------------------------
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
            x_ln = pf + ("embed.projected" if norm_last and "embed.projected" in self.f else "embed.sum")
            steps.append(Step("embed_norm", t("path.step_embed_norm"),
                              [Para(t("path.embed_norm_why"))] +
                              norm_blocks(self.x(x_ln), e.norm, self.x(pf + "embed.out"), self.dims) + [trace_para(k)]))
        if not norm_last and "embed.projected" in self.f:
            steps.append(self.projected_step("embed.out"))
        if self.i > 0:
            k = self.note("earlier", pf + f"layers.{self.i - 1}.out")
            below = "0" if self.i == 1 else f"0 … {self.i - 1}"
            steps.append(Step("earlier", t("path.step_earlier", layers=below),
                              [Para(t("path.earlier_why", i=self.i, layers=below, last=self.i - 1, tok=self.tok)),
                               vector_table([(k, self.x(k))], self.dims), trace_para(k)]))
        steps.append(self.attn_in_step())
        steps.append(self.q_step())
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
        reads = tz is not None and tz.byte_level
        header = ([t("col.pos"), t("path.col_piece")] + ([t("path.col_reads")] if reads else []) + [t("path.col_id")]
                  + ([t("path.col_segment")] if seg is not None else []))
        body = []
        for j, (tk, i) in enumerate(zip(f["tokens"], f["ids"])):
            body.append([j, tk] + ([self.labels[j]] if reads else []) + [int(i)]
                        + ([int(seg[j])] if seg is not None else []))
        blocks = [Para(t("path.tokens_why", L=self.n, V=self.c.vocab_size, tok=self.tok, id=int(f["ids"][self.p]))),
                  Table(header, body)]
        if tz is not None and tz.byte_level:
            blocks.append(Para(t("path.byte_level"), style="note"))
        self.values["ids"] = f["ids"]
        return Step("tokens", t("path.step_tokens"), blocks)

    def embed_step(self) -> Step:
        f, p, pf = self.f, self.p, self.pfx
        e = self.e
        tid = int(f["ids"][p])
        V, E = e.token_embedding.weight.shape
        rows: list[tuple[Any, np.ndarray]] = [(self.note("embed", pf + "embed.tokens"), self.x(pf + "embed.tokens"))]
        blocks: list[Block] = [Para(t("path.token_row", id=tid, V=V, E=E, tok=self.tok))]
        if pf + "embed.segments" in f:
            rows.append((self.note("embed", pf + "embed.segments"), self.x(pf + "embed.segments")))
            blocks.append(Para(t("path.segment_row", s=int(f["segments"][p]), n=e.segment_embedding.weight.shape[0])))
        if pf + "embed.positions" in f:
            rows.append((self.note("embed", pf + "embed.positions"), self.x(pf + "embed.positions")))
            pid = int(f["positions"][p])
            if RM.position_kind(self.m) == "sinusoidal":
                blocks.append(Para(t("path.position_sinusoid", p=pid)))
            else:
                key = "path.position_row_offset" if pid != p else "path.position_row"
                key = "path.position_row_bart" if self.seq2seq else key
                blocks.append(Para(t(key, p=pid, j=p, P=e.position_embedding.weight.shape[0])))
        elif self.c.position == "rotary":
            blocks.append(Para(t("path.position_rotary")))
        names = [r[0] for r in rows]
        scale = float(getattr(self.c, "embed_scale", 1.0) or 1.0)
        if self.seq2seq and scale != 1.0:  # BART's scale_embedding: the token row × √d before the sum
            blocks.append(Para(t("path.embed_scale_bart", d=self.c.d_model, s=scale)))
        if self.decoder:
            scale = float(np.float32(self.c.embed_scale))
            if scale != 1.0:
                blocks.append(Para(t("path.embed_scale", d=self.c.d_model, s=scale)))
                rows.append((pf + "embed.out", self.x(pf + "embed.out")))
                names.append(self.note("embed", pf + "embed.out"))
        else:
            self.values["embed.sum"] = self.x(pf + "embed.sum")
            if len(rows) > 1:
                rows.append((t("path.sum_row"), self.x(pf + "embed.sum")))
            if e.norm is None:
                names.append(self.note("embed", pf + "embed.out"))
        blocks.append(Formula("x = token + segment + position" if len(rows) > 2 else "x = token + position",
                              r"x=\mathrm{token}+\mathrm{segment}+\mathrm{position}" if len(rows) > 2 else
                              r"x=\mathrm{token}+\mathrm{position}") if not self.decoder and len(rows) > 1 else
                      Formula("x = token row" + (" · √d" if len(rows) > 1 else ""),
                              r"x=\mathrm{token}" + (r"\cdot\sqrt{d}" if len(rows) > 1 else "")))
        blocks.append(vector_table(rows, self.dims))
        blocks.append(trace_para(*names))
        return Step("embed", t("path.step_embed"), blocks)

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

    def attn_in_step(self) -> Step:
        k = self.note("attn_in", f"{self.lp}.{self.att}_in")
        x_in = self.layer_in()
        if self.pre:
            ln = self.layer.ln1
            return Step("attn_in", t(f"path.step_attn_in_{norm_kind(ln)}"),
                        [Para(t("path.attn_in_pre"))] + norm_blocks(x_in[self.p], ln, self.x(k), self.dims) + [trace_para(k)])
        return Step("attn_in", t("path.step_attn_in_post"),
                    [Para(t("path.attn_in_post")), vector_table([(k, self.x(k))], self.dims), trace_para(k)])

    def q_step(self) -> Step:
        return self.query_step(self.att, getattr(self.layer, self.att), f"{self.lp}.{self.att}_in")

    def query_step(self, att: str, attn, in_name: str, kv_tokens: Optional[list] = None) -> Step:
        """q of the head from ``in_name``, K and V of its k/v head (from the keys' own inputs)."""
        c, h, g, lp = self.c, self.h, self.g, self.lp
        dh, H, Hkv = c.d_head, c.n_heads, getattr(c, "kv_heads", c.n_heads)
        a_in = self.x(in_name)
        pre = "q_proj" if self.decoder else "q"
        kpre = "k_proj" if self.decoder else "k"
        qk = self.note("q", f"{lp}.{att}.{pre}", h)
        W, b = attn.W_qkv.weight, attn.W_qkv.bias
        tab = projection_table(a_in, W, range(h * dh, (h + 1) * dh), b, self.x(f"{lp}.{att}.{pre}", h),
                               dims=self.dims, wname="W_Q")
        f = self.f
        K = f[f"{lp}.{att}.{kpre}"][g]
        Vm = f[f"{lp}.{att}.v"][g]
        n = min(self.dims, dh)
        labels = [f"{j}:{tk}" for j, tk in enumerate(kv_tokens or self.labels)]
        from .blocks import Matrix
        blocks = [Formula("q = x W_Q⁽ʰ⁾ + b_Q⁽ʰ⁾", r"q=x\,W_Q^{(h)}+b_Q^{(h)}"),
                  Para(t("path.q_why", h=h, dh=dh, d=a_in.shape[0], first=h * dh, last=(h + 1) * dh - 1,
                         rows=(H + 2 * Hkv) * dh, tok=self.tok)), tab,
                  Para(t("path.q_rest", n=n, dh=dh, q=vec(self.x(f"{lp}.{att}.{pre}", h)[:n]))),
                  Para(t("path.kv_why", g=g, k0=(H + g) * dh, v0=(H + Hkv + g) * dh, dh=dh)),
                  Matrix(Sym("K", "K"), K[:, :n], rows=labels, cols=[str(j) for j in range(n)],
                         caption=t("path.k_caption", n=n, d=dh)),
                  Matrix(Sym("V", "V"), Vm[:, :n], rows=labels, cols=[str(j) for j in range(n)],
                         caption=t("path.v_caption", n=n, d=dh))]
        names = [qk, f"{lp}.{att}.{kpre}[{h}]", f"{lp}.{att}.v[{h}]"]
        self.values[f"{lp}.{att}.{kpre}[{h}]"] = K
        self.values[f"{lp}.{att}.v[{h}]"] = Vm
        blocks.append(trace_para(*names))
        key = "path.step_q_proj" if self.decoder else ("path.step_q_cross" if att == "cross_attn" else "path.step_q")
        return Step("q" if att != "cross_attn" else "cross_q", t(key, h=h), blocks)

