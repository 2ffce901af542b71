/* attnscope viewer: encoder–decoder models (T5, BART). Pages whose data has `seq2seq: true`
 * (attnscope/viewer/seq2seq.py) are drawn here; attnscope.mount sends them to this viewer.
 *
 * Three attentions, each with its own layers: "encoder" (source → source), "self" (the decoder's
 * causal self-attention, target → target) and "cross" (target queries over the source's keys and
 * values). For every text the data holds q, k, v of each as float32; the page computes, in float64,
 *   s_ij = factor · q_i·k_j + bias_ij      (T5: factor 1, bias = table[bucket(j − i)][head]; BART: 1/√d, none)
 * and softmax over the keys the query may see — the arithmetic of `attnscope explain --attention …`.
 * Views: head view (queries left, keys right; source on one side and target on the other for
 * cross-attention), model view (every layer × head of one attention), step view (one row worked
 * out). Every view exports as PNG and SVG; the address (#att=cross&view=step&layer=1&head=2&query=3)
 * reopens a state.
 */
(function (A) {
  "use strict";
  if (!A || !A.util || A.Seq2SeqViewer) return;
  var U = A.util, el = U.el, show = A.show, ROW = U.ROW, tokLabel = U.tokLabel, headColor = U.headColor;
  var ATT = [["encoder", "Encoder"], ["self", "Decoder"], ["cross", "Cross"]];
  var WHAT = {
    encoder: "encoder self-attention: source tokens attend to source tokens",
    self: "decoder self-attention (causal): each target token attends to itself and the target tokens before it",
    cross: "cross-attention: target tokens (queries, from the decoder) attend to source tokens (keys and values, from the encoder's output)"
  };
  var VIEWS = [["head", "Head view"], ["model", "Model view"], ["step", "Step view"]];
  var LINE_BUDGET = 8000;

  // ---- one (source, target) pair: its arrays and the page's arithmetic ----------------------------
  function Pair(entry, cfg, data) {
    this.entry = entry; this.cfg = cfg; this.src = entry.source_tokens; this.tgt = entry.target_tokens;
    this.d = cfg.d_head; this.H = cfg.n_heads; this.limit = data.exp_show_limit; this.cache = new Map();
  }
  Pair.prototype.load = function () {
    var self = this, jobs = [];
    this.arr = {};
    ATT.forEach(function (a) {
      var part = self.entry[a[0]], o = self.arr[a[0]] = {};
      ["q", "k", "v", "buckets"].forEach(function (name) {
        if (part[name]) jobs.push(U.decodeArray(part[name]).then(function (x) { o[name] = x; }));
      });
    });
    return Promise.all(jobs);
  };
  Pair.prototype.layers = function (att) { return att === "encoder" ? this.cfg.n_layers : this.cfg.n_decoder_layers; };
  Pair.prototype.qTokens = function (att) { return att === "encoder" ? this.src : this.tgt; };
  Pair.prototype.kTokens = function (att) { return att === "self" ? this.tgt : this.src; };
  Pair.prototype.nq = function (att) { return this.qTokens(att).length; };
  Pair.prototype.nk = function (att) { return this.kTokens(att).length; };
  // q (kind 0), k (1) or v (2) of one head: Float32Array (n × d_head), n = queries for q, keys for k, v
  Pair.prototype.vec = function (att, layer, kind, head) {
    var n = kind === 0 ? this.nq(att) : this.nk(att), size = n * this.d, off = (layer * this.H + head) * size;
    return this.arr[att]["qkv"[kind]].subarray(off, off + size);
  };
  Pair.prototype.hasBias = function (att) { return !!(this.cfg.bias && this.cfg.bias[att]); };
  Pair.prototype.bucket = function (att, i, j) { return this.arr[att].buckets[i * this.nk(att) + j]; };
  Pair.prototype.bias = function (att, head, i, j) {
    return this.hasBias(att) ? this.cfg.bias[att].table[this.bucket(att, i, j)][head] : 0;
  };
  Pair.prototype.hidden = function (att, i, j) { return att === "self" && j > i; };
  // One row worked out: raw q·k, bias, scaled s = factor·q·k + bias (−∞ where hidden), exp, Σ, weights, z.
  Pair.prototype.steps = function (att, layer, head, i) {
    var q = this.vec(att, layer, 0, head), k = this.vec(att, layer, 1, head), v = this.vec(att, layer, 2, head);
    var nk = this.nk(att), d = this.d, f = this.cfg.factor, j, t;
    var raw = new Float64Array(nk), b = new Float64Array(nk), s = new Float64Array(nk), m = -Infinity;
    for (j = 0; j < nk; j++) {
      var acc = 0;
      for (t = 0; t < d; t++) acc += q[i * d + t] * k[j * d + t];
      raw[j] = acc; b[j] = this.bias(att, head, i, j);
      s[j] = this.hidden(att, i, j) ? -Infinity : acc * f + b[j];
      if (s[j] > m) m = s[j];
    }
    var w = new Float64Array(nk), sumStable = 0;
    for (j = 0; j < nk; j++) { w[j] = Math.exp(s[j] - m); sumStable += w[j]; }
    for (j = 0; j < nk; j++) w[j] /= sumStable;
    var shift = m > this.limit ? m : 0, e = new Float64Array(nk), sum = 0;
    for (j = 0; j < nk; j++) { e[j] = Math.exp(s[j] - shift); sum += e[j]; }
    var out = new Float64Array(d);
    for (j = 0; j < nk; j++) for (t = 0; t < d; t++) out[t] += w[j] * v[j * d + t];
    return { raw: raw, bias: b, scaled: s, shift: shift, exp: e, sum: sum, weights: w, out: out };
  };
  // Every row of one head (n_q × n_k, Float32Array for drawing), cached.
  Pair.prototype.weights = function (att, layer, head) {
    var key = att + ":" + layer + ":" + head, hit = this.cache.get(key);
    if (hit) return hit;
    var nq = this.nq(att), nk = this.nk(att), out = new Float32Array(nq * nk);
    for (var i = 0; i < nq; i++) { var w = this.steps(att, layer, head, i).weights; for (var j = 0; j < nk; j++) out[i * nk + j] = w[j]; }
    this.cache.set(key, out);
    if (this.cache.size > 256) this.cache.delete(this.cache.keys().next().value);
    return out;
  };

  // ---- the viewer --------------------------------------------------------------------------------
  function S2S(root, data, opts) {
    this.root = root; this.opts = opts || {}; this.fontCss = this.opts.fontCss || "";
    root.classList.add("as-root"); root.innerHTML = ""; root.__attnscope = this;
    this.tip = el("div", { cls: "as-tip" }, root);
    if (this.opts.server) this.buildForm();
    this.main = el("div", {}, root);
    this.ready = data ? this.setData(data) : Promise.resolve(this);
  }
  var P = S2S.prototype;
  P.showTip = A.Viewer.prototype.showTip;
  P.hideTip = A.Viewer.prototype.hideTip;
  P.setFontCss = A.Viewer.prototype.setFontCss;

  P.buildForm = function () {
    var self = this, srv = this.opts.server, intro = el("div", { cls: "as-intro", "data-testid": "intro" }, this.root);
    el("h1", { text: "attnscope" + (srv.model ? " · " + srv.model : "") }, intro);
    el("p", { text: "An encoder–decoder model reads a source text with its encoder and writes a target text with its decoder. " +
      "Type both to see the encoder's self-attention, the decoder's causal self-attention and the cross-attention from every " +
      "target token to the source, with every number of one row in the step view." }, intro);
    var api = el("p", { cls: "as-note", text: "The same numbers as JSON: " }, intro);
    el("a", { href: "docs", text: "API documentation" }, api);
    var f = el("form", { cls: "as-form", "data-testid": "form" }, this.root);
    var lim = srv.maxChars ? " (up to " + srv.maxChars + " characters)" : "";
    var l1 = el("label", { text: "source: what the encoder reads" + lim }, f);
    this.inSource = el("textarea", { name: "source", "data-testid": "source-input", placeholder: "translate English to German: The house is wonderful." }, l1);
    var l2 = el("label", { text: "target: what the decoder writes" + lim }, f);
    this.inTarget = el("textarea", { name: "target", "data-testid": "target-input", placeholder: "Das Haus ist wunderbar." }, l2);
    if (srv.maxChars) { this.inSource.setAttribute("maxlength", String(srv.maxChars)); this.inTarget.setAttribute("maxlength", String(srv.maxChars)); }
    [this.inSource, this.inTarget].forEach(function (box) {
      box.addEventListener("keydown", function (ev) { if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); self.submit(); } });
    });
    el("button", { type: "submit", text: "Show attention", "data-testid": "submit" }, f);
    this.formMsg = el("div", { "data-testid": "form-message" }, this.root);
    f.addEventListener("submit", function (ev) { ev.preventDefault(); self.submit(); });
  };

  P.submit = function () {
    var self = this, body = { source: this.inSource.value, target: this.inTarget.value };
    this.formMsg.className = "as-note"; this.formMsg.textContent = "computing…";
    this.root.removeAttribute("data-ready");
    var seq = this.seq = (this.seq || 0) + 1;
    return fetch(this.opts.server.endpoint || "api/view", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) })
      .then(function (r) {
        return r.json().catch(function () { throw new Error("the server answered " + r.status + " " + r.statusText); }).then(function (j) {
          if (!r.ok) throw new Error(typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail));
          return j;
        });
      }, function () { throw new Error("cannot reach the server; is attnscope serve still running?"); })
      .then(function (data) {
        if (seq !== self.seq) return;
        self.formMsg.className = ""; self.formMsg.textContent = "";
        if (data.font_css !== undefined) { self.setFontCss(data.font_css); delete data.font_css; }
        return self.setData(data);
      }).catch(function (e) {
        if (seq !== self.seq) return;
        self.main.innerHTML = ""; self.data = null; self.root.removeAttribute("data-ready");
        self.formMsg.className = "as-err"; self.formMsg.textContent = String(e.message || e);
      });
  };

  P.setData = function (data) {
    var self = this;
    if (!data || data.format !== "attnscope.view" || !data.seq2seq) return Promise.reject(new Error("not attnscope encoder–decoder view data"));
    this.data = data; this.cfg = data.config;
    this.pairs = data.texts.map(function (t) { return new Pair(t, data.config, data); });
    this.root.removeAttribute("data-ready");
    var text = [data.model].concat(data.texts.map(function (t) { return t.source_tokens.join("") + t.target_tokens.join(""); })).join("");
    return Promise.all(this.pairs.map(function (p) { return p.load(); }).concat([U.fontsReady(text)])).then(function () {
      self.maxDec = data.max_decimals === undefined ? 8 : data.max_decimals;
      self.state = { att: "cross", view: "head", text: 0, layer: 0, heads: self.allHeads(), focus: 0, query: null, hover: null,
        dec: Math.min(data.decimals, self.maxDec) };
      self.applyHash(); self.build(); self.render();
      return new Promise(function (res) { requestAnimationFrame(function () { self.root.setAttribute("data-ready", "1"); res(self); }); });
    }).catch(function (e) {
      self.main.innerHTML = "";
      el("div", { cls: "as-err", text: "attnscope viewer: " + (e.message || e) }, self.main);
      throw e;
    });
  };

  P.allHeads = function () { var s = []; for (var h = 0; h < this.cfg.n_heads; h++) s.push(h); return s; };
  P.pair = function () { return this.pairs[this.state.text]; };

  P.hashOf = function () {
    var s = this.state, parts = ["att=" + s.att, "view=" + s.view, "layer=" + s.layer];
    if (this.pairs.length > 1) parts.push("text=" + s.text);
    if (s.view === "step") parts.push("head=" + s.focus);
    if (s.view === "head" && s.heads.length !== this.cfg.n_heads) parts.push("heads=" + s.heads.join(","));
    if (s.query !== null && s.view !== "model") parts.push("query=" + s.query);
    if (s.dec !== this.data.decimals) parts.push("dec=" + s.dec);
    return "#" + parts.join("&");
  };
  P.writeHash = function () {
    if (this.opts.server || this.opts.noHash) return;
    try { if (window.location.hash !== this.hashOf()) history.replaceState(null, "", this.hashOf()); } catch (e) { /* sandboxed */ }
  };
  P.applyHash = function () {
    var hash = this.opts.server || !window.location.hash ? "" : window.location.hash.slice(1), s = this.state, self = this, kv = {};
    hash.split("&").forEach(function (x) { var i = x.indexOf("="); if (i > 0) kv[x.slice(0, i)] = decodeURIComponent(x.slice(i + 1)); });
    var int = function (v, n) { var x = Number(v); return v !== undefined && Number.isInteger(x) && x >= 0 && x < n ? x : null; }, x;
    if (kv.att && ["encoder", "self", "cross"].indexOf(kv.att) >= 0) s.att = kv.att;
    if (kv.view && ["head", "model", "step"].indexOf(kv.view) >= 0) s.view = kv.view;
    if ((x = int(kv.text, this.pairs.length)) !== null) s.text = x;
    var p = this.pair();
    if ((x = int(kv.layer, p.layers(s.att))) !== null) s.layer = x;
    if ((x = int(kv.head, this.cfg.n_heads)) !== null) s.focus = x;
    if ((x = int(kv.query, p.nq(s.att))) !== null) s.query = x;
    if ((x = int(kv.dec, this.maxDec + 1)) !== null) s.dec = x;
    if (kv.heads) {
      var hs = kv.heads.split(",").map(function (h) { return int(h, self.cfg.n_heads); }).filter(function (h) { return h !== null; });
      if (hs.length) s.heads = hs.sort(function (a, b) { return a - b; });
    }
  };

  P.build = function () {
    var self = this, d = this.data, cfg = this.cfg;
    this.main.innerHTML = "";
    var top = el("div", { cls: "as-top" }, this.main);
    el("span", { cls: "as-title", text: d.model + " · encoder " + cfg.n_layers + " layers, decoder " + cfg.n_decoder_layers + " layers × " + cfg.n_heads + " heads" }, top);
    if (this.pairs.length > 1) {
      var lt = el("label", { text: "pair " }, top);
      this.selText = el("select", { "data-testid": "text-select" }, lt);
      this.pairs.forEach(function (p, i) {
        var lab = (p.entry.source || p.src.join(" ")) + " → " + (p.entry.target || p.tgt.join(" "));
        el("option", { value: i, text: (i + 1) + ": " + (lab.length > 70 ? lab.slice(0, 69) + "…" : lab) }, self.selText);
      });
      this.selText.addEventListener("change", function () { self.set({ text: +self.selText.value, query: null }); });
    }
    var bar = el("div", { cls: "as-bar" }, this.main);
    var at = el("div", { cls: "as-tabs", "data-testid": "attention-tabs" }, bar);
    this.attBtns = {};
    ATT.forEach(function (a) {
      var b = el("button", { type: "button", text: a[1], "data-testid": "att-" + a[0], title: WHAT[a[0]] }, at);
      b.addEventListener("click", function () { self.setAttention(a[0]); });
      self.attBtns[a[0]] = b;
    });
    var tabs = el("div", { cls: "as-tabs" }, bar);
    this.tabs = {};
    VIEWS.forEach(function (v) {
      var b = el("button", { type: "button", text: v[1], "data-testid": "tab-" + v[0] }, tabs);
      b.addEventListener("click", function () { self.set({ view: v[0] }); });
      self.tabs[v[0]] = b;
    });
    var ll = this.layerLabel = el("label", { text: "layer " }, bar);
    this.selLayer = el("select", { "data-testid": "layer-select" }, ll);
    this.selLayer.addEventListener("change", function () { self.set({ layer: +self.selLayer.value }); });
    var ld = el("label", { text: "decimals " }, bar);
    this.selDec = el("select", { "data-testid": "decimals-select" }, ld);
    for (var k = 0; k <= this.maxDec; k++) el("option", { value: k, text: String(k) }, this.selDec);
    this.selDec.addEventListener("change", function () { self.set({ dec: +self.selDec.value }); });
    var ex = el("span", { cls: "as-export" }, bar);
    el("button", { type: "button", text: "Export PNG", "data-testid": "export-png" }, ex).addEventListener("click", function () { self.exportView("png"); });
    el("button", { type: "button", text: "Export SVG", "data-testid": "export-svg" }, ex).addEventListener("click", function () { self.exportView("svg"); });
    this.headBar = el("div", { cls: "as-heads", "data-testid": "heads" }, this.main);
    el("span", { text: "heads ", style: "color:var(--muted);font-size:13px" }, this.headBar);
    this.headBtns = [];
    for (var h = 0; h < cfg.n_heads; h++) (function (h) {
      var b = el("button", { type: "button", cls: "as-hbtn", text: String(h), title: "head " + h + " (click: toggle, double-click: only this head)",
        "data-testid": "head-" + h, style: "--c:" + headColor(h) }, self.headBar);
      b.addEventListener("click", function () {
        var s = self.state.heads.slice(), i = s.indexOf(h);
        if (i >= 0) s.splice(i, 1); else { s.push(h); s.sort(function (a, c) { return a - c; }); }
        self.set({ heads: s });
      });
      b.addEventListener("dblclick", function () { self.set({ heads: [h], focus: h }); });
      self.headBtns.push(b);
    })(h);
    el("button", { type: "button", cls: "as-small", text: "all", "data-testid": "heads-all" }, this.headBar).addEventListener("click", function () { self.set({ heads: self.allHeads() }); });
    el("button", { type: "button", cls: "as-small", text: "none", "data-testid": "heads-none" }, this.headBar).addEventListener("click", function () { self.set({ heads: [] }); });
    this.body = el("div", { cls: "as-body" }, this.main);
  };

  P.setAttention = function (att) {
    var p = this.pair(), s = this.state;
    this.set({ att: att, layer: Math.min(s.layer, p.layers(att) - 1), query: s.query !== null && s.query < p.nq(att) && (att === "encoder") === (s.att === "encoder") ? s.query : null });
  };
  P.set = function (patch) { for (var k in patch) this.state[k] = patch[k]; this.render(); };

  P.render = function () {
    var s = this.state, p = this.pair(), self = this;
    for (var a in this.attBtns) this.attBtns[a].classList.toggle("on", a === s.att);
    for (var v in this.tabs) this.tabs[v].classList.toggle("on", v === s.view);
    this.selLayer.innerHTML = "";
    for (var l = 0; l < p.layers(s.att); l++) el("option", { value: l, text: String(l) }, this.selLayer);
    this.selLayer.value = String(s.layer);
    this.selDec.value = String(s.dec);
    if (this.selText) this.selText.value = String(s.text);
    this.headBar.style.display = s.view === "head" ? "" : "none";
    this.layerLabel.style.display = s.view === "model" ? "none" : "";
    this.headBtns.forEach(function (b, h) { b.classList.toggle("off", self.state.heads.indexOf(h) < 0); });
    this.body.innerHTML = ""; this.hideTip();
    this.root.setAttribute("data-view", s.view); this.root.setAttribute("data-attention", s.att);
    el("div", { cls: "as-note", "data-testid": "attention-note", text: TITLE_OF(s.att) + ": " + WHAT[s.att] + "." + this.biasNote() }, this.body);
    if (s.view === "head") this.renderHead();
    else if (s.view === "model") this.renderModel();
    else this.renderStep();
    this.writeHash();
  };
  function TITLE_OF(att) { for (var i = 0; i < ATT.length; i++) if (ATT[i][0] === att) return ATT[i][1]; return att; }
  P.biasNote = function () {
    var s = this.state, cfg = this.cfg;
    if (this.pair().hasBias(s.att)) return " Scores are q·k plus T5's learned relative position bias (" + cfg.bias.num_buckets + " buckets up to distance " +
      cfg.bias.max_distance + ", " + (s.att === "encoder" ? "bidirectional" : "causal") + ", shared by every layer of the stack), not divided by √d_k.";
    if (cfg.scoring === "unscaled") return " Scores are q·k, not divided by √d_k (cross-attention has no position bias).";
    return " Scores are q·k ÷ √" + cfg.d_head + ".";
  };

  // ---- head view ---------------------------------------------------------------------------------
  P.minWeight = function (only) {
    if (only !== null) return 0;
    var s = this.state, p = this.pair(), n = p.nq(s.att) * p.nk(s.att), bins = new Float64Array(1001), total = 0;
    for (var hi = 0; hi < s.heads.length; hi++) {
      var W = p.weights(s.att, s.layer, s.heads[hi]);
      for (var i = 0; i < n; i++) if (W[i] > 0) { bins[Math.min(1000, Math.floor(W[i] * 1000))]++; total++; }
    }
    var kept = total, b = 0;
    while (kept > LINE_BUDGET && b < 1000) { kept -= bins[b]; b++; }
    return b / 1000;
  };
  P.headGeo = function () {
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
          if (w > 0 && w >= minw) buckets[Math.min(15, Math.floor(w * 16))].push(x0, y0 + i * ROW + ROW / 2, x1, y0 + j * ROW + ROW / 2);
        }
      for (b = 0; b < 16; b++) { var a = (b + 0.5) / 16; pn.lines(buckets[b], headColor(h), Math.min(1, a * (nh > 1 ? 0.9 : 1)), a < 0.4 ? 1 : 1 + 2 * a); }
    }
    return minw;
  };
  P.sides = function () {
    var att = this.state.att;
    return att === "encoder" ? ["source (queries)", "source (keys)"] : att === "self" ? ["target (queries)", "target (keys)"] : ["target (queries)", "source (keys, values)"];
  };
  P.renderHead = function () {
    var self = this, p = this.pair(), s = this.state, qt = p.qTokens(s.att), kt = p.kTokens(s.att), g = this.geo = this.headGeo();
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
      note.textContent = "Left: " + sides[0] + "; right: " + sides[1] + ". Line opacity = attention weight" +
        (minw > 0 ? " (weights below " + show(minw, 3) + " are not drawn until you hover or pick a query)" : "") +
        ". Hover a query for its row; click to select it, double-click for its step-by-step calculation.";
      var q = s.hover !== null ? s.hover : s.query;
      self.kEls.forEach(function (e, j) { e.classList.toggle("hid-causal", q !== null && p.hidden(s.att, q, j)); });
    };
    this.qEls = []; this.kEls = [];
    qt.forEach(function (t, i) {
      self.qEls.push(el("div", { cls: "as-tok q" + (s.query === i ? " sel" : ""), "data-i": i, "data-testid": "q-" + i,
        style: "top:" + (g.top + i * ROW + 1) + "px;left:0;width:" + g.tokW + "px", text: tokLabel(t) }, box));
    });
    kt.forEach(function (t, j) {
      self.kEls.push(el("div", { cls: "as-tok k", "data-j": j, "data-testid": "k-" + j,
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
      lines.push("query " + i + ": " + qt[i] + "  (" + TITLE_OF(s.att).toLowerCase() + " layer " + s.layer + ")");
      s.heads.slice(0, 12).forEach(function (h) {
        var w = p.steps(s.att, s.layer, h, i).weights, best = 0;
        for (var j = 1; j < w.length; j++) if (w[j] > w[best]) best = j;
        lines.push("head " + h + ": max " + show(w[best], dec) + " → " + best + " " + kt[best]);
      });
      lines.push("click: select · double-click: step view");
    } else {
      var j = +e.getAttribute("data-j"), q = s.hover !== null ? s.hover : s.query;
      lines.push("key " + j + ": " + kt[j]);
      if (q === null) lines.push("hover or select a query on the left");
      else s.heads.forEach(function (h) {
        var w = p.steps(s.att, s.layer, h, q).weights[j];
        lines.push("head " + h + ": weight(" + qt[q] + " → " + kt[j] + ") = " + show(w, dec) + "   exact " + String(w));
      });
    }
    return lines.join("\n");
  };
  P.paintHead = function (pn, w, h) {
    var p = this.pair(), s = this.state, g = this.geo || this.headGeo(), qt = p.qTokens(s.att), kt = p.kTokens(s.att), top = 52, sides = this.sides();
    pn.rect(0, 0, w, h, "#fff");
    pn.text(8, 14, this.data.model + " · " + TITLE_OF(s.att) + " attention · layer " + s.layer + " · " +
      (s.heads.length === this.cfg.n_heads ? "all heads" : s.heads.length ? "heads " + s.heads.join(",") : "no heads"), { bold: true });
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
    el("div", { cls: "as-note", text: "Every layer × head of the " + TITLE_OF(s.att).toLowerCase() + " attention: rows = " + this.sides()[0] +
      ", columns = " + this.sides()[1] + " (colours scaled to each head's largest weight). Click one to open it in the head view." }, this.body);
    var grid = el("div", { cls: "as-mv", "data-testid": "model-view", style: "grid-template-columns:56px repeat(" + cfg.n_heads + ",72px)" }, this.body);
    el("div", {}, grid);
    for (var h = 0; h < cfg.n_heads; h++) el("div", { cls: "as-lab", text: "head " + h }, grid);
    for (var l = 0; l < L; l++) {
      el("div", { cls: "as-lab", text: "layer " + l }, grid);
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
      self.showTip(ev, "layer " + ll + " · head " + hh + "\n" + p.qTokens(s.att)[i] + " → " + p.kTokens(s.att)[j] + ": " + show(w, s.dec) + "\nclick to open");
    });
    grid.addEventListener("mouseleave", function () { self.hideTip(); });
  };
  P.paintModel = function (pn) {
    var cfg = this.cfg, S = 64, G = 8, x0 = 64, y0 = 44, L = this.pair().layers(this.state.att);
    pn.rect(0, 0, x0 + cfg.n_heads * (S + G), y0 + L * (S + G), "#fff");
    pn.text(8, 14, this.data.model + " · " + TITLE_OF(this.state.att) + " attention · every layer × head", { bold: true });
    for (var h = 0; h < cfg.n_heads; h++) pn.text(x0 + h * (S + G) + S / 2, y0 - 10, "head " + h, { size: 11, anchor: "middle" });
    for (var l = 0; l < L; l++) {
      pn.text(8, y0 + l * (S + G) + S / 2, "layer " + l, { size: 11 });
      for (h = 0; h < cfg.n_heads; h++) pn.image(this.thumb(l, h), x0 + h * (S + G), y0 + l * (S + G), S, S);
    }
  };

  // ---- step view ---------------------------------------------------------------------------------
  P.columns = function () {
    var s = this.state, p = this.pair(), cfg = this.cfg, bias = p.hasBias(s.att), cols = ["#", "key"];
    if (bias) cols.push("δ = j − i", "bucket", "bias b");
    cols.push("raw q·k", bias ? "scaled s = q·k + b" : cfg.scoring === "unscaled" ? "scaled s = q·k × 1" : "scaled s = q·k ÷ √" + cfg.d_head);
    return cols;
  };
  P.renderStep = function () {
    var self = this, p = this.pair(), s = this.state, cfg = this.cfg, dec = s.dec, qt = p.qTokens(s.att), kt = p.kTokens(s.att);
    var wrap = el("div", { cls: "as-sv", "data-testid": "step-view" }, this.body), ctl = el("div", { cls: "as-ctl" }, wrap);
    var selQ = el("select", { "data-testid": "query-select" }, el("label", { text: "query token " }, ctl));
    el("option", { value: "", text: "— pick one —" }, selQ);
    qt.forEach(function (t, i) { el("option", { value: i, text: i + ": " + tokLabel(t) }, selQ); });
    selQ.value = s.query === null ? "" : String(s.query);
    selQ.addEventListener("change", function () { self.set({ query: selQ.value === "" ? null : +selQ.value }); });
    var selH = el("select", { "data-testid": "focus-head-select" }, el("label", { text: "head " }, ctl));
    for (var h = 0; h < cfg.n_heads; h++) el("option", { value: h, text: String(h) }, selH);
    selH.value = String(s.focus);
    selH.addEventListener("change", function () { self.set({ focus: +selH.value }); });
    if (s.query === null) {
      el("div", { cls: "as-note", text: "Pick a query token (" + this.sides()[0] + "), or double-click one in the head view." }, wrap);
      return;
    }
    var q = s.query, st = p.steps(s.att, s.layer, s.focus, q), bias = p.hasBias(s.att), j;
    var where = s.att === "cross" ? "q from the decoder's state of target token " + q + " “" + tokLabel(qt[q]) + "”, k and v from the encoder's output of every source token"
      : s.att === "self" ? "q, k and v from the decoder's states of the target tokens; keys after the query are hidden (causal)"
      : "q, k and v from the encoder's states of the source tokens";
    el("div", { cls: "as-note", "data-testid": "step-caption", text: TITLE_OF(s.att) + " attention, layer " + s.layer + ", head " + s.focus + ", query " + q + " “" + tokLabel(qt[q]) +
      "”: " + where + "; d_k = " + cfg.d_head + "." + (bias ? " b is head " + s.focus + "'s learned bias for the bucket of the distance δ = j − i (T5 does not divide by √d_k)." : "") +
      (st.shift ? " The largest score exceeds " + this.data.exp_show_limit + ", so it is subtracted before exp (the weights are unchanged)." : "") + " Hover a number for its exact value." }, wrap);
    var box = el("div", { cls: "as-wrap" }, wrap), table = el("table", { "data-testid": "step-table" }, box), tr = el("tr", {}, el("thead", {}, table));
    var masks = false;
    for (j = 0; j < kt.length; j++) if (p.hidden(s.att, q, j)) masks = true;
    this.columns().concat([st.shift ? "exp(s − " + show(st.shift, dec) + ")" : "exp(s)", "weight"], masks ? ["hidden because"] : []).forEach(function (x, i) { el("th", { text: x, cls: i === 1 ? "tok" : "" }, tr); });
    var tbody = el("tbody", {}, table), best = 0, frag = document.createDocumentFragment();
    for (j = 1; j < kt.length; j++) if (st.weights[j] > st.weights[best]) best = j;
    var cell = function (row, name, x) { return el("td", { "data-col": name, "data-value": String(x), title: "exact: " + String(x), text: show(x, dec) }, row); };
    for (j = 0; j < kt.length; j++) {
      var hid = p.hidden(s.att, q, j), row = el("tr", { "data-j": j, "data-testid": "step-row-" + j, cls: (j === best ? "max" : "") + (hid ? " masked causal" : "") }, frag);
      el("td", { text: String(j) }, row); el("td", { cls: "tok", text: tokLabel(kt[j]) }, row);
      if (bias) { el("td", { "data-col": "delta", text: String(j - q) }, row); el("td", { "data-col": "bucket", text: String(p.bucket(s.att, q, j)) }, row); cell(row, "bias", st.bias[j]); }
      cell(row, "raw", st.raw[j]); cell(row, "scaled", st.scaled[j]); cell(row, "exp", st.exp[j]);
      el("span", { cls: "as-bar-w", style: "width:" + Math.round(60 * st.weights[j]) + "px" }, cell(row, "weight", st.weights[j]));
      if (masks) el("td", { cls: "why", text: hid ? "later token (causal mask)" : "" }, row);
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
    el("div", { cls: "as-note", text: "weighted sum z = Σ_j weight_j · v_j (" + cfg.d_head + " numbers, head " + s.focus + "'s slice of the new vector of “" + tokLabel(qt[q]) + "”" +
      (s.att === "cross" ? "; the v_j are the source's values" : "") + "):" }, out);
    for (j = 0; j < st.out.length; j++) el("span", { "data-col": "out", "data-value": String(st.out[j]), title: "z[" + j + "] exact: " + String(st.out[j]), text: show(st.out[j], dec) }, out);
  };
  P.paintStep = function (pn, w, h) {
    var p = this.pair(), s = this.state, dec = s.dec, kt = p.kTokens(s.att), qt = p.qTokens(s.att);
    pn.rect(0, 0, w, h, "#fff");
    if (s.query === null) { pn.text(10, 20, "no query token selected", {}); return; }
    var st = p.steps(s.att, s.layer, s.focus, s.query), bias = p.hasBias(s.att), heads = this.columns().concat([st.shift ? "exp(s − m)" : "exp(s)", "weight"]);
    var widths = [30, 130].concat(bias ? [70, 60, 100] : [], [110, 150, 120, 100]), x = 10, cx = [], y = 16, c;
    for (c = 0; c < widths.length; c++) { cx.push(x); x += widths[c]; }
    pn.text(10, y, this.data.model + " · " + TITLE_OF(s.att) + " · layer " + s.layer + " · head " + s.focus + " · query " + s.query + " “" + tokLabel(qt[s.query]) + "”", { bold: true });
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

  // ---- export ------------------------------------------------------------------------------------
  P.viewSize = function () {
    var s = this.state, p = this.pair(), g = this.geo || this.headGeo();
    if (s.view === "head") return [2 * g.tokW + g.lineW, 60 + Math.max(p.nq(s.att), p.nk(s.att)) * ROW];
    if (s.view === "model") return [64 + this.cfg.n_heads * 72, 44 + p.layers(s.att) * 72];
    return [p.hasBias(s.att) ? 900 : 680, 60 + (p.nk(s.att) + 3) * ROW + Math.ceil(this.cfg.d_head / 8) * ROW + 20];
  };
  P.paintView = function (pn, w, h) {
    var v = this.state.view;
    if (v === "head") this.paintHead(pn, w, h); else if (v === "model") this.paintModel(pn, w, h); else this.paintStep(pn, w, h);
  };
  P.exportBlob = function (kind) {
    var self = this, size = this.viewSize(), w = size[0], h = size[1];
    return U.fontsReady(this.pair().src.join("") + this.pair().tgt.join("")).then(function () {
      if (kind === "svg") { var sp = new A.SvgPainter(w, h, self.fontCss); self.paintView(sp, w, h); return new Blob([sp.toString()], { type: "image/svg+xml" }); }
      var scale = Math.min(2, 16000 / Math.max(w, h)), c = document.createElement("canvas");
      c.width = Math.round(w * scale); c.height = Math.round(h * scale);
      var ctx = c.getContext("2d"); ctx.scale(scale, scale);
      self.paintView(new A.CanvasPainter(ctx), w, h);
      return new Promise(function (res) { c.toBlob(res, "image/png"); });
    });
  };
  P.exportName = function (kind) {
    var s = this.state;
    return "attnscope-" + s.att + "-" + s.view + "-layer" + s.layer + (s.view === "step" ? "-head" + s.focus + "-q" + s.query : "") + "." + kind;
  };
  P.exportView = A.Viewer.prototype.exportView;

  var baseMount = A.mount;
  A.mount = function (root, data, opts) {
    if (typeof root === "string") root = document.querySelector(root);
    if ((data && data.seq2seq) || (opts && opts.server && opts.server.seq2seq)) return new S2S(root, data, opts);
    return baseMount(root, data, opts);
  };
  A.Seq2SeqViewer = S2S;
})(window.attnscope);
