/* attnscope viewer: painting (one code path for the screen's canvas and for PNG / SVG export), the
 * colours, fonts, the head views' line rule and geometry, the DOM helper and the JSON requests of
 * the served pages. Adds to window.attnscope (viewer_core.js): CanvasPainter, SvgPainter, util.* */
(function (A) {
  "use strict";
  if (!A || A.CanvasPainter) return;  // a second copy in one notebook

  // ---------------------------------------------------------------------------------------------
  // painting: one code path for the screen (canvas) and for PNG / SVG export
  // ---------------------------------------------------------------------------------------------
  // The embedded CJK face comes first: its unicode-range is exactly the page's CJK characters, so
  // those are always drawn with its glyphs and everything else with the system font.
  var FONT = '"attnscope CJK", system-ui, "DejaVu Sans", sans-serif';
  // Resolves once the embedded glyphs of `text` are loaded (at once when the page has none): the
  // page paints only then, so no glyph is ever drawn with a fallback font first.
  function fontsReady(text) {
    if (!document.fonts || !document.fonts.load) return Promise.resolve();
    return document.fonts.load('13px "attnscope CJK"', text).then(function () {}, function () {});
  }
  // A token as shown: line breaks and tabs made visible (a "\n\n" token is not an empty box).
  function tokLabel(s) { s = String(s); return /^\s*$/.test(s) && s.length ? s.replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/ /g, "␣") : s.replace(/\n/g, "↵").replace(/\t/g, "⇥"); }
  function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;"); }

  function CanvasPainter(ctx) { this.ctx = ctx; }
  CanvasPainter.prototype.rect = function (x, y, w, h, fill) { this.ctx.fillStyle = fill; this.ctx.fillRect(x, y, w, h); };
  // One path of 1-px lines rasterises fast; a wide stroked path with thousands of crossing segments
  // takes seconds in software rendering, and stroking each wide line alone costs a stroke's setup
  // per line (200 ms for the 8 000 lines to a 2 048-token text's first token), so wider lines go
  // in paths of WIDE_BATCH segments (half that time; overlaps within a path are not darkened twice,
  // 0.3 % of the pixels of that picture differ).
  var WIDE_BATCH = 16;
  CanvasPainter.prototype.lines = function (segs, stroke, alpha, width) {
    if (!segs.length) return;
    var c = this.ctx, i, step = width <= 1 ? segs.length : 4 * WIDE_BATCH;
    c.save(); c.strokeStyle = stroke; c.globalAlpha = alpha; c.lineWidth = width;
    for (var s0 = 0; s0 < segs.length; s0 += step) {
      c.beginPath();
      for (i = s0; i < Math.min(segs.length, s0 + step); i += 4) { c.moveTo(segs[i], segs[i + 1]); c.lineTo(segs[i + 2], segs[i + 3]); }
      c.stroke();
    }
    c.restore();
  };
  CanvasPainter.prototype.polyline = function (pts, stroke, width) {
    var c = this.ctx; c.save(); c.strokeStyle = stroke; c.lineWidth = width; c.beginPath();
    for (var i = 0; i < pts.length; i += 2) { if (i) c.lineTo(pts[i], pts[i + 1]); else c.moveTo(pts[i], pts[i + 1]); }
    c.stroke(); c.restore();
  };
  CanvasPainter.prototype.circle = function (x, y, r, fill) {
    var c = this.ctx; c.fillStyle = fill; c.beginPath(); c.arc(x, y, r, 0, 2 * Math.PI); c.fill();
  };
  CanvasPainter.prototype.text = function (x, y, s, o) {
    o = o || {}; var c = this.ctx;
    c.font = (o.bold ? "bold " : "") + (o.size || 13) + "px " + FONT;
    c.fillStyle = o.fill || "#1d2330"; c.textBaseline = "middle";
    c.textAlign = o.anchor === "end" ? "right" : o.anchor === "middle" ? "center" : "left";
    c.fillText(s, x, y);
  };
  CanvasPainter.prototype.image = function (canvas, x, y, w, h) {
    this.ctx.imageSmoothingEnabled = false; this.ctx.drawImage(canvas, x, y, w, h);
  };

  function SvgPainter(w, h, fontCss) {
    this.w = w; this.h = h;
    this.parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + w + '" height="' + h + '" viewBox="0 0 ' + w + " " + h + '">',
      "<style>" + (fontCss || "") + "text{font-family:" + FONT.replace(/"/g, "'") + "}</style>",
      '<rect width="100%" height="100%" fill="#fff"/>'];
  }
  function r2(x) { return Math.round(x * 100) / 100; }
  SvgPainter.prototype.rect = function (x, y, w, h, fill) {
    this.parts.push('<rect x="' + r2(x) + '" y="' + r2(y) + '" width="' + r2(w) + '" height="' + r2(h) + '" fill="' + fill + '"/>');
  };
  SvgPainter.prototype.lines = function (segs, stroke, alpha, width) {
    if (!segs.length) return;
    var d = [];
    for (var i = 0; i < segs.length; i += 4) d.push("M" + r2(segs[i]) + " " + r2(segs[i + 1]) + "L" + r2(segs[i + 2]) + " " + r2(segs[i + 3]));
    this.parts.push('<path d="' + d.join("") + '" stroke="' + stroke + '" stroke-opacity="' + r2(alpha) + '" stroke-width="' + width + '" fill="none"/>');
  };
  SvgPainter.prototype.polyline = function (pts, stroke, width) {
    var p = [];
    for (var i = 0; i < pts.length; i += 2) p.push(r2(pts[i]) + "," + r2(pts[i + 1]));
    this.parts.push('<polyline points="' + p.join(" ") + '" stroke="' + stroke + '" stroke-width="' + width + '" fill="none"/>');
  };
  SvgPainter.prototype.circle = function (x, y, r, fill) {
    this.parts.push('<circle cx="' + r2(x) + '" cy="' + r2(y) + '" r="' + r + '" fill="' + fill + '"/>');
  };
  SvgPainter.prototype.text = function (x, y, s, o) {
    o = o || {};
    this.parts.push('<text x="' + r2(x) + '" y="' + r2(y) + '" font-size="' + (o.size || 13) + '" dominant-baseline="middle"' +
      (o.anchor ? ' text-anchor="' + o.anchor + '"' : "") + (o.bold ? ' font-weight="bold"' : "") +
      ' fill="' + (o.fill || "#1d2330") + '">' + esc(s) + "</text>");
  };
  SvgPainter.prototype.image = function (canvas, x, y, w, h) {
    this.parts.push('<image x="' + r2(x) + '" y="' + r2(y) + '" width="' + w + '" height="' + h +
      '" preserveAspectRatio="none" style="image-rendering:pixelated" href="' + canvas.toDataURL("image/png") + '"/>');
  };
  SvgPainter.prototype.toString = function () { return this.parts.join("\n") + "\n</svg>\n"; };

  // viridis, 9 stops
  var VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142], [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
  function viridis(t) {
    t = Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1);
    var i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i, a = VIRIDIS[i], b = VIRIDIS[i + 1];
    return [a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])];
  }
  var HEAD_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"];
  function headColor(h) { return HEAD_COLORS[h % HEAD_COLORS.length]; }

  // The current view as a PNG Blob (2× pixels, at most 16 000 a side) or an SVG Blob, painted by
  // paint(painter) on a w × h canvas: the one export path of every viewer.
  function paintBlob(kind, w, h, fontCss, paint) {
    if (kind === "svg") {
      var sp = new SvgPainter(w, h, fontCss);
      paint(sp);
      return Promise.resolve(new Blob([sp.toString()], { type: "image/svg+xml" }));
    }
    var scale = Math.min(2, 16000 / Math.max(w, h)), c = document.createElement("canvas");
    c.width = Math.round(w * scale); c.height = Math.round(h * scale);
    var ctx = c.getContext("2d"); ctx.scale(scale, scale);
    paint(new CanvasPainter(ctx));
    return new Promise(function (res) { c.toBlob(res, "image/png"); });
  }

  // POST `body` as JSON; resolves to the answer's JSON, or rejects with the server's one sentence
  // (its "detail") or a sentence saying that the server cannot be reached.
  function postJson(url, body) {
    return fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) }).then(function (r) {
      return r.json().catch(function () { throw new Error(A.tr("viewer.server_status", { status: r.status, text: r.statusText })); }).then(function (j) {
        if (!r.ok) throw new Error(typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail));
        return j;
      });
    }, function () { throw new Error(A.tr("viewer.no_server")); });
  }

  // The head views' line rule: the smallest b/1000 that leaves at most `budget` of the `total`
  // weights counted in `bins` (steps of 0.001; bin 1000: weights of 1).
  function lineThreshold(bins, total, budget) {
    var kept = total, b = 0;
    while (kept > budget && b < 1000) { kept -= bins[b]; b++; }
    return b / 1000;
  }
  // One head's lines, batched by weight into 16 buckets (bucketOf), each stroked at its opacity.
  function bucketOf(w) { return Math.min(15, Math.floor(w * 16)); }
  function paintBuckets(p, buckets, colour, nHeads) {
    for (var b = 0; b < 16; b++) {
      var a = (b + 0.5) / 16;
      p.lines(buckets[b], colour, Math.min(1, a * (nHeads > 1 ? 0.9 : 1)), a < 0.4 ? 1 : 1 + 2 * a);
    }
  }

  function el(tag, attrs, parent) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else if (k === "style") e.style.cssText = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    if (parent) parent.appendChild(e);
    return e;
  }

  // ---------------------------------------------------------------------------------------------
  // geometry shared by the views
  // ---------------------------------------------------------------------------------------------
  var ROW = 20;
  // The head view's geometry: token columns as wide as the longest token (within limits), and the
  // lines between them as wide as the window allows, so that the view uses the room it has.
  var WIDEST = typeof WeakMap === "function" ? new WeakMap() : null;  // tokens -> their widest, measured once
  function headGeometry(tokens, avail) {
    var widest = WIDEST && WIDEST.get(tokens);
    if (widest === undefined || widest === null) {
      var c = document.createElement("canvas").getContext("2d");
      c.font = "13px " + FONT; widest = 0;
      for (var i = 0; i < tokens.length; i++) widest = Math.max(widest, c.measureText(tokens[i]).width);
      if (WIDEST) WIDEST.set(tokens, widest);
    }
    var tokW = Math.round(Math.min(220, Math.max(70, widest + 20)));
    // the lines take the width the page gives (up to 1200 px: at 1,400 px the view used half of it with 640, #23)
    var lineW = Math.round(Math.min(1200, Math.max(240, (avail || 0) - 2 * tokW - 24)));
    return { tokW: tokW, lineW: lineW };
  }
  // The head view draws at most this many lines (the server's attnscope.viewer.held.LINE_BUDGET).

  A.CanvasPainter = CanvasPainter; A.SvgPainter = SvgPainter;
  var add = { el: el, esc: esc, viridis: viridis, headColor: headColor, FONT: FONT, ROW: ROW, tokLabel: tokLabel,
    fontsReady: fontsReady, headGeometry: headGeometry, paintBlob: paintBlob, postJson: postJson,
    lineThreshold: lineThreshold, bucketOf: bucketOf, paintBuckets: paintBuckets };
  for (var k in add) A.util[k] = add[k];
})(window.attnscope);
