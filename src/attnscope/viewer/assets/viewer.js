/* attnscope viewer: the Viewer (state, address, toolbar, the served page's form, export) and mount().
 *
 * The views are in the files after this one: viewer_form.js (the served page's form), viewer_head.js
 * (head and model views), viewer_step.js (step and context views), viewer_generation.js,
 * viewer_matrix.js; texts the server holds in viewer_remote.js; Web Workers in viewer_workers.js. The core (numbers, Text, painters) is
 * viewer_core.js.
 *
 *   attnscope.mount(element, data, options) -> viewer   (data may be null with options.server)
 */
(function (A) {
  "use strict";
  if (!A) return;
  var U = A.util, el = U.el, ROW = U.ROW, headColor = U.headColor, fontsReady = U.fontsReady,
    headGeometry = U.headGeometry, Text = A.Text;
  if (A.Viewer) return;  // a second copy in one notebook

  var tr = A.tr, LANGS = A.LANGS;


  function Viewer(root, data, opts) {
    this.root = root; this.opts = opts || {}; this.fontCss = this.opts.fontCss || "";
    if (this.opts.lang && (A.strings || {})[this.opts.lang]) A.lang = this.opts.lang;
    A.lang = A.lang || "en";
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

  // The served page's top (intro, examples, form) and its submit(): viewer_form.js.

  // The toolbar's view tabs, layer and decimals selects and export buttons (the encoder–decoder viewer's too).
  Viewer.prototype.buildToolbar = function (bar, views, nLayers) {
    var self = this, tabs = el("div", { cls: "as-tabs" }, bar);
    this.tabs = {};
    views.forEach(function (v) {
      var b = el("button", { type: "button", text: tr(v[1]), "data-testid": "tab-" + v[0] }, tabs);
      b.addEventListener("click", function () { self.set({ view: v[0] }); });
      self.tabs[v[0]] = b;
    });
    var ll = this.layerLabel = el("label", { text: tr("viewer.layer") }, bar);
    this.selLayer = el("select", { "data-testid": "layer-select" }, ll);
    for (var l = 0; l < nLayers; l++) el("option", { value: l, text: String(l) }, this.selLayer);
    this.selLayer.addEventListener("change", function () { self.set({ layer: +self.selLayer.value }); });
    var ld = el("label", { text: tr("viewer.decimals") }, bar);
    this.selDec = el("select", { "data-testid": "decimals-select" }, ld);
    for (var k = 0; k <= this.maxDec; k++) el("option", { value: k, text: String(k) }, this.selDec);
    this.selDec.addEventListener("change", function () { self.set({ dec: +self.selDec.value }); });
    var ex = el("span", { cls: "as-export", text: tr("viewer.save") }, bar);  // one toolbar line at 800 px (#23)
    el("button", { type: "button", text: "PNG", title: tr("viewer.export_png"), "data-testid": "export-png" }, ex)
      .addEventListener("click", function () { self.exportView("png"); });
    el("button", { type: "button", text: "SVG", title: tr("viewer.export_svg"), "data-testid": "export-svg" }, ex)
      .addEventListener("click", function () { self.exportView("svg"); });
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
        dec: Math.min(data.decimals, self.maxDec), lang: A.lang };
      self.applyHash();
      self.root.setAttribute("lang", A.lang === "zh" ? "zh-CN" : "en");
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
  var VIEWS = [["head", "viewer.tab_head"], ["model", "viewer.tab_model"], ["matrix", "viewer.tab_matrix"], ["step", "viewer.tab_step"],
    ["context", "viewer.tab_context"]];
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
    if (s.lang !== (this.opts.lang || "en")) parts.push("lang=" + s.lang);
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
      else if (k === "lang" && (A.strings || {})[v]) s.lang = A.lang = v;
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
    el("span", { cls: "as-title", text: tr("viewer.title", { model: d.model, layers: cfg.n_layers, heads: cfg.n_heads }) }, top);
    var bar = el("div", { cls: "as-bar" }, this.main);
    if (this.texts.length > 1) {
      var lt = el("label", { text: tr("viewer.text") }, top);
      this.selText = el("select", { "data-testid": "text-select" }, lt);
      this.texts.forEach(function (t, i) {
        var label = (t.entry.text || t.tokens.join(" ")); if (label.length > 60) label = label.slice(0, 59) + "…";
        el("option", { value: i, text: (i + 1) + ": " + label }, self.selText);
      });
      this.selText.addEventListener("change", function () { self.set({ text: +self.selText.value, query: null }); });
    }
    // the language switch, at the end of the title line (the toolbar below is full at 800 px): the
    // page's words change in place, the view and its state stay
    var lg = el("span", { cls: "as-export as-lang", title: tr("viewer.language"), "data-testid": "lang" }, top);
    LANGS.forEach(function (l) {
      el("button", { type: "button", cls: l[0] === A.lang ? "on" : "", text: l[1], "data-testid": "lang-" + l[0] }, lg)
        .addEventListener("click", function () { self.setLang(l[0]); });
    });
    this.buildToolbar(bar, (d.generation ? [["generation", "viewer.tab_generation"]] : []).concat(VIEWS), cfg.n_layers);

    this.headBar = el("div", { cls: "as-heads", "data-testid": "heads" }, this.main);
    el("span", { text: tr("viewer.heads"), style: "color:var(--muted);font-size:13px" }, this.headBar);
    this.headBtns = [];
    var Hkv = cfg.n_kv_heads || cfg.n_heads, group = cfg.n_heads / Hkv;
    for (var h = 0; h < cfg.n_heads; h++) (function (h) {
      var g = Math.floor(h / group), shared = Hkv < cfg.n_heads;
      var b = el("button", { type: "button", cls: "as-hbtn" + (shared && h % group === 0 && h ? " as-gap" : ""), text: String(h),
        title: tr("viewer.head_tip", { head: h }) + (shared ? tr("viewer.head_tip_kv", { kv: g, first: g * group, last: g * group + group - 1 }) : "") +
          tr("viewer.head_tip_click"),
        "data-testid": "head-" + h, "data-kv": g, style: "--c:" + headColor(h) }, self.headBar);
      b.addEventListener("click", function () {
        var s = self.state.heads.slice(), i = s.indexOf(h);
        if (i >= 0) s.splice(i, 1); else { s.push(h); s.sort(function (a, b) { return a - b; }); }
        self.set({ heads: s, focus: s.indexOf(self.state.focus) >= 0 || !s.length ? self.state.focus : s[0] });
      });
      b.addEventListener("dblclick", function () { self.set({ heads: [h], focus: h }); });
      self.headBtns.push(b);
    })(h);
    if (Hkv < cfg.n_heads) el("span", { cls: "as-kvnote", "data-testid": "kv-note", text: (Hkv === 1 ? tr("viewer.mqa", { n: cfg.n_heads }) :
      tr("viewer.gqa", { n: cfg.n_heads, kv: Hkv, group: group, groups: this.kvGroupsText() })) }, this.headBar);
    el("button", { type: "button", cls: "as-small", text: tr("viewer.all"), "data-testid": "heads-all" }, this.headBar)
      .addEventListener("click", function () { self.set({ heads: self.allHeads() }); });
    el("button", { type: "button", cls: "as-small", text: tr("viewer.none"), "data-testid": "heads-none" }, this.headBar)
      .addEventListener("click", function () { self.set({ heads: [] }); });
    this.unkNote = el("div", { cls: "as-warn", "data-testid": "unk-note", style: "display:none" }, this.main);
    this.body = el("div", { cls: "as-body" }, this.main);
  };

  // Tokens the vocabulary does not know are all one placeholder ([UNK], <unk>): the model reads
  // none of those characters, so say how many there are and which installed model reads them (#23);
  // multilingual-e5-small's own page says the first part only (it is the model the note names).
  // SPECIAL: attnscope.viewer.context.SPECIAL (a test holds the two the same)
  var UNKNOWN = { "[UNK]": 1, "<unk>": 1 }, SPECIAL = { "[CLS]": 1, "[SEP]": 1, "[PAD]": 1, "<s>": 1, "</s>": 1,
    "<pad>": 1, "<|endoftext|>": 1, "<bos>": 1, "<eos>": 1, "<|begin_of_text|>": 1 };
  A.SPECIAL = SPECIAL;
  function unknownNote(tokens, model) {
    var unk = 0, all = 0;
    for (var i = 0; i < tokens.length; i++) {
      if (SPECIAL[tokens[i]]) continue;
      all++;
      if (UNKNOWN[tokens[i]]) unk++;
    }
    if (!unk) return "";
    var piece = tokens.filter(function (t) { return UNKNOWN[t]; })[0];
    var own = /multilingual-e5/.test(model || "");  // e5's own page does not send its reader to e5
    if (unk === 1) return tr(own ? "viewer.unk_one_self" : "viewer.unk_one", { all: all, piece: piece });
    return tr(own ? "viewer.unk_many_self" : "viewer.unk_many", { unk: unk, all: all, piece: piece });
  }
  A.unknownNote = unknownNote;

  // "k/v 0: q 0–2 · k/v 1: q 3–5 · …"
  Viewer.prototype.kvGroupsText = function () {
    var cfg = this.cfg, Hkv = cfg.n_kv_heads || cfg.n_heads, group = cfg.n_heads / Hkv, parts = [];
    for (var g = 0; g < Hkv; g++) parts.push("k/v " + g + ": q " + (g * group) + (group > 1 ? "–" + (g * group + group - 1) : ""));
    return parts.join(" · ");
  };

  // Switch the page's words to ``lang`` (en, zh): the toolbar is built again, the view drawn again.
  Viewer.prototype.setLang = function (lang) {
    if (!(A.strings || {})[lang]) return;
    A.lang = this.state.lang = lang;
    this.root.setAttribute("lang", lang === "zh" ? "zh-CN" : "en");
    if (this.formWords) this.formWords();
    this.build();
    return this.render();
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
    var note = unknownNote(this.text().tokens, this.data.model);
    this.unkNote.textContent = note; this.unkNote.style.display = note ? "" : "none";
    this.layerLabel.style.display = s.view === "head" || s.view === "step" || s.view === "matrix" ? "" : "none";  // the others show every layer
    if (s.view === "generation" && !this.data.generation) s.view = "head";
    for (var h = 0; h < this.headBtns.length; h++) this.headBtns[h].classList.toggle("off", s.heads.indexOf(h) < 0);
    var keep = s.view === "head" && this.keepsHead();  // the head view's tokens stay (viewer_head.js)
    if (keep) [].slice.call(this.body.querySelectorAll(".as-loading")).forEach(function (e) { e.remove(); });
    else { this.body.innerHTML = ""; this.hv = null; }
    this.hideTip();
    if (this.observer) { this.observer.disconnect(); this.observer = null; }
    this.root.setAttribute("data-view", s.view);
    var wait = this.pending ? this.pending() : null;  // a Promise while data is on its way; it renders again
    if (wait) { this.writeHash(); return wait; }
    if (s.view === "head") { if (keep) this.updateHead(); else this.renderHead(); }
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

  // While a view waits for its data: a line saying what is on its way (data-testid "loading"),
  // over a kept head view (its lines cleared) or alone in the body.
  Viewer.prototype.showLoading = function (text) {
    var d = el("div", { cls: "as-loading", "data-testid": "loading", text: text });
    if (this.state.view === "head" && this.keepsHead()) this.headWaiting(d);
    else { this.body.innerHTML = ""; this.hv = null; this.body.appendChild(d); }
    return d;
  };

  // ---- export ------------------------------------------------------------------------------------
  Viewer.prototype.viewSize = function () {
    var s = this.state, t = this.text(), cfg = this.cfg;
    if (s.view === "head") { var g = this.headGeo || headGeometry(t.tokens, 0); return [2 * g.tokW + g.lineW, 40 + t.n * ROW]; }
    if (s.view === "model") return [64 + cfg.n_heads * 72, 44 + cfg.n_layers * 72];
    if (s.view === "step") return this.stepSize();
    if (s.view === "matrix") return this.matrixSize();
    if (s.view === "generation") return this.generationSize();
    return this.compareSize();
  };

  Viewer.prototype.paintView = function (p, w, h) {
    var v = this.state.view;
    if (v === "head") this.paintHead(p, w, h);
    else if (v === "model") this.paintModel(p, w, h);
    else if (v === "step") this.paintStep(p, w, h);
    else if (v === "matrix") this.paintMatrix(p, w, h);
    else if (v === "generation") this.paintGeneration(p, w, h);
    else if (this.data.compare) this.paintCompare(p, w, h);
    else { p.rect(0, 0, w, h, "#fff"); p.text(10, 20, tr("viewer.no_comparison"), {}); }
  };

  // The current view as a PNG Blob (2× pixels) or an SVG string.
  Viewer.prototype.exportBlob = function (kind) {
    var self = this, size = this.viewSize(), w = size[0], h = size[1];
    return fontsReady(this.allText()).then(function () {
      return U.paintBlob(kind, w, h, self.fontCss, function (p) { self.paintView(p, w, h); });
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

  A.Viewer = Viewer; A.mount = mount;
})(window.attnscope);
