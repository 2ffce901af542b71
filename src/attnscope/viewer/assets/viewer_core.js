/* attnscope viewer, core: the number display rule, the page data's decoding, and one text's attention
 * recomputed from q, k, v (Text, and the head view's kernels that Web Workers run too). The painters
 * and helpers are viewer_paint.js; the views (viewer.js and the viewer_*.js files after it) read
 * both through window.attnscope.util.
 *
 * No dependencies and no network. The page data (see attnscope/viewer/data.py) holds, per text,
 * q (every query head), k and v (every key/value head) of every layer as float32; attention is
 * recomputed here in float64:
 *   scaled = factor · q·k   (factor = 1/√d_k, or the model's),  weights = softmax(scaled) by row,
 * (+ a position scheme's term of the key, cfg.bias.rows[h][j]: ALiBi's slope_h · j)
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
  function roundHalfUp(x, dec) { return roundParts(decimalParts(x), dec); }
  // The same for a decimalParts() value (show() moves its point to round a mantissa).
  function roundParts(p, dec) {
    var digits = p.digits, point = p.point;
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
      // the mantissa is x's own digits with the point moved, as explain's Decimal.scaleb: never
      // x / 10^e, whose float64 rounding turned ties (5.9345e-10 → 5.934e-10 at 3 decimals)
      var p = decimalParts(x), e = p.point - 1;
      var mant = roundParts({ neg: p.neg, digits: p.digits, point: 1 }, dec);
      if (Math.abs(parseFloat(mant)) >= 10) { e += 1; mant = roundParts({ neg: p.neg, digits: p.digits, point: 0 }, dec); }
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
      return Promise.reject(new Error(window.attnscope.tr("viewer.no_inflate")));
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
  // A position scheme's score term of one head, by key (ALiBi: slope_h · j; data.py's bias_rows), or null.
  Text.prototype.biasRow = function (head) { var b = this.cfg.bias; return b ? b.rows[head] : null; };
  // float64 scaled scores of one row (query i) plus the position term, -Infinity at masked keys
  Text.prototype.scaledRow = function (layer, head, i) {
    var q = this.operand(layer, 0, head), k = this.operand(layer, 1, head), n = this.n, d = this.d;
    var f = this.cfg.factor, raw = new Float64Array(n), scaled = new Float64Array(n), b = this.biasRow(head);
    for (var j = 0; j < n; j++) {
      var s = 0;
      for (var t = 0; t < d; t++) s += q[i * d + t] * k[j * d + t];
      raw[j] = s;
      scaled[j] = this.hidden(layer, i, j) ? -Infinity : (b ? s * f + b[j] : s * f);
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
  // The first article's walk-through of one row from its raw and scaled scores (−∞ where hidden): weights,
  // exp (shifted by the max past ±`limit`), Σ, the weighted sum of v (n × d); both viewers' steps().
  function rowSteps(raw, scaled, v, d, limit) {
    var n = scaled.length, w = new Float64Array(n), m = softmaxInto(scaled, w);
    var shift = isFinite(m) && Math.abs(m) > limit ? m : 0, e = new Float64Array(n), sum = 0, j;
    for (j = 0; j < n; j++) { e[j] = Math.exp(scaled[j] - shift); sum += e[j]; }
    var out = new Float64Array(d);
    for (j = 0; j < n; j++) for (var t = 0; t < d; t++) out[t] += w[j] * v[j * d + t];
    return { raw: raw, scaled: scaled, shift: shift, exp: e, sum: sum, weights: w, out: out, max: m };
  }
  Text.prototype.steps = function (layer, head, i) {
    var r = this.scaledRow(layer, head, i);
    return rowSteps(r.raw, r.scaled, this.vec(layer, 2, head), this.d, this.limit);
  };
  // All weights of one head (n × n, Float32Array for drawing), cached.
  Text.prototype.weights = function (layer, head) {
    var key = layer * this.H + head, hit = this.cache.get(key);
    if (hit) { this.cache.delete(key); this.cache.set(key, hit); return hit; }
    var out = new Float32Array(this.n * this.n);
    headWeights(this.operand(layer, 0, head), this.operand(layer, 1, head), this.n, this.d, this.cfg.factor,
      this.cfg.causal, this.window(layer), out, undefined, this.biasRow(head));
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
  // `counted`: those bins already counted (headWeights counts them as it writes W).
  function headSummary(W, n, budget, counted) {
    var bins = counted || new Float64Array(1001), total = 0, i, b = 0;
    if (counted) for (i = 0; i <= 1000; i++) total += bins[i];
    else for (i = 0; i < n * n; i++) if (W[i] > 0) { bins[Math.min(1000, Math.floor(W[i] * 1000))]++; total++; }
    while (total > budget && b < 1000) { total -= bins[b]; b++; }
    var minw = b / 1000, idx = [];
    for (i = 0; i < n * n; i++) if (W[i] > 0 && W[i] >= minw) idx.push(i);
    return { bins: bins, idx: Int32Array.from(idx) };
  }

  // softmax(f · q·kᵀ [+ bias by key]) of one head into out (n × n): the same arithmetic as scaledRow + softmaxInto,
  // q and k (n × d, float64) as operand() gives them. Two queries × four keys at a time: each score
  // is still summed over t = 0 … d − 1 in order (the same bits as scaledRow), and the eight
  // independent sums share each load of q and k (2.3× faster than one query × four keys). Causal
  // models skip the later keys (masked anyway). With `bins` (Float64Array(1001)) it also counts the
  // weights > 0 written, as headSummary would count them. Self-contained: viewer_workers.js runs it
  // in Web Workers too (its source is sent as text).
  function headWeights(q, k, n, d, f, causal, win, out, bins, bias) {
    var ra = new Float64Array(n), rb = new Float64Array(n), i, j, t;
    function finish(row, i) {  // mask, scale and softmax of query i's raw scores
      var m = -Infinity, sum = 0, s, j, o = i * n;
      for (j = 0; j < n; j++) {
        s = (causal && j > i) || (win !== null && i - j >= win) ? -Infinity : (bias ? row[j] * f + bias[j] : row[j] * f);
        row[j] = s; if (s > m) m = s;
      }
      for (j = 0; j < n; j++) { row[j] = Math.exp(row[j] - m); sum += row[j]; }
      if (!bins) { for (j = 0; j < n; j++) out[o + j] = row[j] / sum; return; }
      for (j = 0; j < n; j++) {
        var w = Math.fround(row[j] / sum);  // the float32 that out holds
        out[o + j] = w;
        if (w > 0) bins[w >= 1 ? 1000 : Math.floor(w * 1000)]++;
      }
    }
    for (i = 0; i < n; i += 2) {
      var two = i + 1 < n, qa = i * d, qb = two ? qa + d : qa, jn = causal ? Math.min(n, i + 2) : n;
      for (j = 0; j + 3 < jn; j += 4) {
        var k0 = j * d, k1 = k0 + d, k2 = k1 + d, k3 = k2 + d;
        var a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
        for (t = 0; t < d; t++) {
          var x = q[qa + t], y = q[qb + t], c0 = k[k0 + t], c1 = k[k1 + t], c2 = k[k2 + t], c3 = k[k3 + t];
          a0 += x * c0; a1 += x * c1; a2 += x * c2; a3 += x * c3;
          b0 += y * c0; b1 += y * c1; b2 += y * c2; b3 += y * c3;
        }
        ra[j] = a0; ra[j + 1] = a1; ra[j + 2] = a2; ra[j + 3] = a3;
        rb[j] = b0; rb[j + 1] = b1; rb[j + 2] = b2; rb[j + 3] = b3;
      }
      for (; j < jn; j++) {
        var sa = 0, sb = 0, kj = j * d;
        for (t = 0; t < d; t++) { sa += q[qa + t] * k[kj + t]; sb += q[qb + t] * k[kj + t]; }
        ra[j] = sa; rb[j] = sb;
      }
      finish(ra, i);
      if (two) finish(rb, i + 1);
    }
    return out;
  }

  // The head view draws at most this many lines (the server's attnscope.viewer.held.LINE_BUDGET).
  var LINE_BUDGET = 8000;

  // The page's own words: attnscope.strings = {en: {...}, zh: {...}} is written into the page from
  // attnscope.i18n's catalogue, viewer*.toml (the one table); attnscope.lang is the language shown now. A key
  // the table lacks in that language falls back to English. tr("viewer.title", {model: "x"}).
  var LANGS = [["en", "EN"], ["zh", "中文"]];
  function tr(key, fmt) {
    var A = window.attnscope, tables = A.strings || {}, t = tables[A.lang] || {}, s = t[key];
    if (s === undefined) s = (tables.en || {})[key];
    if (s === undefined) s = key;
    return s.replace(/\{(\w+)\}/g, function (m, name) { return fmt && fmt[name] !== undefined ? String(fmt[name]) : m; });
  }

  window.attnscope = { show: show, version: 2, tr: tr, LANGS: LANGS, lang: "en",
    Text: Text,  // viewer_remote.js extends it
    // headWeights, headSummary: viewer_workers.js sends their source to Web Workers
    util: { decodeArray: decodeArray, headWeights: headWeights, headSummary: headSummary, rowSteps: rowSteps,
      LINE_BUDGET: LINE_BUDGET } };
})();
