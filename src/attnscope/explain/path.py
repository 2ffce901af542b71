"""One token's whole path through one layer of a real model, worked out: the first article's
pipeline ``text → tokens → ids → embedding rows → (LayerNorm) → q, k, v → scores → softmax →
z → heads concatenated → W_O → residual → norm → feed-forward → residual → the layer's output``.

Every number is recomputed in float64 from the model's weights (:mod:`attnscope.reference_model`:
the embeddings and every earlier layer too), each step names its trace name (what
``model.trace`` records and the viewer shows), and the model's own float32 trace is set beside
each step at the end. Families: BERT-style encoders (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA,
XLM-RoBERTa: post-LN), GPT-2 (pre-LN) and the decoders of the Llama kind (Llama, Qwen2, Mistral,
Gemma 3: RMSNorm, rotary q/k, QK-norm, shared k/v heads, gated MLP, Gemma's sandwich norms).

    >>> w = explain_path("我喜欢人工智能", model, layer=0, head=3, token="喜")
    >>> w.values["layers.0.out"]          # the token's output vector, float64
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import reference as R
from .. import reference_model as RM
from ..errors import InputError
from .blocks import Block, Formula, Para, Step, Sym, Table, t
from .doc import Worked
from .path_blocks import (
    activation_blocks,
    concat_step,
    norm_blocks,
    norm_kind,
    output_step,
    projection_table,
    trace_para,
    vec,
    vector_table,
)
from .row import model_row_data, row_worked


def explain_path(text: str, model=None, layer: int = 0, head: int = 0, token: Optional[str] = None,
                 position: Optional[int] = None, dims: int = 3, expand: str = "auto") -> Worked:
    """The whole path of one token of ``text`` through ``layer`` (query head ``head`` worked out
    in full); see the module docstring. Raises InputError for a model the float64 pass does not
    cover (DeBERTa, encoder–decoder models), an empty text, a layer/head out of range or a token
    not in the text."""
    if model is None or isinstance(model, str):
        from ..models import load
        model = load(model)
    RM.check_supported(model)
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < model.config.n_layers:
        n = model.config.n_layers
        raise InputError(f"layer {layer!r} is out of range: the model has {n} layers (0..{n - 1})")
    if not isinstance(text, str) or not text.strip():
        raise InputError("text must be a non-empty string")
    f = RM.forward(model, text, upto=int(layer))
    d = model_row_data(text, model, layer, head, token, position, operands="weights", forward=f)
    row = row_worked(d, dims, expand)
    diffs = row.meta["trace_max_abs_diff"]
    d["row_diffs"] = {k: diffs[k] for k in ("scores", "weights") if k in diffs}
    P = _Path(model, f, d, dims)
    before = P.before()
    P.mark_row(row.steps)
    after = P.after()
    route = t("path.route0") if P.i == 0 else (t("path.route1") if P.i == 1 else t("path.route", last=P.i - 1))
    intro = [Para(t("path.intro", model=model.name, family=model.family, layer=P.i, head=P.h, tok=P.tok, L=P.n,
                    route=route)), Para(t("path.intro_trace"), style="note")] + [Para(x, style="note") for x in d["notes"]]
    steps = before + row.steps + after + [P.summary()]
    values = dict(row.values)
    values.update(P.values)
    meta = dict(row.meta, kind="path", path=P.meta, trace_path_max_abs_diff=P.diffs)
    return Worked("path", t("path.title", tok=P.tok, layer=P.i, head=P.h), intro, steps, values=values, meta=meta)


class _Path:
    """The steps before and after the attention row, from the float64 pass ``f`` and the trace."""

    def __init__(self, model, f: dict, d: dict, dims: int) -> None:
        self.m, self.f, self.d, self.dims = model, f, d, dims
        self.c = model.config
        self.i, self.h, self.p = d["layer"], d["head"], d["qpos"]
        self.n = len(d["tokens"])
        self.tok = f"{self.p}:{d['tokens'][self.p]}"
        self.decoder = getattr(self.c, "kind", "") == "decoder"
        self.layer = model.layers[self.i]
        self.g = R.kv_head(self.h, self.c.n_heads, self.c.kv_heads)
        self.values: dict = {}
        self.meta: list = []
        self.diffs: dict = {}
        names = [nm for nm in model.hook_names if nm.startswith("embed.") or nm.startswith(f"layers.{self.i}.")]
        names = [nm for nm in names if nm.split(".")[-1] not in ("scores", "scaled", "masked", "weights", "mask", "bias")]
        if self.i > 0:
            names.append(f"layers.{self.i - 1}.out")
        self.tr = model.trace(d["text"], names=names)

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
        e = self.m.embed
        if not self.decoder and e.norm is not None:
            k = self.note("embed_norm", "embed.out")
            steps.append(Step("embed_norm", t("path.step_embed_norm"),
                              [Para(t("path.embed_norm_why"))] +
                              norm_blocks(self.x("embed.sum"), e.norm, self.x("embed.out"), self.dims) + [trace_para(k)]))
        if "embed.projected" in self.f:
            k = self.note("embed_projected", "embed.projected")
            E, dm = e.proj.weight.shape[1], e.proj.weight.shape[0]
            tab = projection_table(self.x("embed.out"), e.proj.weight, range(dm), e.proj.bias, self.x("embed.projected"),
                                   dims=self.dims, wname="W_p")
            steps.append(Step("embed_projected", t("path.step_projected"),
                              [Para(t("path.projected_why", E=E, d=dm)), tab, trace_para(k)]))
        if self.i > 0:
            k = self.note("earlier", f"layers.{self.i - 1}.out")
            below = "0" if self.i == 1 else f"0 … {self.i - 1}"
            steps.append(Step("earlier", t("path.step_earlier", layers=below),
                              [Para(t("path.earlier_why", i=self.i, layers=below, last=self.i - 1, tok=self.tok)),
                               vector_table([(k, self.x(k))], self.dims), trace_para(k)]))
        steps.append(self.attn_in_step())
        steps.append(self.q_step())
        return steps

    def tokens_step(self) -> Step:
        f = self.f
        seg = f["segments"]
        header = [t("col.pos"), t("path.col_piece"), t("path.col_id")] + ([t("path.col_segment")] if seg is not None else [])
        body = []
        for j, (tk, i) in enumerate(zip(f["tokens"], f["ids"])):
            body.append([j, tk, int(i)] + ([int(seg[j])] if seg is not None else []))
        tz = self.m.tokenizer
        blocks = [Para(t("path.tokens_why", L=self.n, V=self.c.vocab_size, tok=self.tok, id=int(f["ids"][self.p]))),
                  Table(header, body)]
        if tz is not None and tz.byte_level:
            blocks.append(Para(t("path.byte_level"), style="note"))
        self.values["ids"] = f["ids"]
        return Step("tokens", t("path.step_tokens"), blocks)

    def embed_step(self) -> Step:
        f, p = self.f, self.p
        e = self.m.embed
        tid = int(f["ids"][p])
        V, E = e.token_embedding.weight.shape
        rows: list[tuple[Any, np.ndarray]] = [(self.note("embed", "embed.tokens"), self.x("embed.tokens"))]
        blocks: list[Block] = [Para(t("path.token_row", id=tid, V=V, E=E, tok=self.tok))]
        if "embed.segments" in f:
            rows.append((self.note("embed", "embed.segments"), self.x("embed.segments")))
            blocks.append(Para(t("path.segment_row", s=int(f["segments"][p]), n=e.segment_embedding.weight.shape[0])))
        if "embed.positions" in f:
            rows.append((self.note("embed", "embed.positions"), self.x("embed.positions")))
            pid = int(f["positions"][p])
            if RM.position_kind(self.m) == "sinusoidal":
                blocks.append(Para(t("path.position_sinusoid", p=pid)))
            else:
                key = "path.position_row_offset" if pid != p else "path.position_row"
                blocks.append(Para(t(key, p=pid, j=p, P=e.position_embedding.weight.shape[0])))
        elif self.c.position == "rotary":
            blocks.append(Para(t("path.position_rotary")))
        names = [r[0] for r in rows]
        if self.decoder:
            scale = float(np.float32(self.c.embed_scale))
            if scale != 1.0:
                blocks.append(Para(t("path.embed_scale", d=self.c.d_model, s=scale)))
                rows.append(("embed.out", self.x("embed.out")))
                names.append(self.note("embed", "embed.out"))
        else:
            self.values["embed.sum"] = self.x("embed.sum")
            if len(rows) > 1:
                rows.append((t("path.sum_row"), self.x("embed.sum")))
            if e.norm is None:
                names.append(self.note("embed", "embed.out"))
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
        d = len(self.x("embed.positions"))
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
        k = self.note("attn_in", f"layers.{self.i}.attn_in")
        x_in = RM.layer_input(self.f, self.i)
        if self.decoder or self.layer.pre_norm:
            ln = self.layer.ln1
            return Step("attn_in", t(f"path.step_attn_in_{norm_kind(ln)}"),
                        [Para(t("path.attn_in_pre"))] + norm_blocks(x_in[self.p], ln, self.x(k), self.dims) + [trace_para(k)])
        return Step("attn_in", t("path.step_attn_in_post"),
                    [Para(t("path.attn_in_post")), vector_table([(k, self.x(k))], self.dims), trace_para(k)])

    def q_step(self) -> Step:
        c, attn, h, g = self.c, self.layer.attn, self.h, self.g
        dh, H, Hkv = c.d_head, c.n_heads, c.kv_heads
        a_in = self.x(f"layers.{self.i}.attn_in")
        pre = "q_proj" if self.decoder else "q"
        kpre = "k_proj" if self.decoder else "k"
        qk = self.note("q", f"layers.{self.i}.attn.{pre}", h)
        W, b = attn.W_qkv.weight, attn.W_qkv.bias
        tab = projection_table(a_in, W, range(h * dh, (h + 1) * dh), b, self.x(f"layers.{self.i}.attn.{pre}", h),
                               dims=self.dims, wname="W_Q")
        f = self.f
        K = f[f"layers.{self.i}.attn.{kpre}"][g]
        Vm = f[f"layers.{self.i}.attn.v"][g]
        n = min(self.dims, dh)
        labels = [f"{j}:{tk}" for j, tk in enumerate(self.d["tokens"])]
        from .blocks import Matrix
        blocks = [Formula("q = x W_Q⁽ʰ⁾ + b_Q⁽ʰ⁾", r"q=x\,W_Q^{(h)}+b_Q^{(h)}"),
                  Para(t("path.q_why", h=h, dh=dh, d=a_in.shape[0], first=h * dh, last=(h + 1) * dh - 1,
                         rows=(H + 2 * Hkv) * dh, tok=self.tok)), tab,
                  Para(t("path.q_rest", n=n, dh=dh, q=vec(self.x(f"layers.{self.i}.attn.{pre}", h)[:n]))),
                  Para(t("path.kv_why", g=g, k0=(H + g) * dh, v0=(H + Hkv + g) * dh, dh=dh)),
                  Matrix(Sym("K", "K"), K[:, :n], rows=labels, cols=[str(j) for j in range(n)],
                         caption=t("path.k_caption", n=n, d=dh)),
                  Matrix(Sym("V", "V"), Vm[:, :n], rows=labels, cols=[str(j) for j in range(n)],
                         caption=t("path.v_caption", n=n, d=dh))]
        names = [qk, f"layers.{self.i}.attn.{kpre}[{h}]", f"layers.{self.i}.attn.v[{h}]"]
        self.values[f"layers.{self.i}.attn.{kpre}[{h}]"] = K
        self.values[f"layers.{self.i}.attn.v[{h}]"] = Vm
        blocks.append(trace_para(*names))
        return Step("q", t("path.step_q_proj" if self.decoder else "path.step_q", h=h), blocks)

    # -- after attention ----------------------------------------------------------------------
    def after(self) -> list:
        i, p = self.i, f"layers.{self.i}"
        z = self.f[f"{p}.attn.z"][:, self.p]  # (H, d_head)
        for h in range(z.shape[0]):
            self.note("z", f"{p}.attn.z", h)
        steps = [concat_step(z, self.h, self.dims, self.tok, [f"{p}.attn.z", self.note("concat", f"{p}.attn.merged")])]
        attn = self.layer.attn
        out = self.note("attn_out", f"{p}.attn.out")
        steps.append(output_step(z, attn.W_O.weight, attn.W_O.bias, self.x(out), self.dims, self.h, [out]))
        added = out
        if getattr(self.layer, "sandwich", False):
            added = self.note("attn_post_norm", f"{p}.attn_post_norm")
            steps.append(Step("attn_post_norm", t("path.step_post_norm"),
                              [Para(t("path.post_norm_why"))] +
                              norm_blocks(self.x(out), self.layer.ln_attn_post, self.x(added), self.dims) + [trace_para(added)]))
        x_in = RM.layer_input(self.f, i)[self.p]
        r = self.note("attn_resid", f"{p}.attn_resid")
        steps.append(Step("attn_resid", t("path.step_resid1"),
                          [Formula("x + attention(x)", r"x+\mathrm{attention}(x)"), Para(t("path.resid_why", tok=self.tok)),
                           vector_table([(t("path.x_in"), x_in), (added, self.x(added)), (r, self.x(r))], self.dims),
                           trace_para(r)]))
        fin = self.note("ffn_in", f"{p}.ffn_in")
        ln = self.layer.ln2 if (self.decoder or self.layer.pre_norm) else self.layer.ln1
        why = "path.ffn_in_post" if not (self.decoder or self.layer.pre_norm) else "path.ffn_in_pre"
        steps.append(Step("ffn_in", t(f"path.step_ffn_in_{norm_kind(ln)}"),
                          [Para(t(why))] + norm_blocks(self.x(r), ln, self.x(fin), self.dims) + [trace_para(fin)]))
        steps += self.ffn_steps(fin)
        return steps

    def ffn_steps(self, fin: str) -> list:
        p, ffn, c = f"layers.{self.i}", self.layer.ffn, self.c
        x = self.x(fin)
        steps = []
        d_ff = ffn.W_2.weight.shape[1]
        hidden = self.note("ffn", f"{p}.ffn.hidden")
        if self.decoder:
            gate = self.note("ffn", f"{p}.ffn.gate")
            g_tab = projection_table(x, ffn.W_1.weight, range(d_ff), ffn.W_1.bias, self.x(f"{p}.ffn.gate_pre"),
                                     dims=self.dims, wname="W_g")
            u_tab = projection_table(x, ffn.W_1.weight, range(d_ff, 2 * d_ff), ffn.W_1.bias, self.x(f"{p}.ffn.up"),
                                     dims=self.dims, wname="W_u")
            self.values[f"{p}.ffn.gate_pre"], self.values[f"{p}.ffn.up"] = self.x(f"{p}.ffn.gate_pre"), self.x(f"{p}.ffn.up")
            act = activation_blocks(c.activation, self.x(f"{p}.ffn.gate_pre"), self.x(gate), self.dims,
                                    up=self.x(f"{p}.ffn.up"), hidden=self.x(hidden))
            blocks = [Formula("hidden = act(x W_gate) ⊙ (x W_up)", r"\mathrm{hidden}=\mathrm{act}(x W_{gate})\odot(x W_{up})"),
                      Para(t("path.gated_why", dff=d_ff, act=c.activation)), Para(t("path.gate_proj")), g_tab,
                      Para(t("path.up_proj")), u_tab] + act + [trace_para(gate, hidden)]
            steps.append(Step("ffn", t("path.step_ffn_gated"), blocks))
        else:
            self.values[f"{p}.ffn.pre"] = self.x(f"{p}.ffn.pre")
            tab = projection_table(x, ffn.W_1.weight, range(d_ff), ffn.W_1.bias, self.x(f"{p}.ffn.pre"),
                                   dims=self.dims, wname="W_1")
            act = activation_blocks(c.activation, self.x(f"{p}.ffn.pre"), self.x(hidden), self.dims)
            pos = int((self.x(f"{p}.ffn.pre") > 0).sum())
            blocks = [Formula("hidden = act(x W_1 + b_1)", r"\mathrm{hidden}=\mathrm{act}(x W_1+b_1)"),
                      Para(t("path.ffn_why", dff=d_ff, d=len(x), act=c.activation)), tab] + act + \
                     [Para(t("path.ffn_positive", k=pos, dff=d_ff)), trace_para(hidden)]
            steps.append(Step("ffn", t("path.step_ffn"), blocks))
        fout = self.note("ffn_out", f"{p}.ffn.out")
        tab = projection_table(self.x(hidden), ffn.W_2.weight, range(ffn.W_2.weight.shape[0]), ffn.W_2.bias,
                               self.x(fout), dims=self.dims, xname="h", wname="W_2")
        steps.append(Step("ffn_out", t("path.step_ffn_out"),
                          [Formula("ffn.out = hidden W_2 + b_2", r"\mathrm{ffn.out}=\mathrm{hidden}\,W_2+b_2"), tab,
                           trace_para(fout)]))
        added = fout
        if getattr(self.layer, "sandwich", False):
            added = self.note("ffn_post_norm", f"{p}.ffn_post_norm")
            steps.append(Step("ffn_post_norm", t("path.step_post_norm_ffn"),
                              [Para(t("path.post_norm_why_ffn"))] +
                              norm_blocks(self.x(fout), self.layer.ln_ffn_post, self.x(added), self.dims) + [trace_para(added)]))
        post = not (self.decoder or self.layer.pre_norm)
        base = fin if post else f"{p}.attn_resid"
        s = self.note("ffn_resid", f"{p}.ffn_resid")
        steps.append(Step("ffn_resid", t("path.step_resid2"),
                          [Para(t("path.resid2_post" if post else "path.resid2_pre", base=base)),
                           vector_table([(base, self.x(base)), (added, self.x(added)), (s, self.x(s))], self.dims),
                           trace_para(s)]))
        out = self.note("out", f"{p}.out")
        if post:
            steps.append(Step("out", t("path.step_out_ln"),
                              [Para(t("path.out_post"))] + norm_blocks(self.x(s), self.layer.ln2, self.x(out), self.dims)
                              + [trace_para(out)]))
        else:
            steps.append(Step("out", t("path.step_out"), [Para(t("path.out_pre", s=s)),
                                                          vector_table([(out, self.x(out))], self.dims), trace_para(out)]))
        return steps

    # -- the end ------------------------------------------------------------------------------
    def mark_row(self, steps: list) -> None:
        """Add the trace names to the attention row's steps (built by :func:`.row.build_row`)."""
        p, h = f"layers.{self.i}.attn", self.h
        names = {"scores": [f"{p}.scores[{h}]"], "scaled": [f"{p}.scaled[{h}]"], "exp": [f"{p}.masked[{h}]"],
                 "weights": [f"{p}.weights[{h}]"], "output": [f"{p}.z[{h}]"],
                 "qk_norm": [f"{p}.q_normed[{h}]", f"{p}.k_normed[{h}]"], "rotation": [f"{p}.q[{h}]", f"{p}.k[{h}]"]}
        for s in steps:
            if s.key in names:
                s.blocks.append(trace_para(*names[s.key]))
            if s.key == "result":
                s.title = t("path.step_row_result", h=h)
        for key, diff in self.d["row_diffs"].items():
            self.meta.append({"step": "row", "trace": f"{p}.{key}[{h}]", "max_abs_diff": diff})

    def summary(self) -> Step:
        rows = []
        for m in self.meta:
            if m["step"] == "z" and not m["trace"].endswith(f"[{self.h}]"):
                continue  # the other heads' z: in JSON, not in the table
            rows.append([m["trace"], t(f"path.what.{_what(m['trace'], self.i)}"),
                         f"{m['max_abs_diff']:.1e}" if m["max_abs_diff"] is not None else "—"])
        x_in = RM.layer_input(self.f, self.i)[self.p]
        out = self.x(f"layers.{self.i}.out")
        cos = float(x_in @ out / (np.linalg.norm(x_in) * np.linalg.norm(out)))
        worst = max((m["max_abs_diff"] for m in self.meta if m["max_abs_diff"] is not None), default=0.0)
        blocks = [Table([t("path.col_trace"), t("path.col_what"), t("path.col_diff")], rows),
                  Para(t("path.summary_diff", worst=f"{worst:.1e}")),
                  Para(t("path.context", tok=self.tok, i=self.i, a=float(np.linalg.norm(x_in)),
                         b=float(np.linalg.norm(out)), cos=cos))]
        return Step("summary", t("path.step_summary"), blocks)


def _what(name: str, layer: int) -> str:
    """The label suffix that says what a trace name holds (``layers.3.attn.q[2]`` → ``attn.q``)."""
    if name == f"layers.{layer - 1}.out":
        return "earlier"
    base = name.split("[")[0]
    return base.split(f"layers.{layer}.", 1)[1] if base.startswith(f"layers.{layer}.") else base
