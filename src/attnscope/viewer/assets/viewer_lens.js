/* attnscope viewer: the lens view (issue 28 item 1), a tab of its own on pages of a language model.
 *
 * A page written with the lens (attnscope/viewer/lens_view.py) carries per text attnscope.lens.logit_lens's
 * numbers: at every residual point p (embed, each layer's attn_resid and out) and position i, the
 * top k token ids (ids, P × L × k) and their probabilities (top_probs, float32), the probability
 * and rank of the token the model finally predicts at i (target_prob, target_rank, P × L) and
 * KL(P_final ‖ P_point) in nats (kl). The grid draws one row per point, the last layer's output at
 * the top and the embedding at the bottom (as `attnscope lens`'s figure), one column per position:
 * the top token, its cell coloured by its probability; the tooltip lists the top k, the final
 * prediction's probability and rank there, and the KL. Every number is shown as stored (float32),
 * at the page's decimals; data-* attributes carry them whole. A text past the page's limit carries
 * no grid: the view says so in a sentence. PNG/SVG export paints the same grid.
 */
(function (A) {
  "use strict";
  if (!A || !A.Viewer || A.Viewer.prototype.renderLens) return;
  var V = A.Viewer.prototype, T = A.Text.prototype, U = A.util, el = U.el, tr = A.tr, show = A.show, tokLabel = U.tokLabel;
  var CW = 64, CH = 18, LABW = 118;  // a cell's width and height, the row labels' width (px; export)

  var CSS = ".as-lzwrap{overflow:auto;max-height:calc(100vh - 190px);max-width:100%;width:fit-content;" +
    "border:1px solid var(--line);border-radius:4px}" +
    ".as-lz{border-collapse:separate;border-spacing:0;font-size:12px;font-variant-numeric:tabular-nums;table-layout:fixed}" +
    ".as-lz th{background:#f9fafb;font-weight:600;padding:2px 4px;white-space:pre;max-width:" + CW + "px;overflow:hidden;" +
    "text-overflow:ellipsis}" +
    ".as-lz thead th{position:sticky;top:0;z-index:2;border-bottom:1px solid var(--line);width:" + CW + "px}" +
    ".as-lz th.pt{position:sticky;left:0;z-index:1;text-align:right;color:var(--muted);font-weight:400;" +
    "border-right:1px solid var(--line);max-width:none;width:" + LABW + "px;white-space:nowrap}" +
    ".as-lz thead th.pt{z-index:3}" +
    ".as-lz td{min-width:" + CW + "px;max-width:" + CW + "px;height:" + CH + "px;padding:0 3px;white-space:pre;overflow:hidden;" +
    "text-overflow:ellipsis;font-size:11.5px;border-right:1px solid #fff;border-bottom:1px solid #fff;cursor:default}" +
    ".as-lz td:hover{outline:2px solid #101828;outline-offset:-2px}" +
    ".as-lz tr.attn td,.as-lz tr.attn th{border-bottom:1px solid #98a2b3}" +
    ".as-lzkey{display:flex;align-items:center;gap:6px;font-size:12px;color:var(--muted);margin:0 0 6px}" +
    ".as-lzkey span.bar{display:inline-block;width:160px;height:10px;border:1px solid var(--line);" +
    "background:linear-gradient(90deg,#fff,#2166ac)}";

  // A probability's cell colour: white (0) to blue (1); dark words on light cells, white on dark.
  function fill(p) {
    var t = Math.max(0, Math.min(1, p)), r = Math.round(255 + t * (33 - 255)), g = Math.round(255 + t * (102 - 255)),
      b = Math.round(255 + t * (172 - 255));
    return "rgb(" + r + "," + g + "," + b + ")";
  }
  function ink(p) { return p > 0.55 ? "#fff" : "#1d2330"; }

  // ---- the text's lens arrays -----------------------------------------------------------------
  T.load = (function (load) {
    return function () {
      var self = this;
      return load.apply(this, arguments).then(function (r) {
        var z = self.entry.lens;
        self.lens = null;
        if (!z || z.left_out) return r;
        return Promise.all([U.decodeArray(z.top_probs), U.decodeArray(z.target_prob), U.decodeArray(z.kl)]).then(function (x) {
          var P = z.ids.length, L = P ? z.ids[0].length : 0, k = L ? z.ids[0][0].length : 0;
          self.lens = { P: P, L: L, k: k, ids: z.ids, words: z.words, top: x[0], tp: x[1], kl: x[2], rank: z.target_rank,
            target: z.target_ids };
          return r;
        });
      });
    };
  })(T.load);

  // A point's row label: "embedding", "L3 + attention", "L3 + MLP".
  function pointLabel(name) {
    var m = /^layers\.(\d+)\.(attn_resid|out)$/.exec(name);
    if (!m) return tr("viewer.lens_embed");
    return tr(m[2] === "out" ? "viewer.lens_out" : "viewer.lens_attn", { layer: +m[1] });
  }
  function word(z, id) { var w = z.words[String(id)]; return w === undefined ? "#" + id : w; }
  function quoted(s) { return "\u201c" + s.replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5") + "\u201d"; }

  // ---- the view -------------------------------------------------------------------------------
  V.renderLens = function () {
    var self = this, t = this.text(), z = t.lens, meta = this.data.lens;
    if (!z) {
      el("div", { cls: "as-warn", "data-testid": "lens-note", "data-left-out": (t.entry.lens || {}).left_out || "error",
        text: this.lensLeftOut() }, this.body);
      return;
    }
    el("div", { cls: "as-note", "data-testid": "lens-about", text: tr("viewer.lens_note", { k: z.k }) }, this.body);
    var key = el("div", { cls: "as-lzkey" }, this.body);
    el("span", { text: "0" }, key); el("span", { cls: "bar" }, key); el("span", { text: "1 " + tr("viewer.lens_colour") }, key);
    var wrap = el("div", { cls: "as-lzwrap" }, this.body), table = el("table", { cls: "as-lz", "data-testid": "lens-grid" }, wrap);
    var head = el("tr", {}, el("thead", {}, table));
    el("th", { cls: "pt", text: tr("viewer.lens_corner") }, head);
    for (var i = 0; i < z.L; i++) el("th", { text: tokLabel(t.tokens[i]), title: i + ": " + t.tokens[i], "data-pos": i }, head);
    var body = el("tbody", {}, table);
    for (var p = z.P - 1; p >= 0; p--) {
      // a line under each layer's pair of rows (after its MLP, above; after its attention, below)
      var name = meta.points[p], row = el("tr", { cls: /attn_resid$/.test(name) ? "attn" : "", "data-point": p }, body);
      el("th", { cls: "pt", text: pointLabel(name) }, row);
      for (i = 0; i < z.L; i++) {
        var o = (p * z.L + i) * z.k, prob = z.top[o], id = z.ids[p][i][0];
        el("td", { "data-testid": "lens-cell", "data-point": p, "data-pos": i, "data-id": id, "data-p": String(prob),
          text: tokLabel(word(z, id)), style: "background:" + fill(prob) + ";color:" + ink(prob) }, row);
      }
    }
    table.addEventListener("mousemove", function (ev) {
      var c = ev.target.closest("td");
      if (!c) { self.hideTip(); return; }
      self.showTip(ev, self.lensTip(+c.getAttribute("data-point"), +c.getAttribute("data-pos")));
    });
    table.addEventListener("mouseleave", function () { self.hideTip(); });
  };

  // Why the text shown has no grid, in a sentence.
  V.lensLeftOut = function () {
    var e = this.text().entry.lens || {};
    if (e.left_out === "too_long") return tr("viewer.lens_left_long", { n: e.n, max: this.data.lens.max_tokens });
    if (e.left_out === "tokens") return tr("viewer.lens_left_tokens");
    return tr("viewer.lens_left_error", { why: e.why || "" });
  };

  // The tooltip of one cell: where, the top k with probabilities, the final prediction's
  // probability and rank at this point, the KL from the final distribution.
  V.lensTip = function (p, i) {
    var t = this.text(), z = t.lens, dec = this.state.dec, name = this.data.lens.points[p], lines = [];
    lines.push(tr("viewer.lens_tip_where", { point: pointLabel(name), pos: i, token: quoted(t.tokens[i]) }));
    lines.push(tr("viewer.lens_tip_top", { k: z.k }));
    for (var r = 0; r < z.k; r++) {
      var o = (p * z.L + i) * z.k + r;
      lines.push("  " + (r + 1) + ". " + quoted(word(z, z.ids[p][i][r])) + "  " + show(z.top[o], dec));
    }
    lines.push(tr("viewer.lens_tip_target", { token: quoted(word(z, z.target[i])), p: show(z.tp[p * z.L + i], dec),
      rank: z.rank[p][i] }));
    lines.push(tr("viewer.lens_tip_kl", { kl: show(z.kl[p * z.L + i], dec) }));
    return lines.join("\n");
  };

  // ---- the tab, the state, the address --------------------------------------------------------
  V.buildToolbar = (function (build) {
    return function (bar) {
      build.apply(this, arguments);
      var self = this, tabs = bar.querySelector(".as-tabs");
      if (!this.data || !this.data.lens || !tabs || !this.tabs) return;
      if (!document.getElementById("as-lens-css")) el("style", { id: "as-lens-css", text: CSS }, document.head || this.root);
      var b = el("button", { type: "button", text: tr("viewer.tab_lens"), title: tr("viewer.tab_lens_tip"), "data-testid": "tab-lens" }, tabs);
      b.addEventListener("click", function () { self.set({ view: "lens" }); });
      this.tabs.lens = b;
    };
  })(V.buildToolbar);

  V.render = (function (render) {
    return function () {
      var s = this.state;
      if (!s || s.view !== "lens" || !this.data || !this.data.lens) return render.apply(this, arguments);
      for (var v in this.tabs) this.tabs[v].classList.toggle("on", v === s.view);
      this.selDec.value = String(s.dec);
      if (this.selText) this.selText.value = String(s.text);
      this.headBar.style.display = "none";
      this.layerLabel.style.display = "none";  // every layer is in the grid
      var note = A.unknownNote ? A.unknownNote(this.text().tokens, this.data.model) : "";
      this.unkNote.textContent = note; this.unkNote.style.display = note ? "" : "none";
      this.body.innerHTML = ""; this.hv = null;
      this.hideTip();
      if (this.observer) { this.observer.disconnect(); this.observer = null; }
      this.root.setAttribute("data-view", "lens");
      this.renderLens();
      this.writeHash();
    };
  })(V.render);

  V.applyHash = (function (applyHash) {
    return function () {
      applyHash.call(this);
      if (this.opts.server || !window.location.hash || !this.data || !this.data.lens) return;
      if (window.location.hash.slice(1).split("&").indexOf("view=lens") >= 0) this.state.view = "lens";
    };
  })(V.applyHash);

  V.hashOf = (function (hashOf) {
    return function () {
      var h = hashOf.call(this);
      return this.state.view === "lens" ? h.replace(/&(layer|query)=[^&]*/g, "") : h;
    };
  })(V.hashOf);

  V.allText = (function (allText) {
    return function () {
      var words = [];
      this.data.texts.forEach(function (t) { var w = t.lens && t.lens.words; for (var k in w || {}) words.push(w[k]); });
      return allText.call(this) + words.join("");
    };
  })(V.allText);

  // ---- export: the same grid, painted ---------------------------------------------------------
  V.viewSize = (function (viewSize) {
    return function () {
      var z = this.state.view === "lens" && this.data.lens ? this.text().lens : null;
      if (this.state.view !== "lens" || !this.data.lens) return viewSize.call(this);
      return z ? [LABW + z.L * CW + 8, 56 + z.P * CH + 8] : [640, 60];
    };
  })(V.viewSize);

  V.paintView = (function (paint) {
    return function (p, w, h) {
      if (this.state.view !== "lens" || !this.data.lens) return paint.call(this, p, w, h);
      var t = this.text(), z = t.lens, pts = this.data.lens.points, y0 = 56, i, q;
      p.rect(0, 0, w, h, "#fff");
      p.text(8, 14, tr("viewer.lens_paint", { model: this.data.model }), { size: 13, bold: true });
      if (!z) { p.text(8, 40, this.lensLeftOut(), { size: 12 }); return; }
      for (i = 0; i < z.L; i++) p.text(LABW + i * CW + CW / 2, y0 - 10, clip(tokLabel(t.tokens[i])), { size: 11, anchor: "middle", bold: true });
      for (q = z.P - 1; q >= 0; q--) {
        var y = y0 + (z.P - 1 - q) * CH;
        p.text(LABW - 6, y + CH / 2, pointLabel(pts[q]), { size: 11, anchor: "end", fill: "#667085" });
        for (i = 0; i < z.L; i++) {
          var prob = z.top[(q * z.L + i) * z.k];
          p.rect(LABW + i * CW, y, CW - 1, CH - 1, fill(prob));
          p.text(LABW + i * CW + 3, y + CH / 2, clip(tokLabel(word(z, z.ids[q][i][0]))), { size: 10.5, fill: ink(prob) });
        }
      }
    };
  })(V.paintView);

  function clip(s) { return s.length > 9 ? s.slice(0, 8) + "\u2026" : s; }
})(window.attnscope);
