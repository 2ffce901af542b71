/* attnscope viewer: the generation view (pages written by `attnscope generate --view`).
 *
 * data.generation.steps[t] is the query position of the step that chose generated token t
 * (n_prompt − 1 + t). For the chosen step the view shows that query's attention over the prompt
 * and the earlier outputs in every layer (rows: layers, columns: key positions), for one head or
 * the mean over heads, with a slider through the steps. The numbers are the page's own float64
 * recomputation (Text.steps: the same as the step view and `attnscope explain`).
 */
(function (A) {
  "use strict";
  if (!A || !A.Viewer || A.Viewer.prototype.renderGeneration) return;
  var V = A.Viewer.prototype, U = A.util, el = U.el, show = A.show, tr = A.tr;
  var RH = 18, LABW = 64;

  // The weights of one generation step: rows[layer] = Float64Array over keys 0 … i.
  V.generationRows = function (step, head) {
    var t = this.text(), cfg = this.cfg, i = this.data.generation.steps[step], rows = [];
    for (var l = 0; l < cfg.n_layers; l++) {
      var r = new Float64Array(i + 1);
      if (head >= 0) { var w = t.steps(l, head, i).weights; for (var j = 0; j <= i; j++) r[j] = w[j]; }
      else {
        for (var h = 0; h < cfg.n_heads; h++) { var wh = t.steps(l, h, i).weights; for (var k = 0; k <= i; k++) r[k] += wh[k]; }
        for (var m = 0; m <= i; m++) r[m] /= cfg.n_heads;
      }
      rows.push(r);
    }
    return rows;
  };

  V.generationCell = function () {
    var i = this.data.generation.steps[this.state.step];
    var avail = Math.max(300, (this.body.clientWidth || 900) - LABW - 30);
    return Math.max(3, Math.min(44, Math.floor(avail / (i + 1))));
  };

  V.renderGeneration = function () {
    var self = this, s = this.state, t = this.text(), cfg = this.cfg, gen = this.data.generation, dec = s.dec;
    var T = gen.steps.length;
    if (s.step >= T) s.step = T - 1;
    var i = gen.steps[s.step], chosen = i + 1, np = gen.n_prompt;
    var wrap = el("div", { cls: "as-gv", "data-testid": "gen-view" }, this.body);
    var headTxt = s.genHead < 0 ? tr("viewer.gen_mean", { n: cfg.n_heads }) : tr("viewer.head_n", { head: s.genHead });
    el("div", { cls: "as-note", "data-testid": "gen-caption", text: tr("viewer.gen_caption", { t: s.step + 1, T: T, token: U.tokLabel(t.tokens[chosen]),
      i: i, query: U.tokLabel(t.tokens[i]), np: np, earlier: s.step, heads: headTxt }) }, wrap);

    var ctl = el("div", { cls: "as-gctl" }, wrap);
    var prev = el("button", { type: "button", cls: "as-small", text: "◀", title: tr("viewer.gen_prev"), "data-testid": "gen-prev" }, ctl);
    var slider = el("input", { type: "range", min: 0, max: T - 1, step: 1, value: s.step, "data-testid": "gen-slider",
      "aria-label": tr("viewer.gen_slider") }, ctl);
    var next = el("button", { type: "button", cls: "as-small", text: "▶", title: tr("viewer.gen_next"), "data-testid": "gen-next" }, ctl);
    el("span", { "data-testid": "gen-step-label", text: tr("viewer.gen_step", { t: s.step + 1, T: T, token: U.tokLabel(t.tokens[chosen]) }) }, ctl);
    var lh = el("label", { text: tr("viewer.heads") }, ctl), selH = el("select", { "data-testid": "gen-head" }, lh);
    el("option", { value: -1, text: tr("viewer.gen_mean_heads") }, selH);
    for (var h = 0; h < cfg.n_heads; h++) el("option", { value: h, text: tr("viewer.head_n", { head: h }) }, selH);
    selH.value = String(s.genHead);
    selH.addEventListener("change", function () { self.set({ genHead: +selH.value }); });
    slider.addEventListener("input", function () { self.set({ step: +slider.value }); });
    prev.addEventListener("click", function () { if (s.step > 0) self.set({ step: s.step - 1 }); });
    next.addEventListener("click", function () { if (s.step < T - 1) self.set({ step: s.step + 1 }); });
    prev.disabled = s.step === 0; next.disabled = s.step === T - 1;

    var rows = this.generationRows(s.step, s.genHead), focus = rows[s.layer], top = 0, j;
    for (j = 0; j <= i; j++) if (focus[j] > top) top = focus[j];
    // the text: prompt, outputs so far, the chosen token; shaded by the focused layer's weights
    var toks = el("div", { cls: "as-gtoks", "data-testid": "gen-tokens" }, wrap);
    for (j = 0; j < t.n; j++) (function (j) {
      var isGen = j >= np, stepOf = j - np, cls = "as-gtok" + (isGen ? " gen" : "") + (j === chosen ? " cur" : "") + (j > chosen ? " future" : "");
      var sp = el("span", { cls: cls, "data-testid": "gen-tok-" + j, text: U.tokLabel(t.tokens[j]) }, toks);
      if (j <= i && top > 0) {
        var c = U.viridis(focus[j] / top);
        sp.style.background = "rgba(" + Math.round(c[0]) + "," + Math.round(c[1]) + "," + Math.round(c[2]) + "," + (0.15 + 0.85 * focus[j] / top).toFixed(3) + ")";
        if (focus[j] / top > 0.55) sp.style.color = "#111";
        sp.title = tr("viewer.gen_key_tip", { j: j, token: U.tokLabel(t.tokens[j]), layer: s.layer, w: show(focus[j], dec), x: String(focus[j]) });
      }
      if (isGen) sp.addEventListener("click", function () { self.set({ step: stepOf }); });
    })(j);

    // the map: one row per layer
    var cw = this.generationCell(), W = LABW + (i + 1) * cw, H = cfg.n_layers * RH + (cw >= 26 ? 40 : 26);
    var map = el("div", { cls: "as-gmap" }, wrap);
    var canvas = el("canvas", { "data-testid": "gen-map", style: "width:" + W + "px;height:" + H + "px" }, map);
    var dpr = Math.min(2, window.devicePixelRatio || 1);
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    var ctx = canvas.getContext("2d"); ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.paintGenerationMap(new A.CanvasPainter(ctx), rows, cw, 0);
    var at = function (ev) {
      var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
      var l = Math.floor(y / RH), k = Math.floor((x - LABW) / cw);
      return l >= 0 && l < cfg.n_layers && k >= 0 && k <= i && x >= LABW ? [l, k] : null;
    };
    canvas.addEventListener("mousemove", function (ev) {
      var a = at(ev); if (!a) { self.hideTip(); return; }
      var why = t.hidden(a[0], i, a[1]);
      self.showTip(ev, tr("viewer.gen_cell_tip", { layer: a[0], heads: headTxt, i: i, qt: t.tokens[i], j: a[1], kt: t.tokens[a[1]],
        where: a[1] >= np ? tr("viewer.gen_in_output", { n: a[1] - np + 1 }) : tr("viewer.gen_in_prompt"),
        w: show(rows[a[0]][a[1]], dec), x: String(rows[a[0]][a[1]]), hidden: why === 2 ? tr("viewer.gen_hidden", { layer: a[0], w: t.window(a[0]) }) : "" }));
    });
    canvas.addEventListener("mouseleave", function () { self.hideTip(); });
    canvas.addEventListener("click", function (ev) {
      var a = at(ev); if (!a) return;
      self.set({ view: "step", layer: a[0], query: i, key: a[1], focus: s.genHead >= 0 ? s.genHead : s.focus });
    });

    // the focused layer's numbers
    var ll = el("div", { cls: "as-gctl" }, wrap);
    var lab = el("label", { text: tr("viewer.gen_numbers") }, ll), selL = el("select", { "data-testid": "gen-layer" }, lab);
    for (var l = 0; l < cfg.n_layers; l++) el("option", { value: l, text: String(l) }, selL);
    selL.value = String(s.layer);
    selL.addEventListener("change", function () { self.set({ layer: +selL.value }); });
    el("span", { cls: "as-note", text: tr("viewer.gen_colours") }, ll);
    var table = el("table", { "data-testid": "gen-table" }, el("div", { cls: "as-wrap", style: "max-height:40vh;overflow:auto;display:inline-block" }, wrap));
    var trh = el("tr", {}, el("thead", {}, table));
    ["#", tr("viewer.col_key"), "", tr("viewer.col_weight")].forEach(function (x, c) { el("th", { text: x, cls: c === 1 ? "tok" : "" }, trh); });
    var tb = el("tbody", {}, table), frag = document.createDocumentFragment();
    for (j = 0; j <= i; j++) {
      var why = t.hidden(s.layer, i, j);
      var row = el("tr", { "data-j": j, "data-testid": "gen-row-" + j, cls: focus[j] === top ? "max" : "" }, frag);
      el("td", { text: String(j) }, row);
      el("td", { cls: "tok", text: U.tokLabel(t.tokens[j]) }, row);
      el("td", { cls: "tok", text: j >= np ? tr("viewer.gen_output_n", { n: j - np + 1 }) : why === 2 ? tr("viewer.gen_outside") : tr("viewer.gen_prompt") }, row);
      el("td", { "data-col": "weight", "data-value": String(focus[j]), title: tr("viewer.exact", { x: String(focus[j]) }), text: show(focus[j], dec) }, row);
    }
    tb.appendChild(frag);
  };

  // rows[l][j] as cells (viridis of weight / row max), layer labels, prompt | outputs boundary.
  V.paintGenerationMap = function (p, rows, cw, y0) {
    var t = this.text(), cfg = this.cfg, gen = this.data.generation, i = gen.steps[this.state.step], np = gen.n_prompt;
    p.rect(0, y0, LABW + (i + 1) * cw, cfg.n_layers * RH + 40, "#fff");
    for (var l = 0; l < cfg.n_layers; l++) {
      var r = rows[l], m = 0, j;
      for (j = 0; j <= i; j++) if (r[j] > m) m = r[j];
      p.text(LABW - 6, y0 + l * RH + RH / 2, tr("viewer.layer_n", { layer: l }), { size: 11, anchor: "end", fill: "#667085", bold: l === this.state.layer });
      for (j = 0; j <= i; j++) {
        var why = t.hidden(l, i, j), c = U.viridis(m > 0 ? r[j] / m : 0);
        var fill = why === 2 ? "#fef0c7" : "rgb(" + Math.round(c[0]) + "," + Math.round(c[1]) + "," + Math.round(c[2]) + ")";
        p.rect(LABW + j * cw, y0 + l * RH, Math.max(1, cw - (cw > 5 ? 1 : 0)), RH - 1, fill);
      }
    }
    var yb = y0 + cfg.n_layers * RH;
    if (cw >= 26) for (var c = 0; c <= i; c++) {
      var lab = U.tokLabel(t.tokens[c]).trim(), room = Math.max(1, Math.floor(cw / 7));
      if (lab.length > room) lab = lab.slice(0, Math.max(1, room - 1)) + "…";
      p.text(LABW + c * cw + cw / 2, yb + 30, lab, { size: 10, anchor: "middle", fill: c >= np ? "#d62728" : "#344054" });
    }
    p.lines([LABW + np * cw - 0.5, y0, LABW + np * cw - 0.5, yb + 4], "#d62728", 1, 1.5);
    p.text(LABW, yb + 14, tr("viewer.gen_prompt_span", { last: np - 1 }), { size: 11, fill: "#667085" });
    if (i >= np) p.text(LABW + np * cw + 4, yb + 14, tr("viewer.gen_outputs"), { size: 11, fill: "#d62728" });
    p.text(LABW + (i + 1) * cw, yb + 14, tr("viewer.gen_key", { i: i }), { size: 11, anchor: "end", fill: "#667085" });
  };

  V.generationSize = function () {
    var i = this.data.generation.steps[this.state.step], cw = this.generationCell();
    return [Math.max(560, LABW + (i + 1) * cw + 20), 40 + this.cfg.n_layers * RH + 44];
  };

  V.paintGeneration = function (p, w, h) {
    var t = this.text(), s = this.state, gen = this.data.generation, i = gen.steps[s.step];
    p.rect(0, 0, w, h, "#fff");
    p.text(8, 14, tr("viewer.paint_gen", { model: this.data.model, t: s.step + 1, T: gen.steps.length, query: U.tokLabel(t.tokens[i]), token: U.tokLabel(t.tokens[i + 1]),
      heads: s.genHead < 0 ? tr("viewer.gen_mean_heads") : tr("viewer.head_n", { head: s.genHead }) }), { size: 13, bold: true });
    this.paintGenerationMap(p, this.generationRows(s.step, s.genHead), this.generationCell(), 32);
  };
})(window.attnscope);
