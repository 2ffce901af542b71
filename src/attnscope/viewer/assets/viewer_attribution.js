/* attnscope viewer: the attribution switch (raw / norm / rollout / ALTI / value zeroing).
 *
 * A page written with attribution (attnscope/viewer/attribution_view.py) carries per text, beside
 * q, k, v, float32 matrices computed by model.attribute: "norm" (n_layers × H × n × n, Kobayashi's
 * ‖α_ij·f(x_j)‖ per head, each row divided by its sum) and "rollout", "alti", "value_zeroing"
 * (n_layers × n × n, accumulated from layer 0 up to each layer; no heads). The toolbar's select
 * (data-testid attr-select) makes the head, model and matrix views and the generation view draw
 * one of them: while a method is on, Text.weights / summary / steps of the text shown answer with
 * its matrix (steps: only .weights, the row), so every drawing and tooltip reads the method's
 * numbers as they are stored. The step and context views always show the raw computation. A
 * method with one matrix a layer draws the head view once (the head toggles hide). A text past
 * the page's limit carries no matrices: the note says so and the raw weights are drawn.
 *
 * The page `attnscope serve` shows asks /api/view with "attribution": true (formBody): the server
 * computes the same matrices for the typed text, with the same limits; the method chosen stays on
 * for the next text typed. A text the server holds (too large to travel) carries none.
 */
