"""The layer part of one token's whole path (:mod:`.path`), written from the layer's recipe
(:mod:`attnscope.recipe`): a writer for each op — ``norm`` and ``same`` (one writer), ``add``,
``attention`` and ``cross_attention`` (the head's query, its row, the heads side by side and
``W_O``) and ``mlp`` — so a layer variant registered as a recipe gets its worked path with no code here.

A writer takes the path (:class:`.path_steps.PathSteps`: the numbers of
:class:`.path_values.PathValues` and ``note``, which records each vector shown beside the model's
trace) and one recipe step, and returns the worked :class:`~.blocks.Step` s. The words of a step
are data: :data:`WORDS` by op and step name, a recipe's own wording where the labels have one
(label ``key.recipe``, e.g. OLMo 2's ``post_block``), the op's generic words for other names.
"""

from __future__ import annotations

from ..recipe import BLOCK_OPS
from .blocks import Block, Formula, Matrix, Para, Step, Sym, T, t, t_or, vec
from .path_blocks import (
    activation_blocks,
    concat_step,
    norm_blocks,
    norm_kind,
    output_step,
    projection_table,
    trace_para,
    vector_table,
)

#: (title, why) label keys of a ``norm`` or ``same`` step by its name ("": any other name);
#: ``{kind}``: ln or rms (the norm's), ``{side}``: post when the value is also a residual sum's base.
WORDS = {
    "norm": {"attn_in": ("path.step_attn_in_{kind}", "path.attn_in_pre"),
             "cross_attn_in": ("path.step_cross_in_{kind}", "path.cross_in_{side}"),
             "ffn_in": ("path.step_ffn_in_{kind}", "path.ffn_in_{side}"),
             "out": ("path.step_out_{kind}", "path.out_post"),
             "attn_post_norm": ("path.step_post_norm", "path.post_norm_why"),
             "ffn_post_norm": ("path.step_post_norm_ffn", "path.post_norm_why_ffn"),
             "": ("path.step_norm_{kind}", "path.norm_why")},
    "same": {"attn_in": ("path.step_attn_in_post", "path.attn_in_post"),
             "ffn_in": ("path.step_ffn_in_same", "path.ffn_in_same"),
             "out": ("path.step_out", "path.out_pre"),
             "": ("path.step_same", "path.same_why")},
}


def layer_steps(P) -> list:
    """The worked steps of the layer: each step of ``P.recipe`` by the writer of its op."""
    return [step for s in P.recipe.steps for step in WRITERS[s.op](P, s)]


def _key(name: str) -> str:
    """The step key (and note) of a recipe step: the decoder's ``self_attn_in`` is ``attn_in``."""
    return name[len("self_"):] if name.startswith("self_") else name


def _words(P, step, **params) -> tuple[T, T]:
    """The title and the why of a ``norm`` or ``same`` step (see :data:`WORDS`); ``{s}``: the trace name of its input."""
    table = WORDS[step.op]
    params["s"] = step.args[0] if step.args[0] == "x" else P.name(step.args[0])
    side = "post" if any(o.op == "add" and o.args[0] == step.name for o in P.recipe.steps) else "pre"
    keys = (k.format(side=side, kind=params.get("kind", "")) for k in table.get(_key(step.name), table[""]))
    return tuple(t_or(f"{k}.{P.recipe.name}", k, **params) for k in keys)  # type: ignore[return-value]


def norm(P, s) -> list:
    """A ``norm`` step written out, or a ``same`` step's vector (its input under the step's name)."""
    key = _key(s.name)
    k = P.note(key, P.name(s.name))
    if s.op == "same":
        title, why = _words(P, s, name=k)
        body = [vector_table([(k, P.x(k))], P.dims)]
    else:
        module = getattr(P.layer, s.module)
        title, why = _words(P, s, kind=norm_kind(module), name=k, module=s.module)
        body = norm_blocks(P.vec(s.args[0]), module, P.x(k), P.dims)
    return [Step(key, title, [Para(why)] + body + [trace_para(k)])]


