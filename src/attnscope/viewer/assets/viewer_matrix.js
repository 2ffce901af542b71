/* attnscope viewer: the matrix view, one head's weights as a heatmap (rows: queries, columns: keys).
 *
 * Drawn on a canvas at device resolution. When a cell would be smaller than a device pixel, each
 * pixel shows the largest weight of the cells it covers (max-pooling, so a sharp weight never
 * vanishes) and the note says how many cells a pixel holds. Drag a rectangle to zoom into it;
 * hovering shows the exact float64 weight (of the pixel's largest cell when pooled): the page's
 * own recomputation (Text.steps) for a page that carries q, k, v, the server's rows for a text the
 * server holds (viewer_remote.js). Keys a query cannot see (causal mask, sliding window) are grey.
 *
 * Text.heatmap(layer, head, q0, q1, k0, k1, R, C) -> {grid: Float32Array(R·C), rowEdges, colEdges}
 * with edge r = q0 + ⌊r·(q1 − q0)/R⌋: the same cells as the server's /api/held/heatmap.
 */
(function (A) {
  "use strict";
  if (!A || !A.Viewer || A.Viewer.prototype.renderMatrix) return;
  var V = A.Viewer.prototype, U = A.util, el = U.el, show = A.show, tr = A.tr;
  var LABW = 128, TOPH = 26, BAR = 64, LOG_LO = -4;

  function edges(a, b, m) { var e = new Array(m + 1); for (var r = 0; r <= m; r++) e[r] = a + Math.floor(r * (b - a) / m); return e; }

  // Max-pooled cells of one head, from the page's own float64 weights (Text.weights).
  A.Text.prototype.heatmap = function (layer, head, q0, q1, k0, k1, R, C) {
    var W = this.weights(layer, head), n = this.n, re = edges(q0, q1, R), ce = edges(k0, k1, C), grid = new Float32Array(R * C);
    for (var r = 0; r < R; r++) for (var c = 0; c < C; c++) {
      var m = 0;
      for (var i = re[r]; i < re[r + 1]; i++) for (var j = ce[c]; j < ce[c + 1]; j++) if (W[i * n + j] > m) m = W[i * n + j];
      grid[r * C + c] = m;
    }
    return { grid: grid, rowEdges: re, colEdges: ce };
  };

  // The region shown, the canvas size in CSS pixels and the cells (R × C) at device resolution.
  V.matrixGeometry = function () {
    var t = this.text(), s = this.state, z = s.zoom && s.zoom[1] <= t.n && s.zoom[3] <= t.n ? s.zoom : [0, t.n, 0, t.n];
    var nq = z[1] - z[0], nk = z[3] - z[2];
    var avail = Math.max(280, (this.body.clientWidth || 1000) - LABW - BAR - 40);
    var side = Math.max(280, Math.min(avail, Math.round((window.innerHeight || 900) * 0.7), 1400));
    var cell = side / Math.max(nq, nk), W = Math.max(1, Math.round(nk * cell)), H = Math.max(1, Math.round(nq * cell));
    var dpr = window.devicePixelRatio || 1;
    var R = Math.min(nq, Math.round(H * dpr)), C = Math.min(nk, Math.round(W * dpr));
    return { z: z, nq: nq, nk: nk, W: W, H: H, R: R, C: C, dpr: dpr, cell: cell, pooled: R < nq || C < nk,
      labels: cell >= 12 };
  };

  // True when every cell of queries a … b−1 × keys c … d−1 is hidden from its query on `layer`.
  function allHidden(t, layer, a, b, c, d) {
    if (t.cfg.causal && c > b - 1) return true;
    var w = t.window(layer);
    return w !== null && t.cfg.causal && a - (d - 1) >= w;
  }

  var LUT = null;
  function lut() {
    if (LUT) return LUT;
    LUT = new Uint8Array(256 * 3);
    for (var i = 0; i < 256; i++) { var c = U.viridis(i / 255); LUT[3 * i] = c[0]; LUT[3 * i + 1] = c[1]; LUT[3 * i + 2] = c[2]; }
    return LUT;
  }

  // The cells as an R × C canvas (one pixel a cell) in the colour scale; returns {canvas, vmax}.
  V.matrixImage = function (hm, g) {
    var t = this.text(), s = this.state, R = g.R, C = g.C, grid = hm.grid, vmax = 0, i, r, c;
    var hidden = new Uint8Array(R * C);
    for (r = 0; r < R; r++) for (c = 0; c < C; c++) {
      i = r * C + c;
      if (allHidden(t, s.layer, hm.rowEdges[r], hm.rowEdges[r + 1], hm.colEdges[c], hm.colEdges[c + 1])) hidden[i] = 1;
      else if (grid[i] > vmax) vmax = grid[i];
    }
    var cv = document.createElement("canvas"); cv.width = C; cv.height = R;
    var ctx = cv.getContext("2d"), img = ctx.createImageData(C, R), px = img.data, L = lut(), log = s.mscale === "log";
    var top = vmax > 0 ? vmax : 1, ltop = Math.log10(top), span = ltop - LOG_LO;
    for (i = 0; i < R * C; i++) {
      var o = 4 * i;
      if (hidden[i]) { px[o] = 234; px[o + 1] = 236; px[o + 2] = 240; px[o + 3] = 255; continue; }
      var v = grid[i], f = log ? (v > 0 ? (Math.log10(v) - LOG_LO) / (span > 0 ? span : 1) : 0) : v / top;
      var k = 3 * Math.max(0, Math.min(255, Math.round(f * 255)));
      px[o] = L[k]; px[o + 1] = L[k + 1]; px[o + 2] = L[k + 2]; px[o + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    return { canvas: cv, vmax: vmax };
  };

  V.matrixNote = function (g) {
    var s = this.state, z = g.z, fq = g.nq / g.R, fk = g.nk / g.C, txt;
    txt = tr("viewer.matrix_where", { layer: s.layer, head: s.focus, q0: z[0], q1: z[1] - 1, k0: z[2], k1: z[3] - 1 });
    txt += g.pooled ? tr("viewer.matrix_pooled", { rows: Math.ceil(fq), cols: Math.ceil(fk) })
      : tr("viewer.matrix_cells", { px: Math.round(g.cell * 10) / 10 });
    return txt + tr("viewer.matrix_hover", { server: this.text().remote ? tr("viewer.from_server") : "" }) +
      (this.cfg.causal ? tr("viewer.matrix_causal") : "");
  };

  V.renderMatrix = function () {
    var self = this, t = this.text(), s = this.state, cfg = this.cfg, g = this.matrixGeometry();
    var wrap = el("div", { cls: "as-mx", "data-testid": "matrix-view" }, this.body);
    var ctl = el("div", { cls: "as-ctl" }, wrap);
    var lh = el("label", { text: tr("viewer.head") }, ctl), selH = el("select", { "data-testid": "matrix-head-select" }, lh);
    for (var h = 0; h < cfg.n_heads; h++) el("option", { value: h, text: String(h) }, selH);
    selH.value = String(s.focus);
    selH.addEventListener("change", function () { self.set({ focus: +selH.value }); });
    var ls = el("label", { text: tr("viewer.colour") }, ctl), selS = el("select", { "data-testid": "matrix-scale" }, ls);
    el("option", { value: "linear", text: tr("viewer.scale_linear") }, selS);
    el("option", { value: "log", text: tr("viewer.scale_log") }, selS);
    selS.value = s.mscale === "log" ? "log" : "linear";
    selS.addEventListener("change", function () { self.set({ mscale: selS.value }); });
    var zo = el("button", { type: "button", cls: "as-small", text: tr("viewer.zoom_out"), "data-testid": "matrix-zoom-out" }, ctl);
    var all = el("button", { type: "button", cls: "as-small", text: tr("viewer.whole_matrix"), "data-testid": "matrix-reset" }, ctl);
    zo.disabled = all.disabled = !s.zoom;
    zo.addEventListener("click", function () { self.set({ zoom: self.zoomOut(s.zoom) }); });
    all.addEventListener("click", function () { self.set({ zoom: null }); });
    el("div", { cls: "as-note", "data-testid": "matrix-note", text: this.matrixNote(g) }, wrap);
    var hm = t.heatmap(s.layer, s.focus, g.z[0], g.z[1], g.z[2], g.z[3], g.R, g.C);
    var img = this.matrixImage(hm, g);
    this.matrixLast = { g: g, hm: hm, img: img };
    var fullW = LABW + g.W + BAR + 12, fullH = TOPH + g.H + 24;
    var box = el("div", { cls: "as-mxbox", style: "width:" + fullW + "px;height:" + fullH + "px" }, wrap);
    var cv = el("canvas", { "data-testid": "matrix-canvas", "data-rows": g.R, "data-cols": g.C, "data-vmax": String(img.vmax),
      style: "width:" + fullW + "px;height:" + fullH + "px" }, box);
    cv.width = Math.round(fullW * g.dpr); cv.height = Math.round(fullH * g.dpr);
    var ctx = cv.getContext("2d"); ctx.scale(g.dpr, g.dpr);
    this.paintMatrixAt(new A.CanvasPainter(ctx), 0, 0, g, hm, img);
    var sel = el("div", { cls: "as-mxsel" }, box), drag = null;
    var cellAt = function (ev) {
      var r = cv.getBoundingClientRect(), x = ev.clientX - r.left - LABW, y = ev.clientY - r.top - TOPH;
      if (x < 0 || y < 0 || x >= g.W || y >= g.H) return null;
      var cc = Math.min(g.C - 1, Math.floor(x / g.W * g.C)), rr = Math.min(g.R - 1, Math.floor(y / g.H * g.R));
      return { r: rr, c: cc, x: x, y: y, q0: hm.rowEdges[rr], q1: hm.rowEdges[rr + 1], k0: hm.colEdges[cc], k1: hm.colEdges[cc + 1] };
    };
    var up = function (ev) {
      window.removeEventListener("mouseup", up);
      if (!drag) return;
      var c = cellAt(ev) || drag, d = drag; drag = null; sel.style.display = "none";
      if (Math.abs(c.x - d.x) < 4 && Math.abs(c.y - d.y) < 4) return;  // a click, not a drag
      var z = [Math.min(d.q0, c.q0), Math.max(d.q1, c.q1), Math.min(d.k0, c.k0), Math.max(d.k1, c.k1)];
      if (z[1] - z[0] < 2 && z[3] - z[2] < 2) return;
      self.set({ zoom: z });
    };
    cv.addEventListener("mousedown", function (ev) {
      var c = cellAt(ev); if (!c) return;
      drag = c; ev.preventDefault(); window.addEventListener("mouseup", up);
    });
    cv.addEventListener("mousemove", function (ev) {
      var c = cellAt(ev);
      if (drag && c) {
        var x0 = Math.min(drag.x, c.x), y0 = Math.min(drag.y, c.y);
        sel.style.cssText = "display:block;left:" + (LABW + x0) + "px;top:" + (TOPH + y0) + "px;width:" + Math.abs(c.x - drag.x) + "px;height:" + Math.abs(c.y - drag.y) + "px";
      }
      if (!c) { self.hideTip(); return; }
      self.matrixTip(ev, c);
    });
    cv.addEventListener("mouseleave", function () { self.hideTip(); });
    cv.addEventListener("dblclick", function (ev) {
      var c = cellAt(ev); if (!c) return;
      var best = self.matrixBest(c);
      self.set({ view: "step", query: best ? best.i : c.q0, key: best ? best.j : c.k0 });
    });
  };

  // Twice the region around its centre, within the matrix (null once it is the whole matrix).
  V.zoomOut = function (z) {
    var n = this.text().n; if (!z) return null;
    var grow = function (a, b) {
      var w = Math.min(n, 2 * (b - a)), mid = (a + b) / 2, lo = Math.max(0, Math.round(mid - w / 2));
      return [Math.min(lo, n - w), Math.min(lo, n - w) + w];
    };
    var q = grow(z[0], z[1]), k = grow(z[2], z[3]);
    return q[0] === 0 && q[1] === n && k[0] === 0 && k[1] === n ? null : [q[0], q[1], k[0], k[1]];
  };

  // The largest exact weight of a pixel's cells {i, j, w, hidden}, or null while it is on its way.
  V.matrixBest = function (c) {
    var t = this.text(), s = this.state, best = null;
    var rows = t.exactRows ? t.exactRows(s.layer, s.focus, c.q0, c.q1) : null;
    for (var i = c.q0; i < c.q1; i++) {
      var w = rows ? rows[i - c.q0] : t.steps(s.layer, s.focus, i).weights;
      if (!w) return null;
      for (var j = c.k0; j < c.k1; j++) {
        if (t.hidden(s.layer, i, j)) continue;
        if (!best || w[j] > best.w) best = { i: i, j: j, w: w[j] };
      }
    }
    return best || { i: c.q0, j: c.k0, w: 0, hidden: true };
  };

  V.matrixTip = function (ev, c) {
    var self = this, t = this.text(), s = this.state, dec = s.dec, tok = function (i) { return U.tokLabel(t.tokens[i]); };
    var best = this.matrixBest(c), lines = [];
    if (!best) {  // rows still on their way from the server: show the tip when they come
      this.showTip(ev, tr("viewer.tip_cells", { q0: c.q0, q1: c.q1 - 1, k0: c.k0, k1: c.k1 - 1 }) + "\n" + tr("viewer.tip_reading"));
      var e = { clientX: ev.clientX, clientY: ev.clientY };
      t.fetchRows(s.layer, [s.focus], c.q0, c.q1).then(function () { if (self.tip.style.display !== "none") self.matrixTip(e, c); });
      return;
    }
    var many = c.q1 - c.q0 > 1 || c.k1 - c.k0 > 1;
    if (many) lines.push(tr("viewer.tip_cells", { q0: c.q0, q1: c.q1 - 1, k0: c.k0, k1: c.k1 - 1 }) + tr("viewer.tip_largest", { n: (c.q1 - c.q0) * (c.k1 - c.k0) }));
    var ij = { i: best.i, qt: tok(best.i), j: best.j, kt: tok(best.j) };
    if (best.hidden) lines.push(tr("viewer.tip_cannot_see", ij) + (many ? tr("viewer.tip_none_of") : ""));
    else {
      lines.push(tr("viewer.tip_pair", ij));
      lines.push(tr("viewer.tip_weight", { w: show(best.w, dec), x: String(best.w) }));
    }
    lines.push(tr("viewer.tip_matrix_where", { layer: s.layer, head: s.focus }));
    this.showTip(ev, lines.join("\n"));
  };

  function tickStep(n, px) { var raw = n / Math.max(1, px / 60), p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p; return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p; }

  // The whole view through a painter (screen canvas, PNG and SVG export): axes, cells, colour bar.
  V.paintMatrixAt = function (p, x0, y0, g, hm, img) {
    var t = this.text(), s = this.state, z = g.z, X = x0 + LABW, Y = y0 + TOPH, k, v;
    p.rect(x0, y0, LABW + g.W + BAR + 12, TOPH + g.H + 24, "#fff");
    p.image(img.canvas, X, Y, g.W, g.H);
    var sq = tickStep(g.nq, g.H), sk = tickStep(g.nk, g.W), segs = [];
    if (g.labels) {
      for (k = z[0]; k < z[1]; k++) p.text(X - 6, Y + (k - z[0] + 0.5) * g.cell, U.tokLabel(t.tokens[k]).slice(0, 16), { anchor: "end", size: Math.min(12, g.cell - 2) });
      for (k = z[2]; k < z[3]; k += Math.max(1, Math.ceil(40 / g.cell))) p.text(X + (k - z[2] + 0.5) * g.cell, Y - 8, String(k), { anchor: "middle", size: 10, fill: "#667085" });
    } else {
      for (v = Math.ceil(z[0] / sq) * sq; v < z[1]; v += sq) { var yy = Y + (v - z[0]) / g.nq * g.H; segs.push(X - 5, yy, X, yy); p.text(X - 8, yy, String(v), { anchor: "end", size: 10, fill: "#667085" }); }
      for (v = Math.ceil(z[2] / sk) * sk; v < z[3]; v += sk) { var xx = X + (v - z[2]) / g.nk * g.W; segs.push(xx, Y - 5, xx, Y); p.text(xx, Y - 12, String(v), { anchor: "middle", size: 10, fill: "#667085" }); }
    }
    p.lines(segs, "#667085", 1, 1);
    p.text(x0 + 4, y0 + 8, tr("viewer.paint_axes"), { size: 10, fill: "#667085" });
    // colour bar
    var bx = X + g.W + 14, bar = document.createElement("canvas"), L = 64;
    bar.width = 1; bar.height = L;
    var bctx = bar.getContext("2d"), bimg = bctx.createImageData(1, L);
    for (k = 0; k < L; k++) { var c = U.viridis(1 - k / (L - 1)); bimg.data[4 * k] = c[0]; bimg.data[4 * k + 1] = c[1]; bimg.data[4 * k + 2] = c[2]; bimg.data[4 * k + 3] = 255; }
    bctx.putImageData(bimg, 0, 0);
    p.image(bar, bx, Y, 12, Math.min(g.H, 240));
    p.text(bx + 16, Y + 5, show(img.vmax, 3), { size: 10 });
    p.text(bx + 16, Y + Math.min(g.H, 240) - 5, s.mscale === "log" ? "≤1e-4" : "0", { size: 10 });
  };

  V.matrixSize = function () {
    var g = (this.matrixLast && this.matrixLast.g) || this.matrixGeometry();
    return [LABW + g.W + BAR + 12, TOPH + g.H + 24 + 22];
  };

  V.paintMatrix = function (p, w, h) {
    var m = this.matrixLast, s = this.state;
    if (!m) { p.rect(0, 0, w, h, "#fff"); return; }
    p.rect(0, 0, w, h, "#fff");
    p.text(8, 11, tr("viewer.paint_matrix", { model: this.data.model, layer: s.layer, head: s.focus, pooled: m.g.pooled ? tr("viewer.paint_pooled") : "" }), { size: 12, bold: true });
    this.paintMatrixAt(p, 0, 22, m.g, m.hm, m.img);
  };

  // The zoom region and the colour scale in the page's address (#…&zoom=q0,q1,k0,k1&scale=log).
  var hashOf = V.hashOf, applyHash = V.applyHash;
  V.hashOf = function () {
    var h = hashOf.call(this), s = this.state;
    if (s.view === "matrix" && s.zoom) h += "&zoom=" + s.zoom.join(",");
    if (s.view === "matrix" && s.mscale === "log") h += "&scale=log";
    return h;
  };
  V.applyHash = function () {
    applyHash.call(this);
    var s = this.state, n = this.texts[s.text].n, hash = this.opts.server || !window.location.hash ? "" : window.location.hash.slice(1);
    s.zoom = null; s.mscale = "linear";
    hash.split("&").forEach(function (kv) {
      var i = kv.indexOf("="); if (i < 0) return;
      var k = kv.slice(0, i), v = kv.slice(i + 1);
      if (k === "scale" && v === "log") s.mscale = "log";
      if (k === "zoom") {
        var z = v.split(",").map(Number);
        if (z.length === 4 && z.every(Number.isInteger) && z[0] >= 0 && z[0] < z[1] && z[1] <= n && z[2] >= 0 && z[2] < z[3] && z[3] <= n) s.zoom = z;
      }
    });
  };
})(window.attnscope);
