/* attnscope viewer: the head view (every query's lines to the keys it attends to) and the model view
 * (every layer × head as a thumbnail). */
(function (A) {
  "use strict";
  if (!A) return;
  var U = A.util, el = U.el, show = A.show, ROW = U.ROW, tokLabel = U.tokLabel, viridis = U.viridis, tr = A.tr,
    headColor = U.headColor, headGeometry = U.headGeometry, CanvasPainter = A.CanvasPainter, Viewer = A.Viewer;
  if (!Viewer || Viewer.prototype.renderHead) return;

  // ---- head view ---------------------------------------------------------------------------
  // Lines are drawn for the (query, key) pairs whose weight is at least minWeight(): the smallest
  // weight that keeps the picture under LINE_BUDGET lines (rasterising more costs seconds and shows
  // nothing more), and all of the focused query's lines when one is selected or hovered. They are
  // batched by opacity: 16 paths per head.
  var LINE_BUDGET = U.LINE_BUDGET;
  Viewer.prototype.minWeight = function () {
    var t = this.text(), s = this.state, n = t.n, key = s.text + ":" + s.layer + ":" + s.heads.join(",");
    if (this._minw && this._minw.key === key) return this._minw.value;
    var bins = new Float64Array(1001), total = 0;  // weights in steps of 0.001
    for (var hi = 0; hi < s.heads.length; hi++) {
      var hb = t.summary(s.layer, s.heads[hi]).bins;
      for (var b = 0; b <= 1000; b++) { bins[b] += hb[b]; total += hb[b]; }
    }
    void n;
    var value = U.lineThreshold(bins, total, LINE_BUDGET);
    this._minw = { key: key, value: value };
    return value;
  };

  // Segments from x0 to x1 (rows from y0 down); with lo, hi only those crossing that band of y.
  Viewer.prototype.headSegments = function (x0, x1, y0, lo, hi) {
    var t = this.text(), n = t.n, s = this.state, only = s.hover !== null ? s.hover : s.query, out = [];
    var minw = only !== null ? 0 : this.minWeight();
    if (lo === undefined) { lo = -Infinity; hi = Infinity; }
    for (var hx = 0; hx < s.heads.length; hx++) {  // (not `hi`: that is the band's upper edge)
      var h = s.heads[hx], W = t.weights(s.layer, h), buckets = [];
      for (var b = 0; b < 16; b++) buckets.push([]);
      if (only === null) {  // every pair at or above minw is among the head's own strongest
        var idx = t.summary(s.layer, h).idx;
        for (var x = 0; x < idx.length; x++) {
          var wx = W[idx[x]];
          if (wx < minw || wx <= 0) continue;
          var yq = y0 + Math.floor(idx[x] / n) * ROW + ROW / 2, yk = y0 + (idx[x] % n) * ROW + ROW / 2;
          if ((yq < lo && yk < lo) || (yq > hi && yk > hi)) continue;
          buckets[Math.min(15, Math.floor(wx * 16))].push(x0, yq, x1, yk);
        }
        out.push({ head: h, buckets: buckets });
        continue;
      }
      var i0 = only, i1 = only + 1;
      for (var i = i0; i < i1; i++) {
        var yi = y0 + i * ROW + ROW / 2;
        for (var j = 0; j < n; j++) {
          var w = W[i * n + j];
          if (w < minw || w <= 0) continue;
          var yj = y0 + j * ROW + ROW / 2;
          if ((yi < lo && yj < lo) || (yi > hi && yj > hi)) continue;
          buckets[Math.min(15, Math.floor(w * 16))].push(x0, yi, x1, yj);
        }
      }
      out.push({ head: h, buckets: buckets });
    }
    return out;
  };

  Viewer.prototype.paintHeadLines = function (p, x0, x1, y0, lo, hi) {
    var nh = this.state.heads.length;
    this.headSegments(x0, x1, y0, lo, hi).forEach(function (g) { U.paintBuckets(p, g.buckets, headColor(g.head), nh); });
  };

  // The note over the head view: what the lines mean, this layer's threshold and window.
  Viewer.prototype.headNote = function () {
    var t = this.text(), s = this.state, minw = this.minWeight(), win = t.window(s.layer);
    return tr("viewer.head_note", { below: minw > 0 ? tr("viewer.head_below", { w: show(minw, 3) }) : "" }) +
      (this.cfg.causal ? tr("viewer.head_causal", { window: win !== null ? tr("viewer.head_window", { w: win }) : "" }) : "");
  };

  // A layer, head or query change redraws only the lines and the note: the tokens' elements (two
  // per token, 4 096 at 2 048 tokens) stay, with their scroll position; building and laying them
  // out again was most of a layer switch (120 ms + a 200 ms frame at 2 048 tokens).
  Viewer.prototype.keepsHead = function () {
    var hv = this.hv, t = this.text();
    return !!hv && hv.text === t && this.body.contains(hv.box) &&
      headGeometry(t.tokens, this.body.clientWidth).lineW === hv.lineW;
  };
  Viewer.prototype.updateHead = function () {
    var hv = this.hv, s = this.state;
    hv.note.style.display = ""; hv.note.textContent = this.headNote();
    for (var k = 0; k < this.qEls.length; k++) this.qEls[k].classList.toggle("sel", k === s.query);
    this.redrawLines();
  };
  // While the next layer's weights are on their way: the note says so and the old lines go.
  Viewer.prototype.headWaiting = function (loading) {
    var hv = this.hv;
    hv.note.style.display = "none"; hv.box.parentNode.parentNode.insertBefore(loading, hv.note);
    hv.clear();
  };

  Viewer.prototype.renderHead = function () {
    var self = this, t = this.text(), n = t.n, s = this.state;
    var note = el("div", { cls: "as-note", "data-testid": "head-note", text: this.headNote() }, this.body);
    var scroll = el("div", { cls: "as-hv-scroll" }, this.body);
    var geo = this.headGeo = headGeometry(t.tokens, this.body.clientWidth), TOKW = geo.tokW, LINEW = geo.lineW;
    var box = el("div", { cls: "as-hv", "data-testid": "head-view", style: "height:" + (n * ROW + 8) + "px;width:" + (2 * TOKW + LINEW) + "px" }, scroll);
    // The canvas covers only the rows in sight and moves with the scroll position: a long text's
    // full height is more than a canvas may have, and rasterising lines out of sight was most of
    // the cost of a redraw (software rendering).
    var VH = Math.max(ROW, Math.min(n * ROW, scroll.clientHeight || window.innerHeight || 800));
    var canvas = el("canvas", { style: "left:" + TOKW + "px;width:" + LINEW + "px;height:" + VH + "px" }, box);
    var dpr = Math.min(2, window.devicePixelRatio || 1);
    canvas.width = Math.round(LINEW * dpr); canvas.height = Math.round(VH * dpr);
    var ctx = canvas.getContext("2d");
    this.hv = { text: t, lineW: LINEW, box: box, note: note, clear: function () { ctx.setTransform(1, 0, 0, 1, 0, 0); ctx.clearRect(0, 0, canvas.width, canvas.height); } };
    this.redrawLines = function () {
      var top = Math.max(0, Math.min(scroll.scrollTop, n * ROW - VH));
      canvas.style.top = top + "px";
      ctx.setTransform(dpr, 0, 0, dpr, 0, -top * dpr);
      ctx.clearRect(0, top, LINEW, VH);
      self.paintHeadLines(new CanvasPainter(ctx), 4, LINEW - 4, 0, top, top + VH);
      self.shadeKeys();
    };
    var queued = false;
    scroll.addEventListener("scroll", function () {
      if (queued) return; queued = true;
      requestAnimationFrame(function () { queued = false; if (self.redrawLines) self.redrawLines(); });
    });
    var frag = document.createDocumentFragment();
    this.qEls = []; this.kEls = [];
    for (var i = 0; i < n; i++) {
      var tok = tokLabel(t.tokens[i]);
      var a = el("div", { cls: "as-tok q" + (s.query === i ? " sel" : ""), "data-i": i, "data-testid": "q-" + i,
        style: "top:" + (i * ROW + 1) + "px;left:0;width:" + TOKW + "px", text: tok }, frag);
      var b = el("div", { cls: "as-tok k", "data-j": i, "data-testid": "k-" + i,
        style: "top:" + (i * ROW + 1) + "px;left:" + (TOKW + LINEW) + "px;width:" + TOKW + "px", text: tok }, frag);
      this.qEls.push(a); this.kEls.push(b);
    }
    box.appendChild(frag);
    box.addEventListener("mouseover", function (ev) {
      var e = ev.target.closest(".as-tok"); if (!e) return;
      if (e.classList.contains("q")) { self.state.hover = +e.getAttribute("data-i"); self.redrawLines(); }
    });
    box.addEventListener("mousemove", function (ev) {
      var e = ev.target.closest(".as-tok"); if (!e) { self.hideTip(); return; }
      self.showTip(ev, self.tokenTip(e));
    });
    box.addEventListener("mouseleave", function () { self.state.hover = null; self.hideTip(); self.redrawLines(); });
    box.addEventListener("mouseout", function (ev) {
      var e = ev.target.closest(".as-tok");
      if (e && e.classList.contains("q") && !(ev.relatedTarget && e.contains(ev.relatedTarget))) { self.state.hover = null; self.redrawLines(); }
    });
    box.addEventListener("click", function (ev) {
      var e = ev.target.closest(".as-tok"); if (!e) return;
      if (e.classList.contains("q")) {
        var i = +e.getAttribute("data-i");
        self.state.query = self.state.query === i ? null : i;
        for (var k = 0; k < self.qEls.length; k++) self.qEls[k].classList.toggle("sel", k === self.state.query);
        self.redrawLines();
      }
    });
    box.addEventListener("dblclick", function (ev) {
      var e = ev.target.closest(".as-tok.q"); if (!e) return;
      self.set({ view: "step", query: +e.getAttribute("data-i"), focus: self.state.heads.length ? (self.state.heads.indexOf(self.state.focus) >= 0 ? self.state.focus : self.state.heads[0]) : self.state.focus });
    });
    this.redrawLines();
  };

  // The keys the focused query cannot see: class "hid-causal" (later) or "hid-window" (too far back).
  Viewer.prototype.shadeKeys = function () {
    var s = this.state, t = this.text(), q = s.hover !== null ? s.hover : s.query;
    if (!this.kEls) return;
    for (var j = 0; j < this.kEls.length; j++) {
      var why = q === null ? 0 : t.hidden(s.layer, q, j);
      this.kEls[j].classList.toggle("hid-causal", why === 1);
      this.kEls[j].classList.toggle("hid-window", why === 2);
    }
  };

  // Hover text: a query shows its strongest keys per head; a key shows weight from the selected query.
  Viewer.prototype.tokenTip = function (e) {
    var t = this.text(), s = this.state, dec = s.dec, lines = [];
    if (e.classList.contains("q")) {
      var i = +e.getAttribute("data-i");
      lines.push(tr("viewer.tip_query", { i: i, token: t.tokens[i], layer: s.layer }));
      s.heads.slice(0, 12).forEach(function (h) {
        var st = t.steps(s.layer, h, i), best = 0;
        for (var j = 1; j < t.n; j++) if (st.weights[j] > st.weights[best]) best = j;
        lines.push(tr("viewer.tip_best", { head: h, w: show(st.weights[best], dec), j: best, token: t.tokens[best] }));
      });
      lines.push(tr("viewer.tip_query_click"));
    } else {
      var j = +e.getAttribute("data-j"), q = s.hover !== null ? s.hover : s.query;
      lines.push(tr("viewer.tip_key", { j: j, token: t.tokens[j] }));
      if (q === null) lines.push(tr("viewer.tip_key_none"));
      else s.heads.forEach(function (h) {
        var st = t.steps(s.layer, h, q);
        lines.push(tr("viewer.tip_key_weight", { head: h, q: t.tokens[q], k: t.tokens[j], w: show(st.weights[j], dec), x: String(st.weights[j]) }));
      });
    }
    return lines.join("\n");
  };

  Viewer.prototype.paintHead = function (p, w, h) {
    var t = this.text(), n = t.n, s = this.state, top = 30, geo = this.headGeo || headGeometry(t.tokens, 0);
    var TOKW = geo.tokW, LINEW = geo.lineW;
    p.rect(0, 0, w, h, "#fff");
    var hs = s.heads.length === this.cfg.n_heads ? tr("viewer.all_heads") : s.heads.length ? tr("viewer.some_heads", { heads: s.heads.join(",") }) : tr("viewer.no_heads");
    p.text(8, 14, tr("viewer.paint_head", { layer: s.layer, heads: hs }), { size: 13, bold: true });
    this.paintHeadLines(p, TOKW + 4, TOKW + LINEW - 4, top);
    for (var i = 0; i < n; i++) {
      var y = top + i * ROW + ROW / 2, sel = s.query === i;
      p.text(TOKW - 6, y, t.tokens[i], { anchor: "end", bold: sel });
      p.text(TOKW + LINEW + 6, y, t.tokens[i], {});
    }
  };

  // ---- model view ---------------------------------------------------------------------------
  Viewer.prototype.thumbCanvas = function (layer, head, canvas) {
    var t = this.text(), T = t.T, c = canvas || document.createElement("canvas");
    c.width = T; c.height = T;
    var ctx = c.getContext("2d"), img = ctx.createImageData(T, T), off = (layer * this.cfg.n_heads + head) * T * T;
    for (var i = 0; i < T * T; i++) {
      var rgb = viridis(t.thumbs[off + i] / 255);
      img.data[4 * i] = rgb[0]; img.data[4 * i + 1] = rgb[1]; img.data[4 * i + 2] = rgb[2]; img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    return c;
  };

  Viewer.prototype.renderModel = function () {
    var self = this, cfg = this.cfg, s = this.state;
    el("div", { cls: "as-note", text: tr("viewer.model_note") }, this.body);
    var grid = el("div", { cls: "as-mv", "data-testid": "model-view", style: "grid-template-columns:56px repeat(" + cfg.n_heads + ",72px)" }, this.body);
    el("div", {}, grid);
    var shared = (cfg.n_kv_heads || cfg.n_heads) < cfg.n_heads, grp = cfg.n_heads / (cfg.n_kv_heads || cfg.n_heads);
    for (var h = 0; h < cfg.n_heads; h++) el("div", { cls: "as-lab", text: tr("viewer.head_n", { head: h }) + (shared ? " · kv " + Math.floor(h / grp) : "") }, grid);
    var pending = [];
    for (var l = 0; l < cfg.n_layers; l++) {
      el("div", { cls: "as-lab", text: tr("viewer.layer_n", { layer: l }) }, grid);
      for (h = 0; h < cfg.n_heads; h++) {
        var c = el("canvas", { "data-layer": l, "data-head": h, "data-testid": "thumb-" + l + "-" + h,
          cls: l === s.layer && s.heads.length === 1 && s.heads[0] === h ? "cur" : "" }, grid);
        pending.push(c);
      }
    }
    var draw = function (c) {
      if (c.__drawn) return; c.__drawn = true;
      self.thumbCanvas(+c.getAttribute("data-layer"), +c.getAttribute("data-head"), c);
    };
    if ("IntersectionObserver" in window) {  // lazy: a thumbnail is painted when it scrolls into view
      this.observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (e) { if (e.isIntersecting) draw(e.target); });
      }, { rootMargin: "200px" });
      pending.forEach(function (c) { self.observer.observe(c); });
    } else pending.forEach(draw);
    grid.addEventListener("click", function (ev) {
      var c = ev.target.closest("canvas"); if (!c) return;
      var h = +c.getAttribute("data-head");
      self.set({ view: "head", layer: +c.getAttribute("data-layer"), heads: [h], focus: h });
    });
    grid.addEventListener("mousemove", function (ev) {
      var c = ev.target.closest("canvas"); if (!c) { self.hideTip(); return; }
      var l = +c.getAttribute("data-layer"), h = +c.getAttribute("data-head"), t = self.text();
      var r = c.getBoundingClientRect(), T = t.T;
      var ci = Math.min(T - 1, Math.floor((ev.clientY - r.top) / r.height * T)), cj = Math.min(T - 1, Math.floor((ev.clientX - r.left) / r.width * T));
      var text = tr("viewer.tip_thumb", { layer: l, head: h });
      if (T === t.n) {
        var st = t.steps(l, h, ci);
        text += "\n" + t.tokens[ci] + " → " + t.tokens[cj] + ": " + show(st.weights[cj], s.dec) + "\n" + tr("viewer.tip_exact_line", { x: String(st.weights[cj]) });
      }
      self.showTip(ev, text + "\n" + tr("viewer.tip_open"));
    });
    grid.addEventListener("mouseleave", function () { self.hideTip(); });
  };

  Viewer.prototype.paintModel = function (p) {
    var cfg = this.cfg, S = 64, G = 8, x0 = 64, y0 = 44;
    p.rect(0, 0, x0 + cfg.n_heads * (S + G), y0 + cfg.n_layers * (S + G), "#fff");
    p.text(8, 14, tr("viewer.paint_model", { model: this.data.model }), { size: 13, bold: true });
    for (var h = 0; h < cfg.n_heads; h++) p.text(x0 + h * (S + G) + S / 2, y0 - 10, tr("viewer.head_n", { head: h }), { size: 11, anchor: "middle" });
    for (var l = 0; l < cfg.n_layers; l++) {
      p.text(8, y0 + l * (S + G) + S / 2, tr("viewer.layer_n", { layer: l }), { size: 11 });
      for (h = 0; h < cfg.n_heads; h++) p.image(this.thumbCanvas(l, h), x0 + h * (S + G), y0 + l * (S + G), S, S);
    }
  };

})(window.attnscope);
