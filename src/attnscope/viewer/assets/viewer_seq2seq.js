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
 * out), in viewer_seq2seq_views.js. Every view exports as PNG and SVG; the address
 * (#att=cross&view=step&layer=1&head=2&query=3) reopens a state.
 */
(function (A) {
  "use strict";
  if (!A || !A.util || A.Seq2SeqViewer) return;
  var U = A.util, el = U.el, ROW = U.ROW, headColor = U.headColor;
  var ATT = [["encoder", "Encoder"], ["self", "Decoder"], ["cross", "Cross"]];
  var WHAT = {
    encoder: "encoder self-attention: source tokens attend to source tokens",
    self: "decoder self-attention (causal): each target token attends to itself and the target tokens before it",
    cross: "cross-attention: target tokens (queries, from the decoder) attend to source tokens (keys and values, from the encoder's output)"
  };
  var VIEWS = [["head", "Head view"], ["model", "Model view"], ["step", "Step view"]];

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
  // what the two viewers share: the tooltip, the served page's font, the address, the heads, export
  var P = S2S.prototype, V = A.Viewer.prototype;
  P.showTip = V.showTip;
  P.hideTip = V.hideTip;
  P.setFontCss = V.setFontCss;

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
    return U.postJson(this.opts.server.endpoint || "api/view", body)
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

  P.allHeads = V.allHeads;
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
  P.writeHash = V.writeHash;
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
    var ex = el("span", { cls: "as-export", text: "save" }, bar);  // one toolbar line at 800 px (#23)
    el("button", { type: "button", text: "PNG", title: "Export the view as PNG", "data-testid": "export-png" }, ex).addEventListener("click", function () { self.exportView("png"); });
    el("button", { type: "button", text: "SVG", title: "Export the view as SVG", "data-testid": "export-svg" }, ex).addEventListener("click", function () { self.exportView("svg"); });
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
      return U.paintBlob(kind, w, h, self.fontCss, function (pn) { self.paintView(pn, w, h); });
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
  S2S.title = TITLE_OF;  // for viewer_seq2seq_views.js
  A.Seq2SeqViewer = S2S;
})(window.attnscope);
