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
  var U = A.util, el = U.el, ROW = U.ROW, headColor = U.headColor, tr = A.tr;
  // the three attentions: name, tab (strings table), what it is
  var ATT = [["encoder", "viewer.s2s_encoder", "viewer.s2s_what_encoder"], ["self", "viewer.s2s_decoder", "viewer.s2s_what_self"],
    ["cross", "viewer.s2s_cross", "viewer.s2s_what_cross"]];
  var VIEWS = [["head", "viewer.tab_head"], ["model", "viewer.tab_model"], ["step", "viewer.tab_step"]];

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
  // the tokenizer's own pieces (T5's ▁the) beside the labels shown; the labels where the data has none
  Pair.prototype.qPieces = function (att) { return (att === "encoder" ? this.entry.source_pieces : this.entry.target_pieces) || this.qTokens(att); };
  Pair.prototype.kPieces = function (att) { return (att === "self" ? this.entry.target_pieces : this.entry.source_pieces) || this.kTokens(att); };
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
  // One row worked out: raw q·k, bias, scaled s = factor·q·k + bias (−∞ where hidden), then exp, Σ,
  // weights and z as the one-text page's (U.rowSteps).
  Pair.prototype.steps = function (att, layer, head, i) {
    var q = this.vec(att, layer, 0, head), k = this.vec(att, layer, 1, head);
    var nk = this.nk(att), d = this.d, f = this.cfg.factor, j, t;
    var raw = new Float64Array(nk), b = new Float64Array(nk), s = new Float64Array(nk);
    for (j = 0; j < nk; j++) {
      var acc = 0;
      for (t = 0; t < d; t++) acc += q[i * d + t] * k[j * d + t];
      raw[j] = acc; b[j] = this.bias(att, head, i, j);
      s[j] = this.hidden(att, i, j) ? -Infinity : acc * f + b[j];
    }
    var st = U.rowSteps(raw, s, this.vec(att, layer, 2, head), d, this.limit);
    st.bias = b;
    return st;
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
  // The one-text viewer's constructor (language, root, tooltip, the served page's form, then
  // setData), with this viewer's form and data; its resize rule reads headGeo, which this one lacks.
  function S2S(root, data, opts) { A.Viewer.call(this, root, data, opts); }
  // what the two viewers share: the tooltip, the served page's font, the address, the heads, the
  // state's changes and the language switch, export
  var P = S2S.prototype, V = A.Viewer.prototype;
  ["showTip", "hideTip", "setFontCss", "buildToolbar", "set", "setLang", "allHeads", "writeHash", "submit", "exportView"]
    .forEach(function (name) { P[name] = V[name]; });

  P.buildForm = function () {
    var self = this, srv = this.opts.server, intro = el("div", { cls: "as-intro", "data-testid": "intro" }, this.root), w = this.formEls = {};
    el("h1", { text: "attnscope" + (srv.model ? " · " + srv.model : "") }, intro);
    w.intro = el("p", {}, intro);
    var api = el("p", { cls: "as-note" }, intro);
    w.api = el("span", {}, api); w.docs = el("a", { href: "docs" }, api);
    var f = el("form", { cls: "as-form", "data-testid": "form" }, this.root);
    var l1 = el("label", {}, f);
    w.source = el("span", {}, l1);
    this.inSource = el("textarea", { name: "source", "data-testid": "source-input" }, l1);
    var l2 = el("label", {}, f);
    w.target = el("span", {}, l2);
    this.inTarget = el("textarea", { name: "target", "data-testid": "target-input" }, l2);
    [this.inSource, this.inTarget].forEach(function (box) {
      box.addEventListener("keydown", function (ev) { if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); self.submit(); } });
    });
    w.submit = el("button", { type: "submit", "data-testid": "submit" }, f);
    this.formMsg = el("div", { "data-testid": "form-message" }, this.root);
    f.addEventListener("submit", function (ev) { ev.preventDefault(); self.submit(); });
    this.formWords();
  };
  P.formWords = function () {
    var w = this.formEls, srv = this.opts.server, lim;
    if (!w) return;  // a page without the form (setLang asks every page)
    lim = srv.maxChars ? tr("viewer.up_to", { n: srv.maxChars }) : "";
    w.intro.textContent = tr("viewer.s2s_intro"); w.api.textContent = tr("viewer.api"); w.docs.textContent = tr("viewer.api_docs");
    w.source.textContent = tr("viewer.s2s_source") + lim; w.target.textContent = tr("viewer.s2s_target") + lim;
    this.inSource.setAttribute("placeholder", tr("viewer.s2s_source_ph")); this.inTarget.setAttribute("placeholder", tr("viewer.s2s_target_ph"));
    w.submit.textContent = tr("viewer.submit");
    if (this.formMsg.getAttribute("data-computing")) this.formMsg.textContent = tr("viewer.computing");
  };

  // submit() is the one-text form's (viewer_form.js) with this body; a failed answer clears the
  // drawing but keeps the state (the language switch reads it)
  P.formBody = function () { return { source: this.inSource.value, target: this.inTarget.value }; };
  P.clear = function () { this.main.innerHTML = ""; this.data = null; this.root.removeAttribute("data-ready"); };

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
        dec: Math.min(data.decimals, self.maxDec), lang: A.lang };
      self.applyHash(); self.root.setAttribute("lang", A.lang === "zh" ? "zh-CN" : "en"); self.build(); self.render();
      return new Promise(function (res) { requestAnimationFrame(function () { self.root.setAttribute("data-ready", "1"); res(self); }); });
    }).catch(function (e) {
      self.main.innerHTML = "";
      el("div", { cls: "as-err", text: "attnscope viewer: " + (e.message || e) }, self.main);
      throw e;
    });
  };

  P.pair = function () { return this.pairs[this.state.text]; };

  P.hashOf = function () {
    var s = this.state, parts = ["att=" + s.att, "view=" + s.view, "layer=" + s.layer];
    if (this.pairs.length > 1) parts.push("text=" + s.text);
    if (s.view === "step") parts.push("head=" + s.focus);
    if (s.view === "head" && s.heads.length !== this.cfg.n_heads) parts.push("heads=" + s.heads.join(","));
    if (s.query !== null && s.view !== "model") parts.push("query=" + s.query);
    if (s.dec !== this.data.decimals) parts.push("dec=" + s.dec);
    if (s.lang !== (this.opts.lang || "en")) parts.push("lang=" + s.lang);
    return "#" + parts.join("&");
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
    if (kv.lang && (A.strings || {})[kv.lang]) s.lang = A.lang = kv.lang;
    if (kv.heads) {
      var hs = kv.heads.split(",").map(function (h) { return int(h, self.cfg.n_heads); }).filter(function (h) { return h !== null; });
      if (hs.length) s.heads = hs.sort(function (a, b) { return a - b; });
    }
  };

  P.build = function () {
    var self = this, d = this.data, cfg = this.cfg;
    this.main.innerHTML = "";
    var top = el("div", { cls: "as-top" }, this.main);
    el("span", { cls: "as-title", text: tr("viewer.s2s_title", { model: d.model, enc: cfg.n_layers, dec: cfg.n_decoder_layers, heads: cfg.n_heads }) }, top);
    if (this.pairs.length > 1) {
      var lt = el("label", { text: tr("viewer.s2s_pair") }, top);
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
      var b = el("button", { type: "button", text: tr(a[1]), "data-testid": "att-" + a[0], title: tr(a[2]) }, at);
      b.addEventListener("click", function () { self.setAttention(a[0]); });
      self.attBtns[a[0]] = b;
    });
    this.buildToolbar(bar, VIEWS, 0);  // the layer options follow the attention (setAttention)
    // the language switch ends the title's line, as in the one-text viewer
    var lg = el("span", { cls: "as-export as-lang", title: tr("viewer.language"), "data-testid": "lang" }, top);
    A.LANGS.forEach(function (l) {
      el("button", { type: "button", cls: l[0] === A.lang ? "on" : "", text: l[1], "data-testid": "lang-" + l[0] }, lg)
        .addEventListener("click", function () { self.setLang(l[0]); });
    });
    this.headBar = el("div", { cls: "as-heads", "data-testid": "heads" }, this.main);
    el("span", { text: tr("viewer.heads"), style: "color:var(--muted);font-size:13px" }, this.headBar);
    this.headBtns = [];
    for (var h = 0; h < cfg.n_heads; h++) (function (h) {
      var b = el("button", { type: "button", cls: "as-hbtn", text: String(h), title: tr("viewer.s2s_head_tip", { head: h }),
        "data-testid": "head-" + h, style: "--c:" + headColor(h) }, self.headBar);
      b.addEventListener("click", function () {
        var s = self.state.heads.slice(), i = s.indexOf(h);
        if (i >= 0) s.splice(i, 1); else { s.push(h); s.sort(function (a, c) { return a - c; }); }
        self.set({ heads: s });
      });
      b.addEventListener("dblclick", function () { self.set({ heads: [h], focus: h }); });
      self.headBtns.push(b);
    })(h);
    el("button", { type: "button", cls: "as-small", text: tr("viewer.all"), "data-testid": "heads-all" }, this.headBar).addEventListener("click", function () { self.set({ heads: self.allHeads() }); });
    el("button", { type: "button", cls: "as-small", text: tr("viewer.none"), "data-testid": "heads-none" }, this.headBar).addEventListener("click", function () { self.set({ heads: [] }); });
    this.body = el("div", { cls: "as-body" }, this.main);
  };

  P.setAttention = function (att) {
    var p = this.pair(), s = this.state;
    this.set({ att: att, layer: Math.min(s.layer, p.layers(att) - 1), query: s.query !== null && s.query < p.nq(att) && (att === "encoder") === (s.att === "encoder") ? s.query : null });
  };

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
    el("div", { cls: "as-note", "data-testid": "attention-note", text: tr("viewer.s2s_att_note", { title: TITLE_OF(s.att), what: tr(ATT_OF(s.att)[2]), bias: this.biasNote() }) }, this.body);
    if (s.view === "head") this.renderHead();
    else if (s.view === "model") this.renderModel();
    else this.renderStep();
    this.writeHash();
  };
  function ATT_OF(att) { for (var i = 0; i < ATT.length; i++) if (ATT[i][0] === att) return ATT[i]; return [att, att, att]; }
  function TITLE_OF(att) { return tr(ATT_OF(att)[1]); }
  P.biasNote = function () {
    var s = this.state, cfg = this.cfg;
    if (this.pair().hasBias(s.att)) return tr("viewer.s2s_bias_t5", { buckets: cfg.bias.num_buckets, distance: cfg.bias.max_distance,
      direction: tr(s.att === "encoder" ? "viewer.s2s_bidirectional" : "viewer.s2s_causal") });
    if (cfg.scoring === "unscaled") return tr("viewer.s2s_unscaled");
    return tr("viewer.s2s_scaled", { d: cfg.d_head });
  };

  // ---- export ------------------------------------------------------------------------------------
  P.viewSize = function () {
    var s = this.state, p = this.pair(), g = this.geo || this.pairGeo();
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

  var baseMount = A.mount;
  A.mount = function (root, data, opts) {
    if (typeof root === "string") root = document.querySelector(root);
    if ((data && data.seq2seq) || (opts && opts.server && opts.server.seq2seq)) return new S2S(root, data, opts);
    return baseMount(root, data, opts);
  };
  S2S.title = TITLE_OF;  // for viewer_seq2seq_views.js
  A.Seq2SeqViewer = S2S;
})(window.attnscope);
