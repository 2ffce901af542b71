/* attnscope viewer, encoder–decoder models: the head, model and step views of the Seq2SeqViewer
 * (viewer_seq2seq.js). */
(function (A) {
  "use strict";
  if (!A || !A.Seq2SeqViewer || A.Seq2SeqViewer.prototype.renderHead) return;
  var U = A.util, el = U.el, show = A.show, ROW = U.ROW, tokLabel = U.tokLabel, headColor = U.headColor, tr = A.tr;
  var P = A.Seq2SeqViewer.prototype, TITLE_OF = A.Seq2SeqViewer.title, LINE_BUDGET = U.LINE_BUDGET;

  // ---- head view ---------------------------------------------------------------------------------
  P.minWeight = function (only) {
    if (only !== null) return 0;
    var s = this.state, p = this.pair(), n = p.nq(s.att) * p.nk(s.att), bins = new Float64Array(1001), total = 0;
    for (var hi = 0; hi < s.heads.length; hi++) {
      var W = p.weights(s.att, s.layer, s.heads[hi]);
      for (var i = 0; i < n; i++) if (W[i] > 0) { bins[Math.min(1000, Math.floor(W[i] * 1000))]++; total++; }
    }
    return U.lineThreshold(bins, total, LINE_BUDGET);
  };
  P.pairGeo = function () {
    var p = this.pair(), s = this.state, c = document.createElement("canvas").getContext("2d"), widest = 0;
    c.font = "13px " + U.FONT;
    p.qTokens(s.att).concat(p.kTokens(s.att)).forEach(function (t) { widest = Math.max(widest, c.measureText(tokLabel(t)).width); });
    var tokW = Math.round(Math.min(220, Math.max(70, widest + 20)));
    var lineW = Math.round(Math.min(560, Math.max(240, (this.body.clientWidth || 900) - 2 * tokW - 24)));
    return { tokW: tokW, lineW: lineW, top: 24 };
  };
  // lines of the selected heads: queries at x0 (rows from y0), keys at x1
  P.paintLines = function (pn, x0, x1, y0) {
    var p = this.pair(), s = this.state, nq = p.nq(s.att), nk = p.nk(s.att), only = s.hover !== null ? s.hover : s.query, minw = this.minWeight(only), nh = s.heads.length;
    for (var hi = 0; hi < nh; hi++) {
      var h = s.heads[hi], W = p.weights(s.att, s.layer, h), buckets = [];
      for (var b = 0; b < 16; b++) buckets.push([]);
      for (var i = only !== null ? only : 0; i < (only !== null ? only + 1 : nq); i++)
        for (var j = 0; j < nk; j++) {
          var w = W[i * nk + j];
          if (w > 0 && w >= minw) buckets[U.bucketOf(w)].push(x0, y0 + i * ROW + ROW / 2, x1, y0 + j * ROW + ROW / 2);
        }
      U.paintBuckets(pn, buckets, headColor(h), nh);
    }
    return minw;
  };
  P.sides = function () {
    var att = this.state.att;
    var keys = att === "encoder" ? ["viewer.s2s_src_q", "viewer.s2s_src_k"] : att === "self" ? ["viewer.s2s_tgt_q", "viewer.s2s_tgt_k"] : ["viewer.s2s_tgt_q", "viewer.s2s_src_kv"];
    return keys.map(function (k) { return tr(k); });
  };
  P.renderHead = function () {
    var self = this, p = this.pair(), s = this.state, qt = p.qTokens(s.att), kt = p.kTokens(s.att), g = this.geo = this.pairGeo();
    var note = el("div", { cls: "as-note", "data-testid": "head-note" }, this.body);
    var rows = Math.max(qt.length, kt.length), H = g.top + rows * ROW + 8;
    var scroll = el("div", { cls: "as-hv-scroll" }, this.body);
    var box = el("div", { cls: "as-hv", "data-testid": "head-view", style: "height:" + H + "px;width:" + (2 * g.tokW + g.lineW) + "px" }, scroll);
    var sides = this.sides();
    var lab = "position:absolute;top:3px;white-space:nowrap;font-size:12px;font-weight:600;color:var(--muted);";
    el("div", { "data-testid": "side-q", style: lab + "left:6px", text: "← " + sides[0] }, box);
    el("div", { "data-testid": "side-k", style: lab + "right:6px", text: sides[1] + " →" }, box);
    var canvas = el("canvas", { style: "top:" + g.top + "px;left:" + g.tokW + "px;width:" + g.lineW + "px;height:" + rows * ROW + "px" }, box);
    var dpr = Math.min(2, window.devicePixelRatio || 1);
    canvas.width = Math.round(g.lineW * dpr); canvas.height = Math.round(rows * ROW * dpr);
    var ctx = canvas.getContext("2d");
    this.redraw = function () {
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0); ctx.clearRect(0, 0, g.lineW, rows * ROW);
      var minw = self.paintLines(new A.CanvasPainter(ctx), 4, g.lineW - 4, 0);
      note.textContent = tr("viewer.s2s_head_note", { left: sides[0], right: sides[1], below: minw > 0 ? tr("viewer.head_below", { w: show(minw, 3) }) : "" });
      var q = s.hover !== null ? s.hover : s.query;
      self.kEls.forEach(function (e, j) { e.classList.toggle("hid-causal", q !== null && p.hidden(s.att, q, j)); });
    };
    this.qEls = []; this.kEls = [];
    var qp = p.qPieces(s.att), kp = p.kPieces(s.att);  // the tokenizer's own pieces (▁the), where they differ from the label
    qt.forEach(function (t, i) {
      self.qEls.push(el("div", { cls: "as-tok q" + (s.query === i ? " sel" : ""), "data-i": i, "data-testid": "q-" + i, "data-piece": qp[i],
        style: "top:" + (g.top + i * ROW + 1) + "px;left:0;width:" + g.tokW + "px", text: tokLabel(t) }, box));
    });
    kt.forEach(function (t, j) {
      self.kEls.push(el("div", { cls: "as-tok k", "data-j": j, "data-testid": "k-" + j, "data-piece": kp[j],
        style: "top:" + (g.top + j * ROW + 1) + "px;left:" + (g.tokW + g.lineW) + "px;width:" + g.tokW + "px", text: tokLabel(t) }, box));
    });
    box.addEventListener("mouseover", function (ev) { var e = ev.target.closest(".as-tok.q"); if (e) { s.hover = +e.getAttribute("data-i"); self.redraw(); } });
    box.addEventListener("mouseleave", function () { s.hover = null; self.hideTip(); self.redraw(); });
    box.addEventListener("mousemove", function (ev) {
      var e = ev.target.closest(".as-tok[data-i],.as-tok[data-j]"); if (!e) { self.hideTip(); return; }
      self.showTip(ev, self.tokenTip(e));
    });
    box.addEventListener("click", function (ev) {
      var e = ev.target.closest(".as-tok.q"); if (!e) return;
      var i = +e.getAttribute("data-i"); s.query = s.query === i ? null : i;
      self.qEls.forEach(function (x, k) { x.classList.toggle("sel", k === s.query); });
      self.redraw(); self.writeHash();
    });
    box.addEventListener("dblclick", function (ev) {
      var e = ev.target.closest(".as-tok.q"); if (!e) return;
      self.set({ view: "step", query: +e.getAttribute("data-i"), focus: s.heads.length && s.heads.indexOf(s.focus) < 0 ? s.heads[0] : s.focus });
    });
    this.redraw();
  };
  P.tokenTip = function (e) {
    var p = this.pair(), s = this.state, dec = s.dec, qt = p.qTokens(s.att), kt = p.kTokens(s.att), lines = [];
    if (e.hasAttribute("data-i")) {
      var i = +e.getAttribute("data-i");
      lines.push(tr("viewer.s2s_tip_query", { i: i, token: qt[i], attention: TITLE_OF(s.att).toLowerCase(), layer: s.layer }));
      if (p.qPieces(s.att)[i] !== qt[i]) lines.push(tr("viewer.s2s_piece", { piece: p.qPieces(s.att)[i] }));
      s.heads.slice(0, 12).forEach(function (h) {
        var w = p.steps(s.att, s.layer, h, i).weights, best = 0;
        for (var j = 1; j < w.length; j++) if (w[j] > w[best]) best = j;
        lines.push(tr("viewer.tip_best", { head: h, w: show(w[best], dec), j: best, token: kt[best] }));
      });
      lines.push(tr("viewer.tip_query_click"));
    } else {
      var j = +e.getAttribute("data-j"), q = s.hover !== null ? s.hover : s.query;
      lines.push(tr("viewer.tip_key", { j: j, token: kt[j] }));
      if (p.kPieces(s.att)[j] !== kt[j]) lines.push(tr("viewer.s2s_piece", { piece: p.kPieces(s.att)[j] }));
      if (q === null) lines.push(tr("viewer.tip_key_none"));
      else s.heads.forEach(function (h) {
        var w = p.steps(s.att, s.layer, h, q).weights[j];
        lines.push(tr("viewer.tip_key_weight", { head: h, q: qt[q], k: kt[j], w: show(w, dec), x: String(w) }));
      });
    }
    return lines.join("\n");
  };
  P.paintHead = function (pn, w, h) {
    var p = this.pair(), s = this.state, g = this.geo || this.pairGeo(), qt = p.qTokens(s.att), kt = p.kTokens(s.att), top = 52, sides = this.sides();
    pn.rect(0, 0, w, h, "#fff");
    pn.text(8, 14, tr("viewer.s2s_paint_head", { model: this.data.model, attention: TITLE_OF(s.att), layer: s.layer,
      heads: s.heads.length === this.cfg.n_heads ? tr("viewer.all_heads") : s.heads.length ? tr("viewer.some_heads", { heads: s.heads.join(",") }) : tr("viewer.no_heads") }), { bold: true });
    pn.text(g.tokW - 6, 36, sides[0], { anchor: "end", bold: true, fill: "#667085" });
    pn.text(g.tokW + g.lineW + 6, 36, sides[1], { bold: true, fill: "#667085" });
    this.paintLines(pn, g.tokW + 4, g.tokW + g.lineW - 4, top);
    qt.forEach(function (t, i) { pn.text(g.tokW - 6, top + i * ROW + ROW / 2, tokLabel(t), { anchor: "end", bold: s.query === i }); });
    kt.forEach(function (t, j) { pn.text(g.tokW + g.lineW + 6, top + j * ROW + ROW / 2, tokLabel(t), {}); });
  };

  // ---- model view --------------------------------------------------------------------------------
  P.thumb = function (layer, head, canvas) {
    var p = this.pair(), s = this.state, nq = p.nq(s.att), nk = p.nk(s.att), W = p.weights(s.att, layer, head), top = 0, i;
    for (i = 0; i < W.length; i++) if (W[i] > top) top = W[i];
    var c = canvas || document.createElement("canvas"); c.width = nk; c.height = nq;
    var ctx = c.getContext("2d"), img = ctx.createImageData(nk, nq);
    for (i = 0; i < nq * nk; i++) {
      var hid = p.hidden(s.att, Math.floor(i / nk), i % nk), rgb = hid ? [242, 244, 247] : U.viridis(top > 0 ? W[i] / top : 0);
      img.data[4 * i] = rgb[0]; img.data[4 * i + 1] = rgb[1]; img.data[4 * i + 2] = rgb[2]; img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    return c;
  };
  P.renderModel = function () {
    var self = this, cfg = this.cfg, s = this.state, p = this.pair(), L = p.layers(s.att);
    el("div", { cls: "as-note", text: tr("viewer.s2s_model_note", { attention: TITLE_OF(s.att).toLowerCase(), rows: this.sides()[0], cols: this.sides()[1] }) }, this.body);
    var grid = el("div", { cls: "as-mv", "data-testid": "model-view", style: "grid-template-columns:56px repeat(" + cfg.n_heads + ",72px)" }, this.body);
    el("div", {}, grid);
    for (var h = 0; h < cfg.n_heads; h++) el("div", { cls: "as-lab", text: tr("viewer.head_n", { head: h }) }, grid);
    for (var l = 0; l < L; l++) {
      el("div", { cls: "as-lab", text: tr("viewer.layer_n", { layer: l }) }, grid);
      for (h = 0; h < cfg.n_heads; h++) this.thumb(l, h, el("canvas", { "data-layer": l, "data-head": h, "data-testid": "thumb-" + l + "-" + h }, grid));
    }
    grid.addEventListener("click", function (ev) {
      var c = ev.target.closest("canvas"); if (!c) return;
      var hh = +c.getAttribute("data-head"); self.set({ view: "head", layer: +c.getAttribute("data-layer"), heads: [hh], focus: hh });
    });
    grid.addEventListener("mousemove", function (ev) {
      var c = ev.target.closest("canvas"); if (!c) { self.hideTip(); return; }
      var ll = +c.getAttribute("data-layer"), hh = +c.getAttribute("data-head"), r = c.getBoundingClientRect(), nq = p.nq(s.att), nk = p.nk(s.att);
      var i = Math.min(nq - 1, Math.floor((ev.clientY - r.top) / r.height * nq)), j = Math.min(nk - 1, Math.floor((ev.clientX - r.left) / r.width * nk));
      var w = p.weights(s.att, ll, hh)[i * nk + j];
      self.showTip(ev, tr("viewer.tip_thumb", { layer: ll, head: hh }) + "\n" + p.qTokens(s.att)[i] + " → " + p.kTokens(s.att)[j] + ": " + show(w, s.dec) + "\n" + tr("viewer.tip_open"));
    });
    grid.addEventListener("mouseleave", function () { self.hideTip(); });
  };
  P.paintModel = function (pn) {
    var cfg = this.cfg, S = 64, G = 8, x0 = 64, y0 = 44, L = this.pair().layers(this.state.att);
    pn.rect(0, 0, x0 + cfg.n_heads * (S + G), y0 + L * (S + G), "#fff");
    pn.text(8, 14, tr("viewer.s2s_paint_model", { model: this.data.model, attention: TITLE_OF(this.state.att) }), { bold: true });
    for (var h = 0; h < cfg.n_heads; h++) pn.text(x0 + h * (S + G) + S / 2, y0 - 10, tr("viewer.head_n", { head: h }), { size: 11, anchor: "middle" });
    for (var l = 0; l < L; l++) {
      pn.text(8, y0 + l * (S + G) + S / 2, tr("viewer.layer_n", { layer: l }), { size: 11 });
      for (h = 0; h < cfg.n_heads; h++) pn.image(this.thumb(l, h), x0 + h * (S + G), y0 + l * (S + G), S, S);
    }
  };

  // ---- step view ---------------------------------------------------------------------------------
  P.columns = function () {
    var s = this.state, p = this.pair(), cfg = this.cfg, bias = p.hasBias(s.att), cols = ["#", tr("viewer.col_key")];
    if (bias) cols.push(tr("viewer.s2s_delta"), tr("viewer.s2s_bucket"), tr("viewer.s2s_bias"));
    cols.push(tr("viewer.s2s_raw"), tr(bias ? "viewer.s2s_scaled_bias" : cfg.scoring === "unscaled" ? "viewer.s2s_scaled_one" : "viewer.s2s_scaled_root", { d: cfg.d_head }));
    return cols;
  };
  P.renderStep = function () {
    var self = this, p = this.pair(), s = this.state, cfg = this.cfg, dec = s.dec, qt = p.qTokens(s.att), kt = p.kTokens(s.att);
    var wrap = el("div", { cls: "as-sv", "data-testid": "step-view" }, this.body), ctl = el("div", { cls: "as-ctl" }, wrap);
    var selQ = el("select", { "data-testid": "query-select" }, el("label", { text: tr("viewer.query_token") }, ctl));
    el("option", { value: "", text: tr("viewer.pick_one") }, selQ);
    qt.forEach(function (t, i) { el("option", { value: i, text: i + ": " + tokLabel(t) }, selQ); });
    selQ.value = s.query === null ? "" : String(s.query);
    selQ.addEventListener("change", function () { self.set({ query: selQ.value === "" ? null : +selQ.value }); });
    var selH = el("select", { "data-testid": "focus-head-select" }, el("label", { text: tr("viewer.head") }, ctl));
    for (var h = 0; h < cfg.n_heads; h++) el("option", { value: h, text: String(h) }, selH);
    selH.value = String(s.focus);
    selH.addEventListener("change", function () { self.set({ focus: +selH.value }); });
    if (s.query === null) {
      el("div", { cls: "as-note", text: tr("viewer.s2s_pick", { side: this.sides()[0] }) }, wrap);
      return;
    }
    var q = s.query, st = p.steps(s.att, s.layer, s.focus, q), bias = p.hasBias(s.att), j;
    var where = tr(s.att === "cross" ? "viewer.s2s_where_cross" : s.att === "self" ? "viewer.s2s_where_self" : "viewer.s2s_where_encoder", { q: q, token: tokLabel(qt[q]) });
    el("div", { cls: "as-note", "data-testid": "step-caption", text: tr("viewer.s2s_step_caption", { attention: TITLE_OF(s.att), layer: s.layer, head: s.focus, q: q,
      token: tokLabel(qt[q]), where: where, d: cfg.d_head }) + (bias ? tr("viewer.s2s_step_bias", { head: s.focus }) : "") +
      (st.shift ? tr("viewer.s2s_step_shift", { limit: this.data.exp_show_limit }) : "") + tr("viewer.s2s_step_hover") }, wrap);
    var box = el("div", { cls: "as-wrap" }, wrap), table = el("table", { "data-testid": "step-table" }, box), hr = el("tr", {}, el("thead", {}, table));
    var masks = false;
    for (j = 0; j < kt.length; j++) if (p.hidden(s.att, q, j)) masks = true;
    this.columns().concat([st.shift ? "exp(s − " + show(st.shift, dec) + ")" : "exp(s)", tr("viewer.col_weight")], masks ? [tr("viewer.col_hidden")] : [])
      .forEach(function (x, i) { el("th", { text: x, cls: i === 1 ? "tok" : "" }, hr); });
    var tbody = el("tbody", {}, table), best = 0, frag = document.createDocumentFragment();
    for (j = 1; j < kt.length; j++) if (st.weights[j] > st.weights[best]) best = j;
    var cell = function (row, name, x) { return el("td", { "data-col": name, "data-value": String(x), title: tr("viewer.exact", { x: String(x) }), text: show(x, dec) }, row); };
    for (j = 0; j < kt.length; j++) {
      var hid = p.hidden(s.att, q, j), row = el("tr", { "data-j": j, "data-testid": "step-row-" + j, cls: (j === best ? "max" : "") + (hid ? " masked causal" : "") }, frag);
      el("td", { text: String(j) }, row); el("td", { cls: "tok", text: tokLabel(kt[j]) }, row);
      if (bias) { el("td", { "data-col": "delta", text: String(j - q) }, row); el("td", { "data-col": "bucket", text: String(p.bucket(s.att, q, j)) }, row); cell(row, "bias", st.bias[j]); }
      cell(row, "raw", st.raw[j]); cell(row, "scaled", st.scaled[j]); cell(row, "exp", st.exp[j]);
      el("span", { cls: "as-bar-w", style: "width:" + Math.round(60 * st.weights[j]) + "px" }, cell(row, "weight", st.weights[j]));
      if (masks) el("td", { cls: "why", text: hid ? tr("viewer.why_causal") : "" }, row);
    }
    tbody.appendChild(frag);
    var tf = el("tr", { cls: "as-sum" }, tbody), blanks = this.columns().length - 1, sw = 0;
    el("td", {}, tf); el("td", { cls: "tok", text: "Σ" }, tf);
    for (j = 1; j < blanks; j++) el("td", {}, tf);
    cell(tf, "sum", st.sum);
    for (j = 0; j < kt.length; j++) sw += st.weights[j];
    cell(tf, "weight-sum", sw);
    if (masks) el("td", {}, tf);
    var out = el("div", { cls: "as-out", "data-testid": "step-out" }, wrap);
    el("div", { cls: "as-note", text: tr("viewer.s2s_sum", { n: cfg.d_head, head: s.focus, token: tokLabel(qt[q]), source: s.att === "cross" ? tr("viewer.s2s_sum_source") : "" }) }, out);
    for (j = 0; j < st.out.length; j++) el("span", { "data-col": "out", "data-value": String(st.out[j]), title: tr("viewer.exact_z", { j: j, x: String(st.out[j]) }), text: show(st.out[j], dec) }, out);
  };
  P.paintStep = function (pn, w, h) {
    var p = this.pair(), s = this.state, dec = s.dec, kt = p.kTokens(s.att), qt = p.qTokens(s.att);
    pn.rect(0, 0, w, h, "#fff");
    if (s.query === null) { pn.text(10, 20, tr("viewer.no_query"), {}); return; }
    var st = p.steps(s.att, s.layer, s.focus, s.query), bias = p.hasBias(s.att), heads = this.columns().concat([st.shift ? "exp(s − m)" : "exp(s)", tr("viewer.col_weight")]);
    var widths = [30, 130].concat(bias ? [70, 60, 100] : [], [110, 150, 120, 100]), x = 10, cx = [], y = 16, c;
    for (c = 0; c < widths.length; c++) { cx.push(x); x += widths[c]; }
    pn.text(10, y, tr("viewer.s2s_paint_step", { model: this.data.model, attention: TITLE_OF(s.att), layer: s.layer, head: s.focus, q: s.query, token: tokLabel(qt[s.query]) }), { bold: true });
    y += 24;
    var put = function (vals, bold) { vals.forEach(function (v, k) { pn.text(cx[k] + (k > 1 ? widths[k] - 8 : 0), y, v, { anchor: k > 1 ? "end" : "start", bold: bold }); }); };
    put(heads, true);
    for (var j = 0; j < kt.length; j++) {
      y += ROW;
      var vals = [String(j), tokLabel(kt[j])].concat(bias ? [String(j - s.query), String(p.bucket(s.att, s.query, j)), show(st.bias[j], dec)] : [],
        [show(st.raw[j], dec), show(st.scaled[j], dec), show(st.exp[j], dec), show(st.weights[j], dec)]);
      put(vals, false);
    }
    y += ROW;
    pn.text(cx[1], y, "Σ", { bold: true });
    pn.text(cx[widths.length - 2] + widths[widths.length - 2] - 8, y, show(st.sum, dec), { anchor: "end", bold: true });
    y += ROW * 1.5;
    var outs = []; for (j = 0; j < st.out.length; j++) outs.push(show(st.out[j], dec));
    for (var k = 0; k < outs.length; k += 8) { pn.text(10, y, (k ? "   " : "z = [") + outs.slice(k, k + 8).join(", ") + (k + 8 >= outs.length ? "]" : ","), {}); y += ROW; }
  };

})(window.attnscope);
