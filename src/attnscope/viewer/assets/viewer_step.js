/* attnscope viewer: the step view (one query row worked out: score, scaling, exp, softmax, weighted
 * sum, and the rotation of rotary models) and the context view (one token's vector in two texts). */
(function (A) {
  "use strict";
  if (!A) return;
  var U = A.util, el = U.el, show = A.show, ROW = U.ROW, tokLabel = U.tokLabel, SvgPainter = A.SvgPainter, tr = A.tr,
    Viewer = A.Viewer;
  if (!Viewer || Viewer.prototype.renderStep) return;

  // ---- step view ----------------------------------------------------------------------------
  Viewer.prototype.renderStep = function () {
    var self = this, t = this.text(), s = this.state, cfg = this.cfg, dec = s.dec;
    var wrap = el("div", { cls: "as-sv", "data-testid": "step-view" }, this.body);
    var ctl = el("div", { cls: "as-ctl" }, wrap);
    var lq = el("label", { text: tr("viewer.query_token") }, ctl), selQ = el("select", { "data-testid": "query-select" }, lq);
    el("option", { value: "", text: tr("viewer.pick_one") }, selQ);
    t.tokens.forEach(function (tok, i) { el("option", { value: i, text: i + ": " + tok }, selQ); });
    selQ.value = s.query === null ? "" : String(s.query);
    selQ.addEventListener("change", function () { self.set({ query: selQ.value === "" ? null : +selQ.value, key: null }); });
    var lh = el("label", { text: tr("viewer.head") }, ctl), selH = el("select", { "data-testid": "focus-head-select" }, lh);
    for (var h = 0; h < cfg.n_heads; h++) el("option", { value: h, text: String(h) }, selH);
    selH.value = String(s.focus);
    selH.addEventListener("change", function () { self.set({ focus: +selH.value }); });
    el("span", { cls: "as-note", text: tr("viewer.layer_above", { layer: s.layer }) }, ctl);
    if (s.query === null) {
      el("div", { cls: "as-note", text: tr("viewer.pick_note") }, wrap);
      var chips = el("div", {}, wrap);
      t.tokens.forEach(function (tok, i) {
        el("button", { type: "button", cls: "as-small", text: tok, "data-testid": "pick-" + i, style: "margin:2px" }, chips)
          .addEventListener("click", function () { self.set({ query: i }); });
      });
      return;
    }
    var q = s.query, st = t.steps(s.layer, s.focus, q), f = cfg.factor, win = t.window(s.layer);
    var plainRoot = cfg.scoring === "scaled" && (cfg.query_scale === null || cfg.query_scale === undefined);
    var scaleText = plainRoot ? "÷ √" + cfg.d_head : cfg.scoring === "unscaled" ? "× 1" : "× " + show(f, dec);
    var expText = st.shift ? "exp(s − " + show(st.shift, dec) + ")" : "exp(s)";
    var g = t.kvHead(s.focus), Hkv = cfg.n_kv_heads || cfg.n_heads, rope = cfg.rope ? cfg.rope[s.layer] : null;
    var brow = t.biasRow(s.focus), biasText = brow ? " + m·j" : "";  // ALiBi: the scaled column holds + slope · key position
    var facts = ["d_k = " + cfg.d_head + (plainRoot ? ", √d_k = " + show(Math.sqrt(cfg.d_head), dec) : "")];
    if (cfg.query_scale !== null && cfg.query_scale !== undefined)
      facts.push(tr("viewer.step_gemma", { f: show(f, dec), s: String(Math.round(1 / (f * f) * 1e6) / 1e6) }));
    if (Hkv < cfg.n_heads) facts.push(tr("viewer.step_kv", { head: s.focus, kv: g, first: g * t.group, last: g * t.group + t.group - 1 }));
    if (rope) facts.push(tr("viewer.step_rope", { base: rope.base, scaling: rope.scaling ? tr("viewer.step_rope_scaling", { kind: rope.scaling }) : "", half: cfg.d_head / 2 }));
    if (win !== null) facts.push(tr("viewer.step_window", { w: win }));
    if (brow) facts.push(tr("viewer.step_bias", { head: s.focus, m: String(brow.length > 1 ? brow[1] : 0) }));
    el("div", { cls: "as-note", "data-testid": "step-caption", text: tr("viewer.step_caption", { q: q, token: t.tokens[q], layer: s.layer, head: s.focus, facts: facts.join("; ") }) +
      tr("viewer.step_hover", { rotation: rope ? tr("viewer.step_rotation") : "" }) +
      (st.shift ? tr("viewer.step_shift", { limit: this.data.exp_show_limit }) : "") }, wrap);
    var box = el("div", { cls: "as-wrap" }, wrap);
    var table = el("table", { "data-testid": "step-table" }, box), thead = el("thead", {}, table), hr = el("tr", {}, thead);
    var masks = false;
    for (var jj = 0; jj < t.n; jj++) if (t.hidden(s.layer, q, jj)) { masks = true; break; }
    ["#", tr("viewer.col_key"), tr("viewer.col_raw") + (rope ? "q′·k′" : "q·k"), tr("viewer.col_scaled") + (rope ? "q′·k′ " : "q·k ") + scaleText + biasText, expText,
      tr("viewer.col_weight")].concat(masks ? [tr("viewer.col_hidden")] : []).forEach(function (x, i) {
      el("th", { text: x, cls: i === 1 ? "tok" : "" }, hr);
    });
    var tbody = el("tbody", {}, table), best = 0, j;
    for (j = 1; j < t.n; j++) if (st.weights[j] > st.weights[best]) best = j;
    var keySel = s.key !== null && s.key !== undefined && s.key < t.n ? s.key : best;
    var frag = document.createDocumentFragment();
    var cell = function (row, name, x) {
      var td = el("td", { "data-col": name, "data-value": String(x), title: tr("viewer.exact", { x: String(x) }), text: show(x, dec) }, row);
      return td;
    };
    var WHY = ["", tr("viewer.why_causal"), tr("viewer.why_window", { q: q, w: win })];
    for (j = 0; j < t.n; j++) {
      var why = t.hidden(s.layer, q, j);
      var row = el("tr", { "data-j": j, "data-testid": "step-row-" + j, "data-hidden": String(why),
        cls: (j === best ? "max" : "") + (why ? " masked" : "") + (why === 1 ? " causal" : why === 2 ? " window" : "") + (rope && j === keySel ? " keysel" : "") }, frag);
      el("td", { text: String(j) }, row);
      el("td", { cls: "tok", text: tokLabel(t.tokens[j]) }, row);
      cell(row, "raw", st.raw[j]); cell(row, "scaled", st.scaled[j]); cell(row, "exp", st.exp[j]);
      var wtd = cell(row, "weight", st.weights[j]);
      el("span", { cls: "as-bar-w", style: "width:" + Math.round(60 * st.weights[j]) + "px" }, wtd);
      if (masks) el("td", { cls: "why", text: WHY[why] }, row);
    }
    tbody.appendChild(frag);
    if (rope) tbody.addEventListener("click", function (ev) {
      var r = ev.target.closest("tr[data-j]"); if (r) self.set({ key: +r.getAttribute("data-j") });
    });
    var tf = el("tr", { cls: "as-sum" }, tbody);
    el("td", {}, tf); el("td", { cls: "tok", text: "Σ" }, tf); el("td", {}, tf); el("td", {}, tf);
    cell(tf, "sum", st.sum);
    var sw = 0; for (j = 0; j < t.n; j++) sw += st.weights[j];
    cell(tf, "weight-sum", sw);
    if (masks) el("td", {}, tf);
    var out = el("div", { cls: "as-out", "data-testid": "step-out" }, wrap);
    el("div", { cls: "as-note", text: tr("viewer.step_sum", { n: cfg.d_head, head: s.focus, token: t.tokens[q],
      kv: Hkv < cfg.n_heads ? tr("viewer.step_sum_kv", { kv: g }) : "" }) }, out);
    for (j = 0; j < st.out.length; j++)
      el("span", { "data-col": "out", "data-value": String(st.out[j]), title: tr("viewer.exact_z", { j: j, x: String(st.out[j]) }), text: show(st.out[j], dec) }, out);
    if (rope) this.renderRotation(wrap, q, keySel);
  };

  // q of the query and k of one key before and after the rotation, pair by pair.
  Viewer.prototype.renderRotation = function (wrap, q, key) {
    var t = this.text(), s = this.state, cfg = this.cfg, dec = s.dec, d = cfg.d_head, half = d / 2;
    var rope = cfg.rope[s.layer], inv = rope.inv_freq;
    var qp = t.vec(s.layer, 0, s.focus), qr = t.operand(s.layer, 0, s.focus), kp = t.vec(s.layer, 1, s.focus), kr = t.operand(s.layer, 1, s.focus);
    var box = el("div", { cls: "as-rot", "data-testid": "rotation" }, wrap);
    el("div", { cls: "as-note", "data-testid": "rotation-note", text: tr("viewer.rot_note", { half: half, q: q, token: t.tokens[key], kpos: key,
      theta: rope.scaling ? tr("viewer.rot_scaled", { kind: rope.scaling }) : rope.base + "^(−2i/" + d + ")",
      qk_norm: cfg.qk_norm ? tr("viewer.rot_qk_norm") : "" }) }, box);
    var wrapT = el("div", { cls: "as-wrap as-rotwrap" }, box);
    var table = el("table", { "data-testid": "rotation-table" }, wrapT), hr = el("tr", {}, el("thead", {}, table));
    [tr("viewer.rot_pair"), "θ_i", "q: φ", "q_a", "q_b", "q′_a", "q′_b", "k: φ", "k_a", "k_b", "k′_a", "k′_b"].forEach(function (x) { el("th", { text: x }, hr); });
    var tb = el("tbody", {}, table), frag = document.createDocumentFragment();
    var num = function (row, name, x) { el("td", { "data-col": name, "data-value": String(x), title: tr("viewer.exact", { x: String(x) }), text: show(x, dec) }, row); };
    for (var i = 0; i < half; i++) {
      var row = el("tr", { "data-testid": "rot-row-" + i }, frag);
      el("td", { text: i + " (" + i + ", " + (i + half) + ")" }, row);
      num(row, "theta", inv[i]); num(row, "phi_q", q * inv[i]);
      num(row, "q_a", qp[q * d + i]); num(row, "q_b", qp[q * d + i + half]); num(row, "qr_a", qr[q * d + i]); num(row, "qr_b", qr[q * d + i + half]);
      num(row, "phi_k", key * inv[i]);
      num(row, "k_a", kp[key * d + i]); num(row, "k_b", kp[key * d + i + half]); num(row, "kr_a", kr[key * d + i]); num(row, "kr_b", kr[key * d + i + half]);
    }
    tb.appendChild(frag);
  };

  Viewer.prototype.paintStep = function (p, w, h) {
    var t = this.text(), s = this.state, dec = s.dec;
    p.rect(0, 0, w, h, "#fff");
    if (s.query === null) { p.text(10, 20, tr("viewer.no_query"), {}); return; }
    var st = t.steps(s.layer, s.focus, s.query), cols = [30, 150, 130, 130, 130, 110], x = 10, y = 16;
    p.text(10, y, tr("viewer.paint_step", { model: this.data.model, layer: s.layer, head: s.focus, q: s.query, token: t.tokens[s.query] }), { bold: true });
    y += 24;
    var heads = ["#", tr("viewer.col_key"), "q·k", tr("viewer.paint_scaled"), st.shift ? "exp(s − m)" : "exp(s)", tr("viewer.col_weight")], cx = [];
    for (var c = 0; c < cols.length; c++) { cx.push(x); x += cols[c]; }
    heads.forEach(function (hd, c) { p.text(cx[c] + (c > 1 ? cols[c] - 8 : 0), y, hd, { bold: true, anchor: c > 1 ? "end" : "start" }); });
    for (var j = 0; j < t.n; j++) {
      y += ROW;
      var vals = [String(j), t.tokens[j], show(st.raw[j], dec), show(st.scaled[j], dec), show(st.exp[j], dec), show(st.weights[j], dec)];
      vals.forEach(function (v, c) { p.text(cx[c] + (c > 1 ? cols[c] - 8 : 0), y, v, { anchor: c > 1 ? "end" : "start" }); });
    }
    y += ROW;
    p.text(cx[1], y, "Σ", { bold: true });
    p.text(cx[4] + cols[4] - 8, y, show(st.sum, dec), { anchor: "end", bold: true });
    y += ROW * 1.5;
    var outs = []; for (j = 0; j < st.out.length; j++) outs.push(show(st.out[j], dec));
    for (var k = 0; k < outs.length; k += 8) { p.text(10, y, (k ? "   " : "z = [") + outs.slice(k, k + 8).join(", ") + (k + 8 >= outs.length ? "]" : ","), {}); y += ROW; }
  };
  Viewer.prototype.stepSize = function () { var t = this.text(); return [800, 60 + (t.n + 3) * ROW + Math.ceil(this.cfg.d_head / 8) * ROW + 20]; };

  // ---- context comparison -----------------------------------------------------------------------
  var CMP_W = 720, CMP_H = 330;  // the chart; its legend sits under the axis, never over a curve
  Viewer.prototype.compareSize = function () { return [CMP_W, CMP_H]; };
  var CMP = [["across", "viewer.cmp_across", "#d62728"], ["drift_a", "viewer.cmp_drift_a", "#1f77b4"], ["drift_b", "viewer.cmp_drift_b", "#2ca02c"]];

  Viewer.prototype.renderCompare = function () {
    var c = this.data.compare, dec = this.state.dec, self = this;
    var wrap = el("div", { cls: "as-cv", "data-testid": "context-view" }, this.body);
    if (!c) {
      el("div", { cls: "as-note", text: tr("viewer.cmp_none") + (this.opts.server ? tr("viewer.cmp_none_served") : tr("viewer.cmp_none_file")) }, wrap);
      return;
    }
    el("div", { cls: "as-note", text: tr("viewer.cmp_note", { token: c.token, a: c.pos_a, b: c.pos_b, tokens_a: c.tokens_a.join(" "), tokens_b: c.tokens_b.join(" ") }) }, wrap);
    var W = CMP_W, H = CMP_H, svgNS = "http://www.w3.org/2000/svg";
    var holder = el("div", {}, wrap);
    var sp = new SvgPainter(W, H, "");
    this.paintCompare(sp, W, H);
    holder.innerHTML = sp.toString();
    var svg = holder.querySelector("svg");
    var geo = this.compareGeometry(W, H);
    CMP.forEach(function (m) {
      c[m[0]].forEach(function (v, i) {
        var dot = document.createElementNS(svgNS, "circle");
        dot.setAttribute("cx", geo.x(i)); dot.setAttribute("cy", geo.y(v)); dot.setAttribute("r", 7); dot.setAttribute("fill", "transparent");
        dot.setAttribute("data-series", m[0]); dot.setAttribute("data-layer", i);
        var title = document.createElementNS(svgNS, "title");
        title.textContent = tr("viewer.cmp_point", { series: tr(m[1]), layer: c.layers[i], v: show(v, dec, false), exact: String(v) });
        dot.appendChild(title); svg.appendChild(dot);
      });
    });
    var table = el("table", { "data-testid": "compare-table" }, wrap), hr = el("tr", {}, table);
    [tr("viewer.col_layer")].concat(CMP.map(function (m) { return tr(m[1]); })).forEach(function (x) { el("th", { text: x }, hr); });
    c.layers.forEach(function (name, i) {
      var row = el("tr", {}, table);
      // the chart's names for the layer outputs (embed, 0, 1, …); the trace's own name on hover
      el("td", { text: i === 0 ? tr("viewer.cmp_embed") : tr("viewer.layer_n", { layer: i - 1 }), title: name, "data-name": name }, row);
      // cosines are never shown as integers: a column reads 1.0000 beside 0.9876, not 1
      CMP.forEach(function (m) { el("td", { "data-col": m[0], "data-value": String(c[m[0]][i]), title: tr("viewer.exact", { x: String(c[m[0]][i]) }), text: show(c[m[0]][i], dec, false) }, row); });
    });
    void self;
  };

  Viewer.prototype.compareGeometry = function (W, H) {
    var c = this.data.compare, lo = 1, all = c.across.concat(c.drift_a, c.drift_b);
    all.forEach(function (v) { if (v < lo) lo = v; });
    // a round step giving at most 5 intervals up to 1, the axis starting on a multiple of it at or
    // below the lowest cosine: ticks read 0.2, 0.4, … (not 0.33 and 0.78 from quarters of 1 - lo)
    var span = 1 - Math.min(lo, 0.9), steps = [0.02, 0.05, 0.1, 0.2, 0.25, 0.5], step = 0.5;
    for (var s = steps.length - 1; s >= 0; s--) if (span / steps[s] <= 5 + 1e-9) step = steps[s];
    var intervals = Math.ceil(span / step - 1e-9);
    lo = 1 - intervals * step;
    var L = 60, R = W - 20, T = 30, B = H - 72, n = c.layers.length;
    return { L: L, R: R, T: T, B: B, lo: lo, step: step, intervals: intervals, x: function (i) { return L + (n > 1 ? i * (R - L) / (n - 1) : 0); }, y: function (v) { return B - (v - lo) / (1 - lo) * (B - T); } };
  };

  Viewer.prototype.paintCompare = function (p, W, H) {
    var c = this.data.compare, g = this.compareGeometry(W, H);
    p.rect(0, 0, W, H, "#fff");
    p.text(10, 14, tr("viewer.cmp_title", { token: c.token }), { bold: true });
    p.lines([g.L, g.B, g.R, g.B, g.L, g.T, g.L, g.B], "#667085", 1, 1);
    for (var k = 0; k <= g.intervals; k++) {
      var v = 1 - (g.intervals - k) * g.step;
      p.text(g.L - 6, g.y(v), v.toFixed(2), { size: 11, anchor: "end", fill: "#667085" });
      p.lines([g.L, g.y(v), g.R, g.y(v)], "#d0d5dd", 0.6, 1);
    }
    c.layers.forEach(function (name, i) { p.text(g.x(i), g.B + 14, i === 0 ? tr("viewer.cmp_embed") : String(i - 1), { size: 11, anchor: "middle", fill: "#667085" }); });
    p.text((g.L + g.R) / 2, g.B + 32, tr("viewer.cmp_axis"), { size: 11, anchor: "middle", fill: "#667085" });
    var lx = g.L, ly = H - 14;
    CMP.forEach(function (m) {
      var pts = [];
      c[m[0]].forEach(function (v, i) { pts.push(g.x(i), g.y(v)); });
      p.polyline(pts, m[2], 2);
      for (var i = 0; i < pts.length; i += 2) p.circle(pts[i], pts[i + 1], 3.5, m[2]);
      p.lines([lx, ly, lx + 20, ly], m[2], 1, 3);
      var name = tr(m[1]);
      p.text(lx + 25, ly, name, { size: 11 });
      lx += 25 + 6.6 * (name.length + (name.match(/[\u2e80-\u9fff\uff00-\uffef]/g) || []).length) + 18;  // ~6.6 px a character at 11 px, a CJK one twice
    });
  };

})(window.attnscope);