def add(P, s) -> list:
    """A residual sum: after attention (its ``x + attention(x)``) or after the MLP."""
    base, added = s.args
    block = P.recipe.step(added)
    while block.op not in BLOCK_OPS:
        block = P.recipe.step(block.args[0])
    if block.op == "mlp":
        # the decoder of an encoder–decoder: the third (after self- and cross-attention's)
        title = t_or(f"path.step_resid2.{P.recipe.name}", "path.step_resid2")
        key, sfx, label = "ffn_resid", "", t("path.x_in") if base == "x" else P.name(base)
        lead: list[Block] = [Para(t("path.resid2_post" if base == block.args[0] else "path.resid2_pre", base=label))]
    else:
        sfx = "_cross" if block.op == "cross_attention" else ""
        key, title, label = "attn_resid", t("path.step_resid1" + sfx), t("path.x_in")
        lead = [Formula("x + attention(x)", r"x+\mathrm{attention}(x)"), Para(t("path.resid_why", tok=P.tok))]
    k = P.note(key, P.name(s.name))
    rows = [(label, P.vec(base)), (P.name(added), P.vec(added)), (k, P.x(k))]
    return [Step(key + sfx, title, lead + [vector_table(rows, P.dims), trace_para(k)])]


def attention(P, s) -> list:
    """The attention block for the token: its query (and the keys and values of its k/v head), the
    row of the head (built beforehand: ``P.rows``), the heads side by side and ``W_O``."""
    att, module = s.name, getattr(P.layer, s.name)
    sfx = "_cross" if s.op == "cross_attention" else ""
    steps = P.before_query(s) + [query_step(P, att, module, P.name(s.args[0]), bool(sfx))] + P.after_query(s)
    row, diffs = P.rows[att]
    P.mark_row(row.steps, att, diffs, cross=bool(sfx))
    p = f"{P.lp}.{att}"
    z = P.f[f"{p}.z"][:, P.p]  # (H, d_head)
    for h in range(z.shape[0]):
        P.note("z", f"{p}.z", h)
    heads = concat_step(z, P.h, P.dims, P.tok, [f"{p}.z", P.note("concat", f"{p}.merged")])
    out = P.note("attn_out", f"{p}.out")
    wo = output_step(z, module.W_O.weight, module.W_O.bias, P.x(out), P.dims, P.h, [out])
    heads.key, wo.key = heads.key + sfx, wo.key + sfx
    return steps + row.steps + [heads, wo]


def query_step(P, att: str, attn, in_name: str, cross: bool) -> Step:
    """q of the head from ``in_name``, K and V of its k/v head (from the keys' own inputs)."""
    c, h, g, lp = P.c, P.h, P.g, P.lp
    dh, H, Hkv = c.d_head, c.n_heads, getattr(c, "kv_heads", c.n_heads)
    a_in = P.x(in_name)
    pre, kpre = ("q_proj", "k_proj") if P.decoder else ("q", "k")
    qk = P.note("q", f"{lp}.{att}.{pre}", h)
    tab = projection_table(a_in, attn.W_qkv.weight, range(h * dh, (h + 1) * dh), attn.W_qkv.bias,
                           P.x(f"{lp}.{att}.{pre}", h), dims=P.dims, wname="W_Q")
    K, Vm = P.f[f"{lp}.{att}.{kpre}"][g], P.f[f"{lp}.{att}.v"][g]
    n = min(P.dims, dh)
    labels = [f"{j}:{tk}" for j, tk in enumerate(P.d["source_labels"] if cross else P.labels)]
    cols = [str(j) for j in range(n)]
    names = [qk, f"{lp}.{att}.{kpre}[{h}]", f"{lp}.{att}.v[{h}]"]
    P.values[names[1]], P.values[names[2]] = K, Vm
    biased = attn.W_qkv.bias is not None  # T5 and the Llama kind have none: no "+ b" in the words
    blocks = [Formula("q = x W_Q⁽ʰ⁾ + b_Q⁽ʰ⁾", r"q=x\,W_Q^{(h)}+b_Q^{(h)}") if biased else
              Formula("q = x W_Q⁽ʰ⁾", r"q=x\,W_Q^{(h)}"),
              Para(t("path.q_why", h=h, dh=dh, d=a_in.shape[0], first=h * dh, last=(h + 1) * dh - 1,
                     rows=(H + 2 * Hkv) * dh, tok=P.tok, bias=t("path.plus_bias") if biased else "")), tab,
              Para(t("path.q_rest", n=n, dh=dh, q=vec(P.x(f"{lp}.{att}.{pre}", h)[:n]))),
              Para(t("path.kv_why", g=g, k0=(H + g) * dh, v0=(H + Hkv + g) * dh, dh=dh)),
              Matrix(Sym("K", "K"), K[:, :n], rows=labels, cols=cols, caption=t("path.k_caption", n=n, d=dh)),
              Matrix(Sym("V", "V"), Vm[:, :n], rows=labels, cols=cols, caption=t("path.v_caption", n=n, d=dh)),
              trace_para(*names)]
    key = "path.step_q_proj" if P.decoder else ("path.step_q_cross" if cross else "path.step_q")
    key += "" if biased or P.decoder else "_nobias"
    return Step("cross_q" if cross else "q", t(key, h=h), blocks)


