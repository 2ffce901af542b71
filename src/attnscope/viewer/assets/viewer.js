/* attnscope viewer: attention you can look at, offline, in any browser.
 *
 * No dependencies and no network. The page data (see attnscope/viewer/data.py) holds, per text,
 * q (every query head), k and v (every key/value head) of every layer as float32; attention is
 * recomputed here in float64:
 *   scaled = factor · q·k   (factor = 1/√d_k, or the model's),  weights = softmax(scaled) by row,
 * with query head h reading k/v head ⌊h / group⌋, later keys hidden in causal models and keys
 * `window` or more positions back hidden on sliding-window layers. For rotary models q and k are
 * stored before the rotation and turned here: pair (i, i + d/2) of position p by p·θ_i.
 * Numbers are displayed exactly as `attnscope explain` displays them (see show()).
 *
 *   attnscope.mount(element, data, options) -> viewer   (data may be null with options.server)
 */
(function () {
  "use strict";
  if (window.attnscope && window.attnscope.mount) return;  // a second copy in one notebook

  // ---------------------------------------------------------------------------------------------
  // numbers: the same display rule as attnscope.explain.numbers.show
  // ---------------------------------------------------------------------------------------------
  var BIG = 1e6;

  // x's shortest round-trip decimal form (the digits of Python's repr) -> {neg, digits, point}:
  // value = ±0.d1d2d3… × 10^point.
  function decimalParts(x) {
    var s = String(Math.abs(x)), e = 0, i = s.indexOf("e");
    if (i >= 0) { e = parseInt(s.slice(i + 1), 10); s = s.slice(0, i); }
    var dot = s.indexOf("."), intPart = dot < 0 ? s : s.slice(0, dot), frac = dot < 0 ? "" : s.slice(dot + 1);
    var digits = intPart + frac, point = intPart.length + e;
    var lead = 0;
    while (lead < digits.length - 1 && digits[lead] === "0") { lead++; point--; }
    digits = digits.slice(lead);
    return { neg: x < 0 || (x === 0 && 1 / x < 0), digits: digits, point: point };
  }

  // Round half-up (away from zero on a tie, like Decimal ROUND_HALF_UP) at `dec` decimals and write
  // with exactly `dec` decimals, as Python's f"{Decimal.quantize(...):f}".
  function roundHalfUp(x, dec) {
    var p = decimalParts(x), digits = p.digits, point = p.point;
    if (digits === "0") return (p.neg ? "-" : "") + (dec > 0 ? "0." + "0".repeat(dec) : "0");
    var keep = point + dec;  // digits at places 10^(point-1) .. 10^-dec; < 0: all of x is below
    var kept = [];
    for (var i = 0; i < keep; i++) kept.push(i < digits.length ? +digits[i] : 0);
    var next = keep >= 0 && keep < digits.length ? +digits[keep] : 0;
    if (next >= 5) {  // carry
      var j = kept.length - 1;
      while (j >= 0) { if (kept[j] === 9) { kept[j] = 0; j--; } else { kept[j]++; break; } }
      if (j < 0) { kept.unshift(1); point++; }
    }
    // kept holds the digits from 10^(point-1) down to 10^-dec
    var nInt = kept.length - dec, intStr, fracStr;
    if (nInt <= 0) { intStr = "0"; fracStr = "0".repeat(-nInt) + kept.join(""); }
    else { intStr = kept.slice(0, nInt).join(""); fracStr = kept.slice(nInt).join(""); }
    intStr = intStr.replace(/^0+(?=\d)/, "");
    if (intStr === "") intStr = "0";
    var out = dec > 0 ? intStr + "." + fracStr : intStr;
    return (p.neg ? "-" : "") + out;
  }

  function clean(s) {
    if (s[0] === "-" && /^[0.]+$/.test(s.slice(1))) return s.slice(1);  // no "-0.0000"
    return s;
  }

  function isInt(x) { return isFinite(x) && Math.floor(x) === x && Math.abs(x) < BIG; }

  function pow10(e) { return parseFloat("1e" + e); }  // correctly rounded, as Python's 10.0 ** e

  // The displayed form of x with `dec` decimals (integer-valued x without decimals; non-zero values
  // that would round to 0, and values >= 1e6, as mantissa e exponent), like explain's fmt(x, dec).
  function show(x, dec, asInt) {
    if (Number.isNaN(x)) return "NaN";
    if (x === Infinity) return "\u221e";
    if (x === -Infinity) return "\u2212\u221e";
    if (asInt === undefined || asInt === null) asInt = isInt(x);
    if (asInt && isInt(x)) return String(Math.trunc(x) === 0 ? 0 : Math.trunc(x));
    var tiny = x !== 0 && Math.abs(x) < 0.5 * pow10(-dec);
    if (Math.abs(x) >= BIG || tiny) {
      var e = Math.floor(Math.log10(Math.abs(x)));
      var mant = roundHalfUp(x / pow10(e), dec);
      if (Math.abs(parseFloat(mant)) >= 10) { e += 1; mant = roundHalfUp(x / pow10(e), dec); }
      return clean(mant) + "e" + e;
    }
    return clean(roundHalfUp(x, dec));
  }

  // ---------------------------------------------------------------------------------------------
  // data decoding
  // ---------------------------------------------------------------------------------------------
  function b64bytes(s) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(s);
    var bin = atob(s), n = bin.length, out = new Uint8Array(n);
    for (var i = 0; i < n; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function inflate(bytes) {
    if (typeof DecompressionStream === "undefined")
      return Promise.reject(new Error("this browser lacks DecompressionStream (needs Chromium 80+, Firefox 113+ or Safari 16.4+)"));
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }

  function decodeArray(d) {
    return inflate(b64bytes(d.b64)).then(function (raw) {
      if (d.codec === "shuffle4+zlib") {
        var n = raw.length / 4, out = new Uint8Array(raw.length);
        for (var b = 0; b < 4; b++) { var off = b * n; for (var i = 0; i < n; i++) out[4 * i + b] = raw[off + i]; }
        return new Float32Array(out.buffer);
      }
      return raw;
    });
  }

  // ---------------------------------------------------------------------------------------------
  // the model of one text: attention recomputed from q, k, v
  // ---------------------------------------------------------------------------------------------
  function Text(entry, cfg, data) {
    this.entry = entry; this.cfg = cfg; this.tokens = entry.tokens; this.n = entry.tokens.length;
    this.d = cfg.d_head; this.H = cfg.n_heads; this.L = cfg.n_layers; this.limit = data.exp_show_limit;
    this.Hkv = cfg.n_kv_heads || cfg.n_heads; this.group = this.H / this.Hkv;
    this.cache = new Map(); this.ops = new Map();
  }
  Text.prototype.load = function () {
    var self = this;
    return Promise.all([decodeArray(this.entry.q), decodeArray(this.entry.k), decodeArray(this.entry.v),
      decodeArray(this.entry.thumbs)]).then(function (r) {
      self.arrays = [r[0], r[1], r[2]]; self.thumbs = r[3]; self.T = self.entry.thumbs.shape[2];
    });
  };
  // The key/value head that query head h reads.
  Text.prototype.kvHead = function (head) { return Math.floor(head / this.group); };
  // q (kind 0) of query head `head`, or k (1) / v (2) of the k/v head it reads, as stored: a
  // Float32Array view (n × d_head); for rotary models q and k are the vectors before the rotation.
  Text.prototype.vec = function (layer, kind, head) {
    var size = this.n * this.d, h = kind === 0 ? head : this.kvHead(head), per = kind === 0 ? this.H : this.Hkv;
    var off = (layer * per + h) * size;
    return this.arrays[kind].subarray(off, off + size);
  };
  // The dot product's operands in float64 (n × d): q or k turned at their positions on rotary
  // layers (pair (i, i + d/2) of row p by φ = p·θ_i: (a, b) → (a cos φ − b sin φ, a sin φ + b cos φ)).
  Text.prototype.operand = function (layer, kind, head) {
    var rope = this.cfg.rope ? this.cfg.rope[layer] : null, h = kind === 0 ? head : this.kvHead(head);
    var key = (layer * 2 + kind) * this.H + h, hit = this.ops.get(key);
    if (hit) return hit;
    var x = this.vec(layer, kind, head), n = this.n, d = this.d, out = Float64Array.from(x);
    if (rope) {
      var half = d / 2, inv = rope.inv_freq;
      for (var p = 0; p < n; p++) for (var i = 0; i < half; i++) {
        var phi = p * inv[i], c = Math.cos(phi), s = Math.sin(phi), a = x[p * d + i], b = x[p * d + i + half];
        out[p * d + i] = a * c - b * s; out[p * d + i + half] = a * s + b * c;
      }
    }
    this.ops.set(key, out);
    if (this.ops.size > 4 * this.H) this.ops.delete(this.ops.keys().next().value);
    return out;
  };
  // Why query i cannot see key j on `layer`: 0 it can, 1 the key comes later (causal), 2 it is
  // `window` or more positions back (sliding window).
  Text.prototype.hidden = function (layer, i, j) {
    if (this.cfg.causal && j > i) return 1;
    var w = this.cfg.windows ? this.cfg.windows[layer] : null;
    return w !== null && w !== undefined && i - j >= w ? 2 : 0;
  };
  Text.prototype.window = function (layer) { var w = this.cfg.windows ? this.cfg.windows[layer] : null; return w === undefined ? null : w; };
  // float64 scaled scores of one row (query i), -Infinity at masked keys
  Text.prototype.scaledRow = function (layer, head, i) {
    var q = this.operand(layer, 0, head), k = this.operand(layer, 1, head), n = this.n, d = this.d;
    var f = this.cfg.factor, raw = new Float64Array(n), scaled = new Float64Array(n);
    for (var j = 0; j < n; j++) {
      var s = 0;
      for (var t = 0; t < d; t++) s += q[i * d + t] * k[j * d + t];
      raw[j] = s;
      scaled[j] = this.hidden(layer, i, j) ? -Infinity : s * f;
    }
    return { raw: raw, scaled: scaled };
  };
  function softmaxInto(scaled, out) {
    var m = -Infinity, n = scaled.length, j;
    for (j = 0; j < n; j++) if (scaled[j] > m) m = scaled[j];
    var sum = 0;
    for (j = 0; j < n; j++) { out[j] = Math.exp(scaled[j] - m); sum += out[j]; }
    for (j = 0; j < n; j++) out[j] /= sum;
    return m;
  }
  // The first article's walk-through of one row: raw, scaled, exp, Σ, weights, weighted sum.
  Text.prototype.steps = function (layer, head, i) {
    var r = this.scaledRow(layer, head, i), n = this.n, d = this.d;
    var w = new Float64Array(n), m = softmaxInto(r.scaled, w);
    var shift = m > this.limit ? m : 0, e = new Float64Array(n), sum = 0, j;
    for (j = 0; j < n; j++) { e[j] = Math.exp(r.scaled[j] - shift); sum += e[j]; }
    var v = this.vec(layer, 2, head), out = new Float64Array(d);
    for (j = 0; j < n; j++) for (var t = 0; t < d; t++) out[t] += w[j] * v[j * d + t];
    return { raw: r.raw, scaled: r.scaled, shift: shift, exp: e, sum: sum, weights: w, out: out, max: m };
  };
  // All weights of one head (n × n, Float32Array for drawing), cached.
  Text.prototype.weights = function (layer, head) {
    var key = layer * this.H + head, hit = this.cache.get(key);
    if (hit) { this.cache.delete(key); this.cache.set(key, hit); return hit; }
    var out = new Float32Array(this.n * this.n);
    headWeights(this.operand(layer, 0, head), this.operand(layer, 1, head), this.n, this.d, this.cfg.factor,
      this.cfg.causal, this.window(layer), out);
    return this.keepWeights(layer, head, out);
  };
  Text.prototype.hasWeights = function (layer, head) { return this.cache.has(layer * this.H + head); };
  Text.prototype.keepWeights = function (layer, head, out, summary) {
    var key = layer * this.H + head;
    this.cache.set(key, out);
    if (!this.sums) this.sums = new Map();
    if (summary) this.sums.set(key, summary); else this.sums.delete(key);
    var budget = Math.max(8, Math.floor(96e6 / (4 * this.n * this.n)));  // at most ~96 MB of cached heads
    while (this.cache.size > budget) { var old = this.cache.keys().next().value; this.cache.delete(old); this.sums.delete(old); }
    return out;
  };
  // What the head view reads of one head's weights (headSummary), kept beside them.
  Text.prototype.summary = function (layer, head) {
    var key = layer * this.H + head, W = this.weights(layer, head), sm = this.sums.get(key);
    if (!sm) { sm = headSummary(W, this.n, LINE_BUDGET); this.sums.set(key, sm); }
    return sm;
  };
  // The head view's digest of one head's weights W (n × n): ``bins``, the weights > 0 counted in
  // steps of 0.001 (bin 1000: weights of 1), and ``idx``, the positions i·n + j of the weights at or
  // above the head's own threshold for `budget` lines — every pair a selection of heads draws is
  // among them, since its threshold is at least each head's own. Self-contained (Web Workers).
  function headSummary(W, n, budget) {
    var bins = new Float64Array(1001), total = 0, i, b = 0;
    for (i = 0; i < n * n; i++) if (W[i] > 0) { bins[Math.min(1000, Math.floor(W[i] * 1000))]++; total++; }
    while (total > budget && b < 1000) { total -= bins[b]; b++; }
    var minw = b / 1000, idx = [];
    for (i = 0; i < n * n; i++) if (W[i] > 0 && W[i] >= minw) idx.push(i);
    return { bins: bins, idx: Int32Array.from(idx) };
  }

  // softmax(f · q·kᵀ) of one head into out (n × n): the same arithmetic as scaledRow + softmaxInto,
  // q and k (n × d, float64) as operand() gives them; four keys at a time, each score still summed
  // over t = 0 … d − 1 in order (the same bits as scaledRow), the four independent sums keeping the
  // CPU's adders busy. Self-contained: viewer_workers.js runs it in Web Workers too.
  function headWeights(q, k, n, d, f, causal, win, out) {
    var row = new Float64Array(n);
    for (var i = 0; i < n; i++) {
      var qi = i * d, m = -Infinity, j, t, sum = 0, s;
      for (j = 0; j + 3 < n; j += 4) {
        var k0 = j * d, k1 = k0 + d, k2 = k1 + d, k3 = k2 + d, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (t = 0; t < d; t++) {
          var qt = q[qi + t];
          s0 += qt * k[k0 + t]; s1 += qt * k[k1 + t]; s2 += qt * k[k2 + t]; s3 += qt * k[k3 + t];
        }
        row[j] = s0; row[j + 1] = s1; row[j + 2] = s2; row[j + 3] = s3;
      }
      for (; j < n; j++) {
        s = 0;
        for (t = 0; t < d; t++) s += q[qi + t] * k[j * d + t];
        row[j] = s;
      }
      for (j = 0; j < n; j++) {
        s = (causal && j > i) || (win !== null && i - j >= win) ? -Infinity : row[j] * f;
        row[j] = s; if (s > m) m = s;
      }
      for (j = 0; j < n; j++) { row[j] = Math.exp(row[j] - m); sum += row[j]; }
      for (j = 0; j < n; j++) out[i * n + j] = row[j] / sum;
    }
    return out;
  }

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
  // takes seconds in software rendering, so wider lines are stroked one by one.
  CanvasPainter.prototype.lines = function (segs, stroke, alpha, width) {
    if (!segs.length) return;
    var c = this.ctx, i; c.save(); c.strokeStyle = stroke; c.globalAlpha = alpha; c.lineWidth = width;
    if (width <= 1) {
      c.beginPath();
      for (i = 0; i < segs.length; i += 4) { c.moveTo(segs[i], segs[i + 1]); c.lineTo(segs[i + 2], segs[i + 3]); }
      c.stroke();
    } else {
      for (i = 0; i < segs.length; i += 4) { c.beginPath(); c.moveTo(segs[i], segs[i + 1]); c.lineTo(segs[i + 2], segs[i + 3]); c.stroke(); }
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
  // the viewer
  // ---------------------------------------------------------------------------------------------
  var ROW = 20;
  // The head view's geometry: token columns as wide as the longest token (within limits), and the
  // lines between them as wide as the window allows, so that the view uses the room it has.
  function headGeometry(tokens, avail) {
    var c = document.createElement("canvas").getContext("2d"), widest = 0;
    c.font = "13px " + FONT;
    for (var i = 0; i < tokens.length; i++) widest = Math.max(widest, c.measureText(tokens[i]).width);
    var tokW = Math.round(Math.min(220, Math.max(70, widest + 20)));
    var lineW = Math.round(Math.min(640, Math.max(240, (avail || 0) - 2 * tokW - 24)));
    return { tokW: tokW, lineW: lineW };
  }

  function Viewer(root, data, opts) {
    this.root = root; this.opts = opts || {}; this.fontCss = this.opts.fontCss || "";
    root.classList.add("as-root");
    root.innerHTML = "";
    root.__attnscope = this;
    this.tip = el("div", { cls: "as-tip" }, root);
    if (this.opts.server) this.buildForm();
    this.main = el("div", {}, root);
    this.ready = data ? this.setData(data) : Promise.resolve(this);
    var self = this, timer = null;
    window.addEventListener("resize", function () {  // the head view follows the window's width
      clearTimeout(timer);
      timer = setTimeout(function () {
        if (self.state && self.state.view === "head" && self.headGeo &&
            headGeometry(self.text().tokens, self.body.clientWidth).lineW !== self.headGeo.lineW) self.render();
      }, 150);
    });
  }

  // The served page's top: what this is, examples to click, the form, and where the API is.
  var EXAMPLES = [["The bank of the river was muddy.", "I deposited money at the bank.", "bank"],
    ["The cat sat on the mat because it was tired.", "", ""], ["我喜欢人工智能", "", ""]];
  Viewer.prototype.buildForm = function () {
    var self = this, srv = this.opts.server, intro = el("div", { cls: "as-intro", "data-testid": "intro" }, this.root);
    el("h1", { text: "attnscope" + (srv.model ? " · " + srv.model : "") }, intro);
    el("p", { text: "Type a text to see how every attention head of the model reads it: the head view draws each " +
      "token's attention as lines, the step view works out one row (score, scaling, exp, softmax, weighted sum) " +
      "with every number, and with a second text the context view shows how a shared word's vector differs." }, intro);
    var ex = el("p", { cls: "as-examples", text: "Try: " }, intro);
    EXAMPLES.forEach(function (e, i) {
      var a = el("button", { type: "button", cls: "as-link", "data-testid": "example-" + i,
        text: e[0] + (e[1] ? "  vs  " + e[1] : "") }, ex);
      a.addEventListener("click", function () {
        self.inText.value = e[0]; self.inCompare.value = e[1]; self.inToken.value = e[2]; self.submit();
      });
    });
    var api = el("p", { cls: "as-note", text: "The same numbers as JSON: " }, intro);
    el("a", { href: "docs", text: "API documentation" }, api);
    api.appendChild(document.createTextNode(" (works offline)."));
    var f = el("form", { cls: "as-form", "data-testid": "form" }, this.root);
    var l1 = el("label", { text: "text" + (srv.maxChars ? " (up to " + srv.maxChars + " characters)" : "") }, f);
    this.inText = el("textarea", { name: "text", "data-testid": "text-input", placeholder: "Type a sentence, e.g. The bank of the river." }, l1);
    if (srv.maxChars) this.inText.setAttribute("maxlength", String(srv.maxChars));
    this.inText.addEventListener("keydown", function (ev) {  // Enter shows, Shift+Enter breaks the line
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); self.submit(); }
    });
    var l2 = el("label", { text: "compare with (optional)" }, f);
    this.inCompare = el("input", { name: "compare", "data-testid": "compare-input", placeholder: "I deposited money at the bank." }, l2);
    var l3 = el("label", { text: "shared token (optional)" }, f);
    this.inToken = el("input", { name: "token", "data-testid": "token-input", style: "width:120px" }, l3);
    el("button", { type: "submit", text: "Show attention", "data-testid": "submit" }, f);
    this.formMsg = el("div", { "data-testid": "form-message" }, this.root);
    f.addEventListener("submit", function (ev) { ev.preventDefault(); self.submit(); });
  };

  Viewer.prototype.submit = function () {
    var self = this, body = { text: this.inText.value };
    if (this.inCompare.value.trim()) body.compare = this.inCompare.value;
    if (this.inToken.value.trim()) body.token = this.inToken.value.trim();
    this.formMsg.className = "as-note"; this.formMsg.textContent = "computing…";
    this.root.removeAttribute("data-ready");  // set again once the answer is drawn
    var seq = this.seq = (this.seq || 0) + 1;  // only the latest answer is shown
    return fetch(this.opts.server.endpoint || "api/view", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { throw new Error("the server answered " + r.status + " " + r.statusText); }).then(function (j) {
        if (!r.ok) throw new Error(typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail));
        return j;
      });
    }, function () { throw new Error("cannot reach the server; is attnscope serve still running?"); }).then(function (data) {
      if (seq !== self.seq) return;
      self.formMsg.className = ""; self.formMsg.textContent = "";
      if (data.font_css !== undefined) { self.setFontCss(data.font_css); delete data.font_css; }
      return self.setData(data);
    }).catch(function (e) {
      if (seq !== self.seq) return;
      self.clear();  // the old result must not stand under a message about the new text
      self.formMsg.className = "as-err"; self.formMsg.textContent = String(e.message || e);
    });
  };

  Viewer.prototype.clear = function () {
    this.main.innerHTML = ""; this.data = null; this.state = null; this.root.removeAttribute("data-ready");
  };

  Viewer.prototype.setFontCss = function (css) {
    this.fontCss = css || "";
    if (!this.fontStyle) this.fontStyle = el("style", {}, document.head || this.root);
    this.fontStyle.textContent = this.fontCss;
  };

  Viewer.prototype.setData = function (data) {
    var self = this;
    if (!data || data.format !== "attnscope.view") return Promise.reject(new Error("not attnscope view data"));
    this.data = data; this.cfg = data.config; this._minw = null;
    // a text the server holds (attnscope serve, long texts) is read from it on demand (viewer_remote.js)
    this.texts = data.texts.map(function (t) {
      return t.remote && window.attnscope.RemoteText ? new window.attnscope.RemoteText(t, data.config, data, self) : new Text(t, data.config, data);
    });
    this.root.removeAttribute("data-ready");
    var t0 = performance.now();
    this.timing = { start: t0 };
    var loads = this.texts.map(function (t) { return t.load(); });
    loads.push(fontsReady(this.allText()));
    return Promise.all(loads).then(function () {
      self.timing.decoded = performance.now();
      self.decodeMs = self.timing.decoded - t0;
      self.maxDec = data.max_decimals === undefined ? 8 : data.max_decimals;
      self.state = { view: data.generation ? "generation" : "head", text: 0, layer: 0, heads: self.allHeads(), focus: 0, query: null, hover: null,
        key: null, step: data.generation ? data.generation.steps.length - 1 : 0, genHead: -1,
        dec: Math.min(data.decimals, self.maxDec) };
      self.applyHash();
      self.build();
      return self.render();
    }).then(function () {
      self.timing.rendered = performance.now();
      return new Promise(function (res) {
        requestAnimationFrame(function () {
          self.firstRender = self.timing.frame = performance.now();
          self.root.setAttribute("data-ready", "1");
          res(self);
        });
      });
    }).catch(function (e) {
      self.main.innerHTML = "";
      el("div", { cls: "as-err", text: "attnscope viewer: " + (e.message || e) }, self.main);
      throw e;
    });
  };

  // A link can open a given state: page.html#view=step&text=0&layer=2&head=4&query=3&dec=6
  // (also heads=0,3,9 for the head view's toggles). Values out of range are ignored. The page
  // keeps its address in step with what it shows, so the address bar is always such a link.
  var VIEWS = [["head", "Head view"], ["model", "Model view"], ["matrix", "Matrix view"], ["step", "Step view"], ["context", "Context view"]];
  var VIEW_ALIASES = { head: "head", model: "model", matrix: "matrix", step: "step", context: "context", compare: "context", generation: "generation" };
  Viewer.prototype.hashOf = function () {
    var s = this.state, parts = ["view=" + s.view];
    if (this.texts.length > 1) parts.push("text=" + s.text);
    if (s.view !== "context" && s.view !== "model") parts.push("layer=" + s.layer);
    if (s.view === "step" || s.view === "matrix") parts.push("head=" + s.focus);
    if (s.view === "head" && s.heads.length !== this.cfg.n_heads) parts.push("heads=" + s.heads.join(","));
    if (s.query !== null && s.view !== "context" && s.view !== "model" && s.view !== "generation") parts.push("query=" + s.query);
    if (s.view === "step" && s.key !== null) parts.push("key=" + s.key);
    if (s.view === "generation") parts.push("step=" + s.step, "ghead=" + s.genHead);
    if (s.dec !== this.data.decimals) parts.push("dec=" + s.dec);
    return "#" + parts.join("&");
  };
  Viewer.prototype.writeHash = function () {
    if (this.opts.server || this.opts.noHash) return;
    try { if (window.location.hash !== this.hashOf()) history.replaceState(null, "", this.hashOf()); } catch (e) { /* sandboxed iframe */ }
  };
  Viewer.prototype.applyHash = function () {
    var hash = this.opts.server || !window.location.hash ? "" : window.location.hash.slice(1), s = this.state, self = this;
    var int = function (v, n) { var x = Number(v); return Number.isInteger(x) && x >= 0 && x < n ? x : null; };
    hash.split("&").forEach(function (kv) {
      var i = kv.indexOf("="); if (i < 0) return;
      var k = kv.slice(0, i), v = decodeURIComponent(kv.slice(i + 1)), x;
      if (k === "view" && VIEW_ALIASES[v]) s.view = VIEW_ALIASES[v];
      else if (k === "text" && (x = int(v, self.texts.length)) !== null) s.text = x;
      else if (k === "layer" && (x = int(v, self.cfg.n_layers)) !== null) s.layer = x;
      else if (k === "head" && (x = int(v, self.cfg.n_heads)) !== null) s.focus = x;
      else if (k === "dec" && (x = int(v, self.maxDec + 1)) !== null) s.dec = x;
      else if (k === "heads") {
        var hs = v.split(",").map(function (h) { return int(h, self.cfg.n_heads); }).filter(function (h) { return h !== null; });
        if (hs.length) s.heads = hs.sort(function (a, b) { return a - b; });
      }
    });
    hash.split("&").forEach(function (kv) {  // after text=, whose length bounds the query
      var i = kv.indexOf("="), x;
      if (i > 0 && kv.slice(0, i) === "query" && (x = int(kv.slice(i + 1), self.texts[s.text].n)) !== null) s.query = x;
      if (i > 0 && kv.slice(0, i) === "key" && (x = int(kv.slice(i + 1), self.texts[s.text].n)) !== null) s.key = x;
      if (i > 0 && kv.slice(0, i) === "step" && self.data.generation && (x = int(kv.slice(i + 1), self.data.generation.steps.length)) !== null) s.step = x;
      if (i > 0 && kv.slice(0, i) === "ghead" && (x = Number(kv.slice(i + 1))) >= -1 && x < self.cfg.n_heads && Number.isInteger(x)) s.genHead = x;
    });
  };

  // Every string the page shows from its data (as attnscope.viewer.data.all_text).
  Viewer.prototype.allText = function () {
    var d = this.data, parts = [d.model || ""];
    d.texts.forEach(function (t) { parts.push(t.tokens.join(""), t.text || ""); });
    if (d.compare) parts.push(d.compare.tokens_a.join(""), d.compare.tokens_b.join(""));
    return parts.join("");
  };

  Viewer.prototype.allHeads = function () { var s = []; for (var h = 0; h < this.cfg.n_heads; h++) s.push(h); return s; };
  Viewer.prototype.text = function () { return this.texts[this.state.text]; };

  Viewer.prototype.build = function () {
    var self = this, d = this.data, cfg = this.cfg;
    this.main.innerHTML = "";
    var top = el("div", { cls: "as-top" }, this.main);
    el("span", { cls: "as-title", text: d.model + " · " + cfg.n_layers + " layers × " + cfg.n_heads + " heads" }, top);
    var bar = el("div", { cls: "as-bar" }, this.main);
    if (this.texts.length > 1) {
      var lt = el("label", { text: "text " }, top);
      this.selText = el("select", { "data-testid": "text-select" }, lt);
      this.texts.forEach(function (t, i) {
        var label = (t.entry.text || t.tokens.join(" ")); if (label.length > 60) label = label.slice(0, 59) + "…";
        el("option", { value: i, text: (i + 1) + ": " + label }, self.selText);
      });
      this.selText.addEventListener("change", function () { self.set({ text: +self.selText.value, query: null }); });
    }
    var tabs = el("div", { cls: "as-tabs" }, bar);
    this.tabs = {};
    (d.generation ? [["generation", "Generation view"]] : []).concat(VIEWS).forEach(function (v) {
      var b = el("button", { type: "button", text: v[1], "data-testid": "tab-" + v[0] }, tabs);
      b.addEventListener("click", function () { self.set({ view: v[0] }); });
      self.tabs[v[0]] = b;
    });
    var ll = this.layerLabel = el("label", { text: "layer " }, bar);
    this.selLayer = el("select", { "data-testid": "layer-select" }, ll);
    for (var l = 0; l < cfg.n_layers; l++) el("option", { value: l, text: String(l) }, this.selLayer);
    this.selLayer.addEventListener("change", function () { self.set({ layer: +self.selLayer.value }); });
    var ld = el("label", { text: "decimals " }, bar);
    this.selDec = el("select", { "data-testid": "decimals-select" }, ld);
    for (var k = 0; k <= this.maxDec; k++) el("option", { value: k, text: String(k) }, this.selDec);
    this.selDec.addEventListener("change", function () { self.set({ dec: +self.selDec.value }); });
    var ex = el("span", { cls: "as-export" }, bar);
    el("button", { type: "button", text: "Export PNG", "data-testid": "export-png" }, ex)
      .addEventListener("click", function () { self.exportView("png"); });
    el("button", { type: "button", text: "Export SVG", "data-testid": "export-svg" }, ex)
      .addEventListener("click", function () { self.exportView("svg"); });

    this.headBar = el("div", { cls: "as-heads", "data-testid": "heads" }, this.main);
    el("span", { text: "heads ", style: "color:var(--muted);font-size:13px" }, this.headBar);
    this.headBtns = [];
    var Hkv = cfg.n_kv_heads || cfg.n_heads, group = cfg.n_heads / Hkv;
    for (var h = 0; h < cfg.n_heads; h++) (function (h) {
      var g = Math.floor(h / group), shared = Hkv < cfg.n_heads;
      var b = el("button", { type: "button", cls: "as-hbtn" + (shared && h % group === 0 && h ? " as-gap" : ""), text: String(h),
        title: "query head " + h + (shared ? " · reads k/v head " + g + " (with query heads " + (g * group) + "–" + (g * group + group - 1) + ")" : "") +
          " (click: toggle, double-click: only this head)",
        "data-testid": "head-" + h, "data-kv": g, style: "--c:" + headColor(h) }, self.headBar);
      b.addEventListener("click", function () {
        var s = self.state.heads.slice(), i = s.indexOf(h);
        if (i >= 0) s.splice(i, 1); else { s.push(h); s.sort(function (a, b) { return a - b; }); }
        self.set({ heads: s, focus: s.indexOf(self.state.focus) >= 0 || !s.length ? self.state.focus : s[0] });
      });
      b.addEventListener("dblclick", function () { self.set({ heads: [h], focus: h }); });
      self.headBtns.push(b);
    })(h);
    if (Hkv < cfg.n_heads) el("span", { cls: "as-kvnote", "data-testid": "kv-note", text: (Hkv === 1 ? "multi-query: all " + cfg.n_heads +
      " query heads read one k/v head" : "grouped-query: " + cfg.n_heads + " query heads read " + Hkv + " k/v heads, " + group +
      " each (" + this.kvGroupsText() + ")") }, this.headBar);
    el("button", { type: "button", cls: "as-small", text: "all", "data-testid": "heads-all" }, this.headBar)
      .addEventListener("click", function () { self.set({ heads: self.allHeads() }); });
    el("button", { type: "button", cls: "as-small", text: "none", "data-testid": "heads-none" }, this.headBar)
      .addEventListener("click", function () { self.set({ heads: [] }); });
    this.body = el("div", { cls: "as-body" }, this.main);
  };

  // "k/v 0: q 0–2 · k/v 1: q 3–5 · …"
  Viewer.prototype.kvGroupsText = function () {
    var cfg = this.cfg, Hkv = cfg.n_kv_heads || cfg.n_heads, group = cfg.n_heads / Hkv, parts = [];
    for (var g = 0; g < Hkv; g++) parts.push("k/v " + g + ": q " + (g * group) + (group > 1 ? "–" + (g * group + group - 1) : ""));
    return parts.join(" · ");
  };

  // Returns render()'s answer: a Promise when the view waits for data (viewer_remote.js).
  Viewer.prototype.set = function (patch) {
    for (var k in patch) this.state[k] = patch[k];
    return this.render();
  };

  Viewer.prototype.render = function () {
    var s = this.state;
    for (var v in this.tabs) this.tabs[v].classList.toggle("on", v === s.view);
    this.selLayer.value = String(s.layer);
    this.selDec.value = String(s.dec);
    if (this.selText) this.selText.value = String(s.text);
    this.headBar.style.display = s.view === "head" ? "" : "none";
    this.layerLabel.style.display = s.view === "head" || s.view === "step" || s.view === "matrix" ? "" : "none";  // the others show every layer
    if (s.view === "generation" && !this.data.generation) s.view = "head";
    for (var h = 0; h < this.headBtns.length; h++) this.headBtns[h].classList.toggle("off", s.heads.indexOf(h) < 0);
    this.body.innerHTML = "";
    this.hideTip();
    if (this.observer) { this.observer.disconnect(); this.observer = null; }
    this.root.setAttribute("data-view", s.view);
    var wait = this.pending ? this.pending() : null;  // a Promise while data is on its way; it renders again
    if (wait) { this.writeHash(); return wait; }
    if (s.view === "head") this.renderHead();
    else if (s.view === "model") this.renderModel();
    else if (s.view === "matrix") this.renderMatrix();
    else if (s.view === "step") this.renderStep();
    else if (s.view === "generation") this.renderGeneration();
    else this.renderCompare();
    this.writeHash();
  };

  Viewer.prototype.showTip = function (ev, text) {
    this.tip.textContent = text; this.tip.style.display = "block";
    var x = ev.clientX + 14, y = ev.clientY + 12, w = this.tip.offsetWidth, h = this.tip.offsetHeight;
    if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 14);
    if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - 12);
    this.tip.style.left = x + "px"; this.tip.style.top = y + "px";
  };
  Viewer.prototype.hideTip = function () { this.tip.style.display = "none"; };

  // ---- head view ---------------------------------------------------------------------------
  // Lines are drawn for the (query, key) pairs whose weight is at least minWeight(): the smallest
  // weight that keeps the picture under LINE_BUDGET lines (rasterising more costs seconds and shows
  // nothing more), and all of the focused query's lines when one is selected or hovered. They are
  // batched by opacity: 16 paths per head.
  var LINE_BUDGET = 8000;
  Viewer.prototype.minWeight = function () {
    var t = this.text(), s = this.state, n = t.n, key = s.text + ":" + s.layer + ":" + s.heads.join(",");
    if (this._minw && this._minw.key === key) return this._minw.value;
    var bins = new Float64Array(1001), total = 0;  // weights in steps of 0.001
    for (var hi = 0; hi < s.heads.length; hi++) {
      var hb = t.summary(s.layer, s.heads[hi]).bins;
      for (var b = 0; b <= 1000; b++) { bins[b] += hb[b]; total += hb[b]; }
    }
    void n;
    var value = 0, kept = total, b = 0;
    while (kept > LINE_BUDGET && b < 1000) { kept -= bins[b]; b++; value = b / 1000; }
    this._minw = { key: key, value: value };
    return value;
  };

  // Segments from x0 to x1 (rows from y0 down); with lo, hi only those crossing that band of y.
  Viewer.prototype.headSegments = function (x0, x1, y0, lo, hi) {
    var t = this.text(), n = t.n, s = this.state, only = s.hover !== null ? s.hover : s.query, out = [];
    var minw = only !== null ? 0 : this.minWeight();
    if (lo === undefined) { lo = -Infinity; hi = Infinity; }
    for (var hi = 0; hi < s.heads.length; hi++) {
      var h = s.heads[hi], W = t.weights(s.layer, h), buckets = [];
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
    var self = this, nh = this.state.heads.length;
    this.headSegments(x0, x1, y0, lo, hi).forEach(function (g) {
      for (var b = 0; b < 16; b++) {
        var a = (b + 0.5) / 16;
        p.lines(g.buckets[b], headColor(g.head), Math.min(1, a * (nh > 1 ? 0.9 : 1)), a < 0.4 ? 1 : 1 + 2 * a);
      }
    });
    void self;
  };

  Viewer.prototype.renderHead = function () {
    var self = this, t = this.text(), n = t.n, s = this.state;
    var note = el("div", { cls: "as-note", "data-testid": "head-note" }, this.body), minw = this.minWeight();
    var win = t.window(s.layer);
    note.textContent = "Left: each token as a query; right: the keys it attends to. Line opacity = attention weight" +
      (minw > 0 ? " (weights below " + show(minw, 3) + " are not drawn until you hover or pick a query)" : "") +
      ". Hover a token for its row; click a query to select it, double-click for its step-by-step calculation." +
      (this.cfg.causal ? " For the query in focus, keys it cannot see are shaded: grey = later (causal mask)" +
        (win !== null ? ", orange = " + win + " or more positions back (this layer's sliding window of " + win + ")" : "") + "." : "");
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
      lines.push("query " + i + ": " + t.tokens[i] + "  (layer " + s.layer + ")");
      s.heads.slice(0, 12).forEach(function (h) {
        var st = t.steps(s.layer, h, i), best = 0;
        for (var j = 1; j < t.n; j++) if (st.weights[j] > st.weights[best]) best = j;
        lines.push("head " + h + ": max " + show(st.weights[best], dec) + " → " + best + " " + t.tokens[best]);
      });
      lines.push("click: select · double-click: step view");
    } else {
      var j = +e.getAttribute("data-j"), q = s.hover !== null ? s.hover : s.query;
      lines.push("key " + j + ": " + t.tokens[j]);
      if (q === null) lines.push("hover or select a query on the left");
      else s.heads.forEach(function (h) {
        var st = t.steps(s.layer, h, q);
        lines.push("head " + h + ": weight(" + t.tokens[q] + " → " + t.tokens[j] + ") = " + show(st.weights[j], dec) +
          "   exact " + String(st.weights[j]));
      });
    }
    return lines.join("\n");
  };

  Viewer.prototype.paintHead = function (p, w, h) {
    var t = this.text(), n = t.n, s = this.state, top = 30, geo = this.headGeo || headGeometry(t.tokens, 0);
    var TOKW = geo.tokW, LINEW = geo.lineW;
    p.rect(0, 0, w, h, "#fff");
    var hs = s.heads.length === this.cfg.n_heads ? "all heads" : s.heads.length ? "heads " + s.heads.join(",") : "no heads";
    p.text(8, 14, "layer " + s.layer + " · " + hs, { size: 13, bold: true });
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
    el("div", { cls: "as-note", text: "Every layer × head (colours scaled to each head's largest weight). Click one to open it in the head view." }, this.body);
    var grid = el("div", { cls: "as-mv", "data-testid": "model-view", style: "grid-template-columns:56px repeat(" + cfg.n_heads + ",72px)" }, this.body);
    el("div", {}, grid);
    var shared = (cfg.n_kv_heads || cfg.n_heads) < cfg.n_heads, grp = cfg.n_heads / (cfg.n_kv_heads || cfg.n_heads);
    for (var h = 0; h < cfg.n_heads; h++) el("div", { cls: "as-lab", text: "head " + h + (shared ? " · kv " + Math.floor(h / grp) : "") }, grid);
    var pending = [];
    for (var l = 0; l < cfg.n_layers; l++) {
      el("div", { cls: "as-lab", text: "layer " + l }, grid);
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
      var text = "layer " + l + " · head " + h;
      if (T === t.n) {
        var st = t.steps(l, h, ci);
        text += "\n" + t.tokens[ci] + " → " + t.tokens[cj] + ": " + show(st.weights[cj], s.dec) + "\nexact " + String(st.weights[cj]);
      }
      self.showTip(ev, text + "\nclick to open");
    });
    grid.addEventListener("mouseleave", function () { self.hideTip(); });
  };

  Viewer.prototype.paintModel = function (p) {
    var cfg = this.cfg, S = 64, G = 8, x0 = 64, y0 = 44;
    p.rect(0, 0, x0 + cfg.n_heads * (S + G), y0 + cfg.n_layers * (S + G), "#fff");
    p.text(8, 14, this.data.model + " · every layer × head", { size: 13, bold: true });
    for (var h = 0; h < cfg.n_heads; h++) p.text(x0 + h * (S + G) + S / 2, y0 - 10, "head " + h, { size: 11, anchor: "middle" });
    for (var l = 0; l < cfg.n_layers; l++) {
      p.text(8, y0 + l * (S + G) + S / 2, "layer " + l, { size: 11 });
      for (h = 0; h < cfg.n_heads; h++) p.image(this.thumbCanvas(l, h), x0 + h * (S + G), y0 + l * (S + G), S, S);
    }
  };

  // ---- step view ----------------------------------------------------------------------------
  Viewer.prototype.renderStep = function () {
    var self = this, t = this.text(), s = this.state, cfg = this.cfg, dec = s.dec;
    var wrap = el("div", { cls: "as-sv", "data-testid": "step-view" }, this.body);
    var ctl = el("div", { cls: "as-ctl" }, wrap);
    var lq = el("label", { text: "query token " }, ctl), selQ = el("select", { "data-testid": "query-select" }, lq);
    el("option", { value: "", text: "— pick one —" }, selQ);
    t.tokens.forEach(function (tok, i) { el("option", { value: i, text: i + ": " + tok }, selQ); });
    selQ.value = s.query === null ? "" : String(s.query);
    selQ.addEventListener("change", function () { self.set({ query: selQ.value === "" ? null : +selQ.value, key: null }); });
    var lh = el("label", { text: "head " }, ctl), selH = el("select", { "data-testid": "focus-head-select" }, lh);
    for (var h = 0; h < cfg.n_heads; h++) el("option", { value: h, text: String(h) }, selH);
    selH.value = String(s.focus);
    selH.addEventListener("change", function () { self.set({ focus: +selH.value }); });
    el("span", { cls: "as-note", text: "layer " + s.layer + " (change it above)" }, ctl);
    if (s.query === null) {
      el("div", { cls: "as-note", text: "Pick a query token here, or click one in the head view. The table then shows, for every key, " +
        "the raw score q·k, the scaled score, its exponential and the softmax weight, and below it the weighted sum of the value vectors." }, wrap);
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
    var facts = ["d_k = " + cfg.d_head + (plainRoot ? ", √d_k = " + show(Math.sqrt(cfg.d_head), dec) : "")];
    if (cfg.query_scale !== null && cfg.query_scale !== undefined)
      facts.push("factor " + show(f, dec) + " = query_pre_attn_scalar^(−1/2) = " + String(Math.round(1 / (f * f) * 1e6) / 1e6) + "^(−1/2) (Gemma)");
    if (Hkv < cfg.n_heads) facts.push("query head " + s.focus + " reads k/v head " + g + " (shared by query heads " + (g * t.group) + "–" + (g * t.group + t.group - 1) + ")");
    if (rope) facts.push("q and k turned by rotary positions (base " + rope.base + (rope.scaling ? ", " + rope.scaling + " scaling" : "") + ", pairs (i, i + " + cfg.d_head / 2 + "))");
    if (win !== null) facts.push("sliding window " + win + ": keys " + win + " or more positions back are hidden");
    el("div", { cls: "as-note", "data-testid": "step-caption", text: "Query " + q + " “" + t.tokens[q] + "”, layer " + s.layer + ", head " + s.focus +
      ": " + facts.join("; ") + ". Hover a number for its exact value" + (rope ? "; click a key row to see its rotation below" : "") + "." +
      (st.shift ? " The largest score exceeds " + this.data.exp_show_limit + ", so the row maximum is subtracted before exp (the weights are unchanged)." : "") }, wrap);
    var box = el("div", { cls: "as-wrap" }, wrap);
    var table = el("table", { "data-testid": "step-table" }, box), thead = el("thead", {}, table), tr = el("tr", {}, thead);
    var masks = false;
    for (var jj = 0; jj < t.n; jj++) if (t.hidden(s.layer, q, jj)) { masks = true; break; }
    ["#", "key", rope ? "raw score q′·k′" : "raw score q·k", "scaled s = " + (rope ? "q′·k′ " : "q·k ") + scaleText, expText, "weight"].concat(masks ? ["hidden because"] : []).forEach(function (x, i) {
      el("th", { text: x, cls: i === 1 ? "tok" : "" }, tr);
    });
    var tbody = el("tbody", {}, table), best = 0, j;
    for (j = 1; j < t.n; j++) if (st.weights[j] > st.weights[best]) best = j;
    var keySel = s.key !== null && s.key !== undefined && s.key < t.n ? s.key : best;
    var frag = document.createDocumentFragment();
    var cell = function (row, name, x) {
      var td = el("td", { "data-col": name, "data-value": String(x), title: "exact: " + String(x), text: show(x, dec) }, row);
      return td;
    };
    var WHY = ["", "later token (causal mask)", "outside the window (" + q + " − j ≥ " + win + ")"];
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
    el("div", { cls: "as-note", text: "weighted sum z = Σ_j weight_j · v_j (" + cfg.d_head + " numbers, head " + s.focus + "'s slice of the new vector of “" + t.tokens[q] + "”" +
      (Hkv < cfg.n_heads ? "; v of k/v head " + g : "") + "):" }, out);
    for (j = 0; j < st.out.length; j++)
      el("span", { "data-col": "out", "data-value": String(st.out[j]), title: "z[" + j + "] exact: " + String(st.out[j]), text: show(st.out[j], dec) }, out);
    if (rope) this.renderRotation(wrap, q, keySel);
  };

  // q of the query and k of one key before and after the rotation, pair by pair.
  Viewer.prototype.renderRotation = function (wrap, q, key) {
    var t = this.text(), s = this.state, cfg = this.cfg, dec = s.dec, d = cfg.d_head, half = d / 2;
    var rope = cfg.rope[s.layer], inv = rope.inv_freq;
    var qp = t.vec(s.layer, 0, s.focus), qr = t.operand(s.layer, 0, s.focus), kp = t.vec(s.layer, 1, s.focus), kr = t.operand(s.layer, 1, s.focus);
    var box = el("div", { cls: "as-rot", "data-testid": "rotation" }, wrap);
    el("div", { cls: "as-note", text: "Rotation: pair i = features (i, i + " + half + ") of q (position " + q + ") and of k “" + t.tokens[key] + "” (position " + key +
      ") turned by φ = position · θ_i, θ_i = " + (rope.scaling ? "the model's " + rope.scaling + "-scaled frequency" : rope.base + "^(−2i/" + d + ")") +
      "; (a, b) → (a cos φ − b sin φ, a sin φ + b cos φ). " + (cfg.qk_norm ? "q and k before the rotation are after the model's QK-norm. " : "") +
      "Lengths are unchanged; the score depends on the two positions only through their distance." }, box);
    var wrapT = el("div", { cls: "as-wrap as-rotwrap" }, box);
    var table = el("table", { "data-testid": "rotation-table" }, wrapT), tr = el("tr", {}, el("thead", {}, table));
    ["pair i", "θ_i", "q: φ", "q_a", "q_b", "q′_a", "q′_b", "k: φ", "k_a", "k_b", "k′_a", "k′_b"].forEach(function (x) { el("th", { text: x }, tr); });
    var tb = el("tbody", {}, table), frag = document.createDocumentFragment();
    var num = function (row, name, x) { el("td", { "data-col": name, "data-value": String(x), title: "exact: " + String(x), text: show(x, dec) }, row); };
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
    if (s.query === null) { p.text(10, 20, "no query token selected", {}); return; }
    var st = t.steps(s.layer, s.focus, s.query), cols = [30, 150, 130, 130, 130, 110], x = 10, y = 16;
    p.text(10, y, this.data.model + " · layer " + s.layer + " · head " + s.focus + " · query " + s.query + " “" + t.tokens[s.query] + "”", { bold: true });
    y += 24;
    var heads = ["#", "key", "q·k", "scaled", st.shift ? "exp(s − m)" : "exp(s)", "weight"], cx = [];
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
  var CMP = [["across", "cos(A, B): same token, two texts", "#d62728"], ["drift_a", "cos(A, A at embedding)", "#1f77b4"], ["drift_b", "cos(B, B at embedding)", "#2ca02c"]];

  Viewer.prototype.renderCompare = function () {
    var c = this.data.compare, dec = this.state.dec, self = this;
    var wrap = el("div", { cls: "as-cv", "data-testid": "context-view" }, this.body);
    if (!c) {
      el("div", { cls: "as-note", text: "No comparison in this page. Context awareness (the first article): the same token gets a different vector in a different sentence. " +
        (this.opts.server ? "Type a second text in “compare with” above." : "Export with  attnscope view TEXT --compare OTHER_TEXT  to see it.") }, wrap);
      return;
    }
    el("div", { cls: "as-note", text: "Token “" + c.token + "” (position " + c.pos_a + " in A, " + c.pos_b + " in B). A: " + c.tokens_a.join(" ") +
      " · B: " + c.tokens_b.join(" ") + ". Cosine similarity per layer; hover a point for its exact value." }, wrap);
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
        title.textContent = m[1] + " at " + c.layers[i] + ": " + show(v, dec, false) + " (exact " + String(v) + ")";
        dot.appendChild(title); svg.appendChild(dot);
      });
    });
    var table = el("table", { "data-testid": "compare-table" }, wrap), tr = el("tr", {}, table);
    ["layer"].concat(CMP.map(function (m) { return m[1]; })).forEach(function (x) { el("th", { text: x }, tr); });
    c.layers.forEach(function (name, i) {
      var row = el("tr", {}, table);
      el("td", { text: name }, row);
      // cosines are never shown as integers: a column reads 1.0000 beside 0.9876, not 1
      CMP.forEach(function (m) { el("td", { "data-col": m[0], "data-value": String(c[m[0]][i]), title: "exact: " + String(c[m[0]][i]), text: show(c[m[0]][i], dec, false) }, row); });
    });
    void self;
  };

  Viewer.prototype.compareGeometry = function (W, H) {
    var c = this.data.compare, lo = 1, all = c.across.concat(c.drift_a, c.drift_b);
    all.forEach(function (v) { if (v < lo) lo = v; });
    lo = Math.floor(Math.min(lo, 0.9) * 10) / 10;
    var L = 60, R = W - 20, T = 30, B = H - 72, n = c.layers.length;
    return { L: L, R: R, T: T, B: B, lo: lo, x: function (i) { return L + (n > 1 ? i * (R - L) / (n - 1) : 0); }, y: function (v) { return B - (v - lo) / (1 - lo) * (B - T); } };
  };

  Viewer.prototype.paintCompare = function (p, W, H) {
    var c = this.data.compare, g = this.compareGeometry(W, H);
    p.rect(0, 0, W, H, "#fff");
    p.text(10, 14, "“" + c.token + "”: cosine similarity per layer", { bold: true });
    p.lines([g.L, g.B, g.R, g.B, g.L, g.T, g.L, g.B], "#667085", 1, 1);
    for (var k = 0; k <= 4; k++) {
      var v = g.lo + k * (1 - g.lo) / 4;
      p.text(g.L - 6, g.y(v), v.toFixed(2), { size: 11, anchor: "end", fill: "#667085" });
      p.lines([g.L, g.y(v), g.R, g.y(v)], "#d0d5dd", 0.6, 1);
    }
    c.layers.forEach(function (name, i) { p.text(g.x(i), g.B + 14, i === 0 ? "embed" : String(i - 1), { size: 11, anchor: "middle", fill: "#667085" }); });
    p.text((g.L + g.R) / 2, g.B + 32, "layer output", { size: 11, anchor: "middle", fill: "#667085" });
    var lx = g.L, ly = H - 14;
    CMP.forEach(function (m) {
      var pts = [];
      c[m[0]].forEach(function (v, i) { pts.push(g.x(i), g.y(v)); });
      p.polyline(pts, m[2], 2);
      for (var i = 0; i < pts.length; i += 2) p.circle(pts[i], pts[i + 1], 3.5, m[2]);
      p.lines([lx, ly, lx + 20, ly], m[2], 1, 3);
      p.text(lx + 25, ly, m[1], { size: 11 });
      lx += 25 + 6.6 * m[1].length + 18;  // ~6.6 px a character at 11 px
    });
  };

  // ---- export ------------------------------------------------------------------------------------
  Viewer.prototype.viewSize = function () {
    var s = this.state, t = this.text(), cfg = this.cfg;
    if (s.view === "head") { var g = this.headGeo || headGeometry(t.tokens, 0); return [2 * g.tokW + g.lineW, 40 + t.n * ROW]; }
    if (s.view === "model") return [64 + cfg.n_heads * 72, 44 + cfg.n_layers * 72];
    if (s.view === "step") return this.stepSize();
    if (s.view === "matrix") return this.matrixSize();
    if (s.view === "generation") return this.generationSize();
    return [CMP_W, CMP_H];
  };

  Viewer.prototype.paintView = function (p, w, h) {
    var v = this.state.view;
    if (v === "head") this.paintHead(p, w, h);
    else if (v === "model") this.paintModel(p, w, h);
    else if (v === "step") this.paintStep(p, w, h);
    else if (v === "matrix") this.paintMatrix(p, w, h);
    else if (v === "generation") this.paintGeneration(p, w, h);
    else if (this.data.compare) this.paintCompare(p, w, h);
    else { p.rect(0, 0, w, h, "#fff"); p.text(10, 20, "no comparison in this page", {}); }
  };

  // The current view as a PNG Blob (2× pixels) or an SVG string.
  Viewer.prototype.exportBlob = function (kind) {
    var self = this, size = this.viewSize(), w = size[0], h = size[1];
    return fontsReady(this.allText()).then(function () {
      if (kind === "svg") {
        var sp = new SvgPainter(w, h, self.fontCss);
        self.paintView(sp, w, h);
        return new Blob([sp.toString()], { type: "image/svg+xml" });
      }
      var scale = Math.min(2, 16000 / Math.max(w, h)), c = document.createElement("canvas");
      c.width = Math.round(w * scale); c.height = Math.round(h * scale);
      var ctx = c.getContext("2d"); ctx.scale(scale, scale);
      self.paintView(new CanvasPainter(ctx), w, h);
      return new Promise(function (res) { c.toBlob(res, "image/png"); });
    });
  };

  Viewer.prototype.exportName = function (kind) {
    var s = this.state;
    return "attnscope-" + s.view + "-layer" + s.layer + (s.view === "step" ? "-head" + s.focus + "-q" + s.query : "") + "." + kind;
  };

  Viewer.prototype.exportView = function (kind) {
    var self = this;
    return this.exportBlob(kind).then(function (blob) {
      var url = URL.createObjectURL(blob), a = document.createElement("a");
      a.href = url; a.download = self.exportName(kind); a.style.display = "none";
      self.root.appendChild(a); a.click();
      setTimeout(function () { URL.revokeObjectURL(url); a.remove(); }, 1000);
      return blob;
    });
  };

  function mount(root, data, opts) {
    if (typeof root === "string") root = document.querySelector(root);
    return new Viewer(root, data, opts);
  }

  window.attnscope = { mount: mount, show: show, Viewer: Viewer, CanvasPainter: CanvasPainter, SvgPainter: SvgPainter, version: 2,
    Text: Text,  // for viewer_remote.js
    // for the views in viewer_generation.js
    util: { el: el, esc: esc, viridis: viridis, headColor: headColor, FONT: FONT, ROW: ROW, tokLabel: tokLabel,
      decodeArray: decodeArray, fontsReady: fontsReady, headWeights: headWeights, headSummary: headSummary,
      LINE_BUDGET: LINE_BUDGET } };  // decodeArray, fontsReady: viewer_seq2seq.js; headWeights: viewer_workers.js
})();