(function (A) {
  "use strict";
  if (!A || !A.Viewer || A.Viewer.prototype.attrNote) return;
  var V = A.Viewer.prototype, T = A.Text.prototype, U = A.util, el = U.el, tr = A.tr;
  var SWITCHED = { head: 1, model: 1, matrix: 1, generation: 1 };
  // each method's name in the switch and the note saying what is drawn (keys written out: the
  // strings test greps for them)
  var NAME = { raw: "viewer.attr_raw", norm: "viewer.attr_norm", rollout: "viewer.attr_rollout", alti: "viewer.attr_alti",
    value_zeroing: "viewer.attr_value_zeroing" };
  var NOTE = { norm: "viewer.attr_note_norm", rollout: "viewer.attr_note_rollout", alti: "viewer.attr_note_alti",
    value_zeroing: "viewer.attr_note_value_zeroing" };

  // ---- the text's matrices ------------------------------------------------------------------
  T.load = (function (load) {
    return function () {
      var self = this;
      return load.apply(this, arguments).then(function (r) {
        var a = self.entry.attribution, names = a && !a.left_out ? Object.keys(a).filter(function (k) { return k !== "costly"; }) : [];
        self.attrArrays = {}; self.attr = null;
        return Promise.all(names.map(function (m) { return U.decodeArray(a[m]); })).then(function (xs) {
          names.forEach(function (m, i) { self.attrArrays[m] = xs[i]; });
          return r;
        });
      });
    };
  })(T.load);

  T.hasAttr = function (m) { return m === "raw" || !!(this.attrArrays && this.attrArrays[m]); };
  // One matrix per head (norm) or one per layer (the accumulated methods), told by the array's size.
  T.attrPerHead = function (m) { return this.attrArrays[m].length === this.L * this.H * this.n * this.n; };
  // The n × n matrix (a Float32Array view, row i = output position) `m` gives for (layer, head).
  T.attrMatrix = function (m, layer, head) {
    var nn = this.n * this.n, off = (this.attrPerHead(m) ? layer * this.H + head : layer) * nn;
    return this.attrArrays[m].subarray(off, off + nn);
  };

  T.weights = (function (weights) {
    return function (layer, head) { return this.attr ? this.attrMatrix(this.attr, layer, head) : weights.call(this, layer, head); };
  })(T.weights);

  T.summary = (function (summary) {
    return function (layer, head) {
      if (!this.attr) return summary.call(this, layer, head);
      var key = this.attr + ":" + layer + ":" + head, sm;
      this.attrSums = this.attrSums || new Map();
      if (!(sm = this.attrSums.get(key))) {
        sm = U.headSummary(this.attrMatrix(this.attr, layer, head), this.n, U.LINE_BUDGET);
        this.attrSums.set(key, sm);
      }
      return sm;
    };
  })(T.summary);

  T.steps = (function (steps) {
    return function (layer, head, i) {
      if (!this.attr) return steps.call(this, layer, head, i);
      var W = this.attrMatrix(this.attr, layer, head), n = this.n, w = new Float64Array(n);
      for (var j = 0; j < n; j++) w[j] = W[i * n + j];
      return { weights: w, attribution: this.attr };
    };
  })(T.steps);

  // ---- the viewer: switch, state, note --------------------------------------------------------
  V.buildToolbar = (function (build) {
    return function () {
      build.apply(this, arguments);
      var d = this.data, self = this, bar = arguments[0];
      this.selAttr = null;
      if (!d || !d.attribution || !this.state) return;
      // on the title line, before the language switch: the toolbar is one line full at 800 px
      var lab = el("label", { cls: "as-attr-sw", text: tr("viewer.attr"), title: tr("viewer.attr_tip") });
      var top = this.main.querySelector(".as-top"), lang = top ? top.querySelector(".as-lang") : null;
      if (lang) top.insertBefore(lab, lang); else bar.appendChild(lab);
      var sel = this.selAttr = el("select", { "data-testid": "attr-select" }, lab);
      ["raw"].concat(d.attribution.methods).forEach(function (m) { el("option", { value: m, text: tr(NAME[m] || m) }, sel); });
      sel.value = this.state.attr || "raw";
      sel.addEventListener("change", function () { self.set({ attr: sel.value }); });
    };
  })(V.buildToolbar);

  // What the text shown draws now: the method, or null for the raw weights.
  V.attrOn = function () {
    var s = this.state, t = this.text(), m = s.attr || "raw";
    return SWITCHED[s.view] && m !== "raw" && t.hasAttr && t.hasAttr(m) ? m : null;
  };

  V.render = (function (render) {
    return function () {
      var s = this.state;
      if (!s || !this.data || !this.data.attribution) return render.apply(this, arguments);
      var t = this.text(), on = this.attrOn(), r;
      this.texts.forEach(function (x) { x.attr = null; });
      t.attr = on;
      var key = s.text + ":" + on;
      if (this._attrKey !== key) { this._minw = null; this.hv = null; this._attrKey = key; }  // lines and threshold again
      var layerly = on && !t.attrPerHead(on), single = layerly && s.view === "head", saved = s.heads, cfg = this.cfg;
      if (single) s.heads = [0];  // one matrix a layer: the head view draws it once,
      if (layerly && s.view === "model") this.cfg = oneHead(cfg);  // the model view in one column
      try { r = render.apply(this, arguments); } finally { s.heads = saved; this.cfg = cfg; }
      if (this.selAttr) this.selAttr.value = s.attr || "raw";
      this.lastAttr = s.attr;  // the served page keeps it for the next text typed
      if (single) this.headBar.style.display = "none";
      var col = layerly && s.view === "model" ? this.body.querySelector(".as-mv > .as-lab") : null;
      if (col) col.textContent = tr("viewer.attr_per_layer");  // the one column is no head
      this.attrNote(on);
      return r;
    };
  })(V.render);

  function oneHead(cfg) { var c = {}, k; for (k in cfg) c[k] = cfg[k]; c.n_heads = 1; c.n_kv_heads = 1; return c; }

  // The picture PNG/SVG export paints: as drawn, the method's name at the top right.
  V.paintView = (function (paint) {
    return function (p, w, h) {
      var s = this.state, on = this.data.attribution ? this.attrOn() : null, saved = s.heads, cfg = this.cfg;
      var layerly = on && !this.text().attrPerHead(on);
      if (layerly && s.view === "head") s.heads = [0];
      if (layerly && s.view === "model") this.cfg = oneHead(cfg);
      try { paint.call(this, p, w, h); } finally { s.heads = saved; this.cfg = cfg; }
      if (on) p.text(w - 8, 14, tr(NAME[on] || on), { anchor: "end", size: 12, bold: true });
    };
  })(V.paintView);

  V.viewSize = (function (viewSize) {
    return function () {
      var on = this.data.attribution ? this.attrOn() : null, cfg = this.cfg, r;
      if (on && !this.text().attrPerHead(on) && this.state.view === "model") this.cfg = oneHead(cfg);
      try { r = viewSize.call(this); } finally { this.cfg = cfg; }
      return r;
    };
  })(V.viewSize);

  // The note over the view: what is drawn, or why the method's matrices are not there.
  V.attrNote = function (on) {
    var old = this.body.querySelector("[data-testid=attr-note]"), s = this.state, t = this.text(), m = s.attr || "raw", text = "";
    if (old) old.remove();
    if (!SWITCHED[s.view] || m === "raw") return;
    var a = t.entry.attribution || {};
    if (on) text = tr(NOTE[on]);
    else if (a.left_out === "too_long") text = tr("viewer.attr_left_long", { n: a.n, max: this.data.attribution.max_tokens });
    else if (a.left_out === "tokens") text = tr("viewer.attr_left_tokens");
    else if (a.left_out === "held") text = tr("viewer.attr_left_held");
    else if (a.costly && a.costly[m] && this.opts.server) text = tr("viewer.attr_left_costly_served", { passes: a.costly[m], limit: a.costly.limit });
    else if (a.costly && a.costly[m]) text = tr("viewer.attr_left_costly", { passes: a.costly[m], limit: a.costly.limit });
    else text = tr("viewer.attr_left_error", { why: a.why || "" });
    var note = el("div", { cls: on ? "as-note as-attr" : "as-warn", "data-testid": "attr-note", "data-method": on || "raw", text: text });
    this.body.insertBefore(note, this.body.firstChild);
  };

  // The served page asks for the matrices of the text typed (the encoder–decoder page has its own formBody).
  V.formBody = (function (formBody) {
    return function () { var b = formBody.call(this); b.attribution = true; return b; };
  })(V.formBody);

  V.pending = (function (pending) {
    return function () {
      var t = this.data && this.data.attribution ? this.text() : null;
      return t && t.attr ? null : pending ? pending.call(this) : null;  // the method's matrices are in the page
    };
  })(V.pending);

  V.hashOf = (function (hashOf) {
    return function () {
      var h = hashOf.call(this), m = this.state.attr;
      return m && m !== "raw" ? h + "&attr=" + m : h;
    };
  })(V.hashOf);

  V.applyHash = (function (applyHash) {
    return function () {
      applyHash.call(this);
      var d = this.data, s = this.state;
      s.attr = "raw";
      if (this.opts.server && d && d.attribution && d.attribution.methods.indexOf(this.lastAttr) >= 0) s.attr = this.lastAttr;
      if (this.opts.server || !window.location.hash || !d || !d.attribution) return;
      window.location.hash.slice(1).split("&").forEach(function (kv) {
        var v = kv.slice(5);
        if (kv.slice(0, 5) === "attr=" && d.attribution.methods.indexOf(v) >= 0) s.attr = v;
      });
    };
  })(V.applyHash);

  // ---- model view: thumbnails of the method's matrices ---------------------------------------
  // Cell means over at most 64 × 64 cells, scaled to the head's largest cell (as data.thumbnails).
  V.thumbCanvas = (function (thumb) {
    return function (layer, head, canvas) {
      var t = this.text();
      if (!t.attr) return thumb.call(this, layer, head, canvas);
      var n = t.n, S = Math.min(n, 64), W = t.attrMatrix(t.attr, layer, head), e = [], a, b, i, j;
      for (a = 0; a <= S; a++) e.push(Math.round(a * n / S));
      var cells = new Float64Array(S * S), top = 0;
      for (a = 0; a < S; a++) for (b = 0; b < S; b++) {
        var sum = 0;
        for (i = e[a]; i < e[a + 1]; i++) for (j = e[b]; j < e[b + 1]; j++) sum += W[i * n + j];
        cells[a * S + b] = sum / ((e[a + 1] - e[a]) * (e[b + 1] - e[b]));
        if (cells[a * S + b] > top) top = cells[a * S + b];
      }
      var c = canvas || document.createElement("canvas");
      c.width = S; c.height = S;
      var ctx = c.getContext("2d"), img = ctx.createImageData(S, S);
      for (i = 0; i < S * S; i++) {
        var rgb = U.viridis(top > 0 ? cells[i] / top : 0);
        img.data[4 * i] = rgb[0]; img.data[4 * i + 1] = rgb[1]; img.data[4 * i + 2] = rgb[2]; img.data[4 * i + 3] = 255;
      }
      ctx.putImageData(img, 0, 0);
      return c;
    };
  })(V.thumbCanvas);
})(window.attnscope);