def mlp(P, s) -> list:
    """The MLP on the token: its first projection (a gated MLP's gate and up) and activation, then
    its output projection."""
    p, ffn, c = f"{P.lp}.{s.name}", getattr(P.layer, s.name), P.c
    x = P.vec(s.args[0])
    d_ff = ffn.W_2.weight.shape[1]
    hidden = P.note("ffn", f"{p}.hidden")
    if P.gated:
        gate = P.note("ffn", f"{p}.gate")
        pre, up = P.x(f"{p}.gate_pre"), P.x(f"{p}.up")
        P.values[f"{p}.gate_pre"], P.values[f"{p}.up"] = pre, up
        tabs = [projection_table(x, ffn.W_1.weight, rows, ffn.W_1.bias, y, dims=P.dims, wname=w)
                for rows, y, w in ((range(d_ff), pre, "W_g"), (range(d_ff, 2 * d_ff), up, "W_u"))]
        blocks = [Formula("hidden = act(x W_gate) ⊙ (x W_up)", r"\mathrm{hidden}=\mathrm{act}(x W_{gate})\odot(x W_{up})"),
                  Para(t("path.gated_why", dff=d_ff, act=c.activation)), Para(t("path.gate_proj")), tabs[0],
                  Para(t("path.up_proj")), tabs[1]]
        blocks += activation_blocks(c.activation, pre, P.x(gate), P.dims, up=up, hidden=P.x(hidden))
        steps = [Step("ffn", t("path.step_ffn_gated"), blocks + [trace_para(gate, hidden)])]
    else:
        pre = P.values[f"{p}.pre"] = P.x(f"{p}.pre")
        biased = ffn.W_1.bias is not None
        blocks = [Formula("hidden = act(x W_1 + b_1)", r"\mathrm{hidden}=\mathrm{act}(x W_1+b_1)") if biased else
                  Formula("hidden = act(x W_1)", r"\mathrm{hidden}=\mathrm{act}(x W_1)"),
                  Para(t("path.ffn_why", dff=d_ff, d=len(x), act=c.activation, bias=t("path.and_bias") if biased else "")),
                  projection_table(x, ffn.W_1.weight, range(d_ff), ffn.W_1.bias, pre, dims=P.dims, wname="W_1")]
        blocks += activation_blocks(c.activation, pre, P.x(hidden), P.dims)
        blocks += [Para(t("path.ffn_positive", k=int((pre > 0).sum()), dff=d_ff)), trace_para(hidden)]
        steps = [Step("ffn", t("path.step_ffn"), blocks)]
    out = P.note("ffn_out", f"{p}.out")
    tab = projection_table(P.x(hidden), ffn.W_2.weight, range(ffn.W_2.weight.shape[0]), ffn.W_2.bias, P.x(out),
                           dims=P.dims, xname="h", wname="W_2")
    return steps + [Step("ffn_out", t("path.step_ffn_out"), [
        Formula("ffn.out = hidden W_2 + b_2", r"\mathrm{ffn.out}=\mathrm{hidden}\,W_2+b_2"), tab, trace_para(out)])]


#: The writer of each op of a recipe (:data:`attnscope.recipe.OPS`).
WRITERS = {"norm": norm, "same": norm, "add": add, "attention": attention, "cross_attention": attention, "mlp": mlp}
