/* attnscope viewer: texts the server holds (attnscope serve, texts over 512 tokens).
 *
 * Such a text's page entry has tokens and remote = {id, n, thumb, api} but no q, k, v: the page
 * asks the server (attnscope/viewer/held_api.py) for what the view on screen shows, one layer and
 * head at a time — the head view's lines (the page's own rule: at most 8,000), a query's rows on
 * hover, the step view's row, the matrix view's max-pooled cells, a layer's thumbnails as they
 * scroll into sight — and keeps the answers. Every number shown is the server's float64.
 *
 * Viewer.prototype.pending() (called by render()) returns null when the view has its data, else
 * a Promise that fetches it and renders again; meanwhile the body says what it is reading.
 */
(function (A) {
  "use strict";
  if (!A || !A.Viewer || !A.Text || A.RemoteText) return;
  var V = A.Viewer.prototype, el = A.util.el, Text = A.Text, tr = A.tr;

  function bytes(s) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(s);
    var b = atob(s), n = b.length, out = new Uint8Array(n);
    for (var i = 0; i < n; i++) out[i] = b.charCodeAt(i);
    return out;
  }
  var KINDS = { float64: Float64Array, float32: Float32Array, int32: Int32Array, uint8: Uint8Array };
  // {dtype, shape, b64} (raw little-endian bytes) -> a typed array
  function arr(d) { var u = bytes(d.b64), K = KINDS[d.dtype]; return new K(u.buffer, u.byteOffset, u.byteLength / K.BYTES_PER_ELEMENT); }


  function RemoteText(entry, cfg, data, viewer) {
    Text.call(this, entry, cfg, data);
    var r = entry.remote;
    this.remote = r; this.id = r.id; this.api = r.api || "api/held/"; this.viewer = viewer;
    this.T = r.thumb; this.thumbs = new Uint8Array(this.L * this.H * this.T * this.T); this.thumbLayers = {};
    this.got = new Map(); this.inflight = new Map(); this.rows = new Map();
    this.rowBudget = Math.max(64, Math.floor(8e6 / this.n));  // ≤ 64 MB of float64 rows kept
    this.vecs = new Map();
  }
  RemoteText.prototype = Object.create(Text.prototype);
  RemoteText.prototype.constructor = RemoteText;
  RemoteText.prototype.load = function () { return Promise.resolve(); };

  RemoteText.prototype.post = function (path, body) {
    body.id = this.id;
    return A.util.postJson(this.api + path, body);
  };
  // For the few callers that cannot wait (a tooltip over a row not read yet, an export).
  RemoteText.prototype.postSync = function (path, body) {
    body.id = this.id;
    var x = new XMLHttpRequest();
    x.open("POST", this.api + path, false);
    x.setRequestHeader("Content-Type", "application/json");
    x.send(JSON.stringify(body));
    var j = JSON.parse(x.responseText);
    if (x.status !== 200) throw new Error(j.detail);
    return j;
  };
  // One request per key at a time; answers kept (the last 400 kinds of answer).
  RemoteText.prototype.once = function (key, make) {
    var self = this;
    if (this.got.has(key)) return Promise.resolve(this.got.get(key));
    if (this.inflight.has(key)) return this.inflight.get(key);
    var p = make().then(function (v) { self.inflight.delete(key); self.keep(key, v); return v; },
      function (e) { self.inflight.delete(key); throw e; });
    this.inflight.set(key, p);
    return p;
  };
  RemoteText.prototype.keep = function (key, v) {
    this.got.set(key, v);
    while (this.got.size > 400) this.got.delete(this.got.keys().next().value);
  };

  // ---- rows (float64) -------------------------------------------------------------------------
  RemoteText.prototype.rowKey = function (layer, head, i) { return layer + ":" + head + ":" + i; };
  RemoteText.prototype.putRows = function (j) {
    var w = arr(j.weights), n = this.n, h, i, m = j.q1 - j.q0;
    for (h = 0; h < j.heads.length; h++) for (i = 0; i < m; i++) {
      var off = (h * m + i) * n;
      this.rows.set(this.rowKey(j.layer, j.heads[h], j.q0 + i), w.subarray(off, off + n));
    }
    while (this.rows.size > this.rowBudget) this.rows.delete(this.rows.keys().next().value);
  };
  // [Float64Array(n) per row q0 … q1 − 1] of one head, or null when some row is not here yet.
  RemoteText.prototype.exactRows = function (layer, head, q0, q1) {
    var out = [];
    for (var i = q0; i < q1; i++) { var r = this.rows.get(this.rowKey(layer, head, i)); if (!r) return null; out.push(r); }
    return out;
  };
  RemoteText.prototype.hasRows = function (layer, heads, q0, q1) {
    for (var k = 0; k < heads.length; k++) if (!this.exactRows(layer, heads[k], q0, q1)) return false;
    return true;
  };
  // Fetch rows q0 … q1 − 1 of `heads` (in pieces of at most 2^20 weights).
  RemoteText.prototype.fetchRows = function (layer, heads, q0, q1) {
    var self = this, per = Math.max(1, Math.floor((1 << 20) / (heads.length * this.n))), parts = [];
    for (var a = q0; a < q1; a += per) (function (a, b) {
      if (self.hasRows(layer, heads, a, b)) return;
      parts.push(self.once("r:" + layer + ":" + heads.join(",") + ":" + a + ":" + b, function () {
        return self.post("rows", { layer: layer, heads: heads, q0: a, q1: b });
      }).then(function (j) { self.putRows(j); }));
    })(a, Math.min(q1, a + per));
    return Promise.all(parts);
  };

  // What the views read synchronously: the step view's row once fetched, else {weights} of a row
  // (hover tips), read now from the server when it is not here yet.
  RemoteText.prototype.steps = function (layer, head, i) {
    var st = this.got.get("s:" + layer + ":" + head + ":" + i);
    if (st) return st;
    var r = this.rows.get(this.rowKey(layer, head, i));
    if (!r) {
      var heads = []; for (var h = 0; h < this.H; h++) heads.push(h);
      this.putRows(this.postSync("rows", { layer: layer, heads: heads, q0: i, q1: i + 1 }));
      r = this.rows.get(this.rowKey(layer, head, i));
    }
    return { weights: r };
  };
  RemoteText.prototype.fetchSteps = function (layer, head, i) {
    var self = this;
    return this.once("s:" + layer + ":" + head + ":" + i, function () {
      return self.post("steps", { layer: layer, head: head, query: i }).then(function (j) {
        var st = { shift: j.shift, sum: j.sum };
        ["raw", "scaled", "exp", "weights", "out", "q_pre", "q_rot"].forEach(function (k) { st[k] = arr(j[k]); });
        var m = -Infinity; for (var x = 0; x < st.scaled.length; x++) if (st.scaled[x] > m) m = st.scaled[x];
        st.max = m;
        return st;
      });
    });
  };
  RemoteText.prototype.weights = function () {
    throw new Error("the server holds this text: its full weight matrices are not in the page");
  };

  // ---- q and k before and after the rotation (the step view's rotation table) -------------------
  // vec(layer, 0 | 1, head) / operand(…): n × d arrays with the rows read so far filled in.
  RemoteText.prototype.sparse = function (layer, kind, head, rot) {
    var key = layer + ":" + kind + ":" + (kind === 0 ? head : this.kvHead(head)) + ":" + (rot ? 1 : 0), a = this.vecs.get(key);
    if (!a) { a = { x: new Float64Array(this.n * this.d), have: {} }; this.vecs.set(key, a); }
    while (this.vecs.size > 16) this.vecs.delete(this.vecs.keys().next().value);
    return a;
  };
  RemoteText.prototype.hasVectors = function (layer, head, positions) {
    var a = this.sparse(layer, 0, head, false), b = this.sparse(layer, 1, head, false);
    return positions.every(function (p) { return a.have[p] && b.have[p]; });
  };
  RemoteText.prototype.fetchVectors = function (layer, head, positions) {
    var self = this;
    if (this.hasVectors(layer, head, positions)) return Promise.resolve();
    return this.post("vectors", { layer: layer, head: head, positions: positions }).then(function (j) {
      var d = self.d;
      [["q_pre", 0, false], ["k_pre", 1, false], ["q_rot", 0, true], ["k_rot", 1, true]].forEach(function (m) {
        var src = arr(j[m[0]]), dst = self.sparse(layer, m[1], head, m[2]);
        positions.forEach(function (p, r) { dst.x.set(src.subarray(r * d, (r + 1) * d), p * d); dst.have[p] = true; });
      });
    });
  };
  RemoteText.prototype.vec = function (layer, kind, head) { return this.sparse(layer, kind, head, false).x; };
  RemoteText.prototype.operand = function (layer, kind, head) {
    return this.cfg.rope ? this.sparse(layer, kind, head, true).x : this.sparse(layer, kind, head, false).x;
  };

  // ---- lines, heatmap, thumbnails ---------------------------------------------------------------
  RemoteText.prototype.linesKey = function (layer, heads) { return "l:" + layer + ":" + heads.join(","); };
  RemoteText.prototype.fetchLines = function (layer, heads) {
    var self = this;
    return this.once(this.linesKey(layer, heads), function () {
      return self.post("lines", { layer: layer, heads: heads }).then(function (j) {
        return { minw: j.minw, head: arr(j.head), query: arr(j.query), key: arr(j.key), weight: arr(j.weight) };
      });
    });
  };
  RemoteText.prototype.heatKey = function (layer, head, q0, q1, k0, k1, R, C) { return "m:" + [layer, head, q0, q1, k0, k1, R, C].join(":"); };
  RemoteText.prototype.fetchHeatmap = function (layer, head, q0, q1, k0, k1, R, C) {
    var self = this;
    return this.once(this.heatKey(layer, head, q0, q1, k0, k1, R, C), function () {
      return self.post("heatmap", { layer: layer, head: head, q0: q0, q1: q1, k0: k0, k1: k1, rows: R, cols: C }).then(function (j) {
        return { grid: arr(j.grid), rowEdges: j.row_edges, colEdges: j.col_edges };
      });
    });
  };
  RemoteText.prototype.heatmap = function (layer, head, q0, q1, k0, k1, R, C) {
    var hit = this.got.get(this.heatKey(layer, head, q0, q1, k0, k1, R, C));
    if (hit) return hit;
    var j = this.postSync("heatmap", { layer: layer, head: head, q0: q0, q1: q1, k0: k0, k1: k1, rows: R, cols: C });
    return { grid: arr(j.grid), rowEdges: j.row_edges, colEdges: j.col_edges };
  };
  RemoteText.prototype.putThumbs = function (j) {
    var size = this.H * this.T * this.T;
    this.thumbs.set(arr(j.thumbs), j.layer * size);
    this.thumbLayers[j.layer] = true;
  };
  RemoteText.prototype.fetchThumbs = function (layer) {
    var self = this;
    if (this.thumbLayers[layer]) return Promise.resolve();
    return this.once("t:" + layer, function () { return self.post("thumbs", { layer: layer }); }).then(function (j) { self.putThumbs(j); });
  };

  // ---- the viewer: fetch what the view needs before it draws -----------------------------------
  V.pending = function () {
    var t = this.text(), s = this.state, self = this, need = [], what = "";
    if (!t || !t.remote) return null;
    if (s.view === "head" && s.heads.length) {
      if (!t.got.has(t.linesKey(s.layer, s.heads))) { need.push(t.fetchLines(s.layer, s.heads)); what = tr("viewer.reading_lines", { layer: s.layer }); }
      if (s.query !== null && !t.hasRows(s.layer, s.heads, s.query, s.query + 1)) need.push(t.fetchRows(s.layer, s.heads, s.query, s.query + 1));
    } else if (s.view === "step" && s.query !== null && s.query < t.n) {
      var st = t.got.get("s:" + s.layer + ":" + s.focus + ":" + s.query);
      if (!st) { need.push(t.fetchSteps(s.layer, s.focus, s.query)); what = tr("viewer.reading_row", { q: s.query }); }
      else if (this.cfg.rope) {
        var best = 0; for (var j = 1; j < t.n; j++) if (st.weights[j] > st.weights[best]) best = j;
        var key = s.key !== null && s.key !== undefined && s.key < t.n ? s.key : best;
        if (!t.hasVectors(s.layer, s.focus, [s.query, key])) { need.push(t.fetchVectors(s.layer, s.focus, [s.query, key])); what = tr("viewer.reading_qk"); }
      }
    } else if (s.view === "matrix") {
      var g = this.matrixGeometry(), z = g.z;
      if (!t.got.has(t.heatKey(s.layer, s.focus, z[0], z[1], z[2], z[3], g.R, g.C))) {
        need.push(t.fetchHeatmap(s.layer, s.focus, z[0], z[1], z[2], z[3], g.R, g.C));
        what = tr("viewer.reading_head", { head: s.focus, layer: s.layer });
      }
    }
    if (!need.length) return null;
    this.showLoading(tr("viewer.reading", { what: what || tr("viewer.reading_weights") }));
    this.root.setAttribute("data-loading", "1");
    return Promise.all(need).then(function () {
      self.root.removeAttribute("data-loading");
      return self.render();
    }, function (e) {
      self.root.removeAttribute("data-loading");
      self.body.innerHTML = "";
      el("div", { cls: "as-err", "data-testid": "remote-error", text: String(e.message || e) }, self.body);
    });
  };

  V.minWeight = (function (local) {
    return function () {
      var t = this.text(), s = this.state;
      if (!t.remote) return local.call(this);
      var L = t.got.get(t.linesKey(s.layer, s.heads));
      return L ? L.minw : 0;
    };
  })(V.minWeight);

  // The head view's segments from the server's lines, or from the rows of the query in focus.
  V.headSegments = (function (local) {
    return function (x0, x1, y0, lo, hi) {
      var t = this.text(), s = this.state, self = this, ROW = A.util.ROW;
      if (!t.remote) return local.apply(this, arguments);
      if (lo === undefined) { lo = -Infinity; hi = Infinity; }
      var only = s.hover !== null ? s.hover : s.query, out = [], index = {};
      s.heads.forEach(function (h) {
        var buckets = []; for (var b = 0; b < 16; b++) buckets.push([]);
        index[h] = buckets; out.push({ head: h, buckets: buckets });
      });
      var add = function (h, i, j, w) {
        var yi = y0 + i * ROW + ROW / 2, yj = y0 + j * ROW + ROW / 2;
        if ((yi < lo && yj < lo) || (yi > hi && yj > hi)) return;
        index[h][Math.min(15, Math.floor(w * 16))].push(x0, yi, x1, yj);
      };
      if (only !== null && s.heads.length) {
        if (t.hasRows(s.layer, s.heads, only, only + 1)) {
          s.heads.forEach(function (h) {
            var r = t.exactRows(s.layer, h, only, only + 1)[0];
            for (var j = 0; j < t.n; j++) if (r[j] > 0) add(h, only, j, r[j]);
          });
          return out;
        }
        t.fetchRows(s.layer, s.heads.slice(), only, only + 1).then(function () {
          var now = self.state.hover !== null ? self.state.hover : self.state.query;
          if (now === only && self.state.view === "head" && self.redrawLines) self.redrawLines();
        }, function () {});
      }
      var L = t.got.get(t.linesKey(s.layer, s.heads));
      if (L) for (var k = 0; k < L.weight.length; k++) if (index[L.head[k]]) add(L.head[k], L.query[k], L.key[k], L.weight[k]);
      return out;
    };
  })(V.headSegments);

  // Thumbnails of a layer are read when one of its canvases scrolls into sight.
  V.thumbCanvas = (function (local) {
    return function (layer, head, canvas) {
      var t = this.text(), self = this;
      if (!t.remote || t.thumbLayers[layer]) return local.call(this, layer, head, canvas);
      if (!canvas) { t.putThumbs(t.postSync("thumbs", { layer: layer })); return local.call(this, layer, head); }
      t.fetchThumbs(layer).then(function () { if (canvas.isConnected) local.call(self, layer, head, canvas); }, function () {});
      return canvas;
    };
  })(V.thumbCanvas);

  V.exportBlob = (function (local) {
    return function (kind) {
      var t = this.text(), self = this, all = [];
      if (!t.remote || this.state.view !== "model") return local.call(this, kind);
      for (var l = 0; l < this.cfg.n_layers; l++) all.push(t.fetchThumbs(l));
      return Promise.all(all).then(function () { return local.call(self, kind); });
    };
  })(V.exportBlob);

  A.RemoteText = RemoteText;
})(window.attnscope);
