/* attnscope viewer: a page's head weights computed in Web Workers (a page that carries q, k, v).
 *
 * The head view needs every selected head of a layer (12 matrices of 512 × 512 for MiniLM); one
 * thread computes them one after the other. Here they go to one worker per core (at most 4), the
 * view waits for them (Viewer.prototype.pending), and while the page is idle the workers fill in
 * the other layers, nearest first, so that a later layer switch only draws. The workers run the
 * page's own kernel (util.headWeights, sent as its source), so the weights are the same bits, and
 * the head view's digest of them (util.headSummary).
 * Where workers cannot start (a sandbox that forbids them), everything stays on the page's thread.
 */
(function (A) {
  "use strict";
  if (!A || !A.Text || !A.util.headWeights || A.WeightPool) return;
  var V = A.Viewer.prototype;
  var SRC = "var headWeights = " + A.util.headWeights.toString() + ";\nvar headSummary = " + A.util.headSummary.toString() +
    ";\nonmessage = function (e) { var m = e.data, out = new Float32Array(m.n * m.n);\n" +
    "  var bins = new Float64Array(1001); headWeights(m.q, m.k, m.n, m.d, m.f, m.causal, m.win, out, bins, m.bias);\n" +
    "  var sm = headSummary(out, m.n, m.budget, bins);\n" +
    "  postMessage({ id: m.id, out: out, sum: sm }, [out.buffer, sm.bins.buffer, sm.idx.buffer]); };\n";

  function WeightPool(size) { this.size = size; this.workers = null; this.idle = []; this.queue = []; this.jobs = new Map(); this.failed = false; }
  WeightPool.prototype.start = function () {
    if (this.workers || this.failed) return !this.failed;
    var self = this;
    try {
      var url = URL.createObjectURL(new Blob([SRC], { type: "text/javascript" }));
      this.workers = [];
      for (var i = 0; i < this.size; i++) {
        var w = new Worker(url);
        w.onmessage = (function (w) { return function (e) { self.done(w, e.data); }; })(w);
        w.onerror = function (ev) { if (ev.preventDefault) ev.preventDefault(); self.fail(); };
        this.workers.push(w); this.idle.push(w);
      }
    } catch (e) { this.fail(); }
    return !this.failed;
  };
  WeightPool.prototype.fail = function () {
    this.failed = true;
    (this.workers || []).forEach(function (w) { w.terminate(); });
    this.workers = null; this.idle = []; this.queue = [];
    this.jobs.forEach(function (j) { j.reject(new Error("the weights' workers stopped")); });
    this.jobs.clear();
  };
  // The weights of one head of `t` (a Promise; kept in t's cache): urgent jobs go first.
  WeightPool.prototype.run = function (t, layer, head, urgent) {
    var id = t.id + ":" + layer + ":" + head, job = this.jobs.get(id);
    if (job) {
      if (urgent && !job.sent) { this.queue.splice(this.queue.indexOf(job), 1); this.queue.unshift(job); }
      return job.promise;
    }
    job = { id: id, t: t, layer: layer, head: head, sent: false };
    job.promise = new Promise(function (res, rej) { job.resolve = res; job.reject = rej; });
    this.jobs.set(id, job);
    if (urgent) this.queue.unshift(job); else this.queue.push(job);
    this.pump();
    return job.promise;
  };
  WeightPool.prototype.pump = function () {
    while (this.idle.length && this.queue.length) {
      var w = this.idle.pop(), j = this.queue.shift(), t = j.t;
      j.sent = true;
      w.postMessage({ id: j.id, q: t.operand(j.layer, 0, j.head), k: t.operand(j.layer, 1, j.head), n: t.n, d: t.d,
        f: t.cfg.factor, causal: t.cfg.causal, win: t.window(j.layer), bias: t.biasRow(j.head), budget: A.util.LINE_BUDGET });
    }
  };
  WeightPool.prototype.done = function (w, msg) {
    var j = this.jobs.get(msg.id);
    this.idle.push(w);
    if (j) { this.jobs.delete(msg.id); j.t.keepWeights(j.layer, j.head, msg.out, msg.sum); j.resolve(msg.out); }
    this.pump();
  };
  WeightPool.prototype.idleNow = function () { return this.queue.length === 0 && this.idle.length === (this.workers || []).length; };

  var POOL = null, ids = 0;
  function pool() {
    if (!POOL) POOL = new WeightPool(Math.max(1, Math.min(4, navigator.hardwareConcurrency || 2)));
    return POOL.start() ? POOL : null;
  }

  // The head view waits for the selected heads of its layer (when more than one is missing).
  V.pending = (function (before) {
    return function () {
      var wait = before ? before.call(this) : null;
      if (wait) return wait;
      var t = this.text(), s = this.state, self = this;
      if (!t || t.remote || s.view !== "head" || typeof Worker === "undefined") return null;
      if (t.id === undefined) t.id = "text" + (ids++);
      var missing = s.heads.filter(function (h) { return !t.hasWeights(s.layer, h); });
      var p = missing.length > 1 ? pool() : null;
      if (!p) return null;
      this.showLoading(A.tr("viewer.computing_layer", { layer: s.layer }));
      return Promise.all(missing.map(function (h) { return p.run(t, s.layer, h, true); })).then(function () {
        return self.render();
      }, function () { return self.render(); });  // workers failed: the page computes them itself
    };
  })(V.pending);

  // After drawing, the idle workers compute the other layers of the heads shown, nearest first.
  V.render = (function (render) {
    return function () {
      var r = render.apply(this, arguments), t = this.text ? this.state && this.text() : null, s = this.state;
      if (r || !t || t.remote || !s || s.view !== "head" || !POOL || POOL.failed || !POOL.idleNow()) return r;
      var L = this.cfg.n_layers, budget = Math.max(8, Math.floor(96e6 / (4 * t.n * t.n))) - s.heads.length;
      for (var dist = 1; dist < L; dist++) [s.layer + dist, s.layer - dist].forEach(function (l) {
        if (l < 0 || l >= L) return;
        s.heads.forEach(function (h) { if (budget-- > 0 && !t.hasWeights(l, h)) POOL.run(t, l, h, false).catch(function () {}); });
      });
      return r;
    };
  })(V.render);

  A.WeightPool = WeightPool;
})(window.attnscope);
