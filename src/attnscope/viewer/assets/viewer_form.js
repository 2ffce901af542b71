/* attnscope viewer: the top of the page `attnscope serve` shows — what this is, examples to click,
 * the form (text, compare with, shared token) and where the API is — and its answer. Its words come
 * from the strings table (tr) and change with the language switch (formWords). */
(function (A) {
  "use strict";
  if (!A || !A.Viewer || A.Viewer.prototype.buildForm) return;
  var V = A.Viewer.prototype, U = A.util, el = U.el, tr = A.tr;

  // Example inputs (data, not the page's words): the bank pair of the context view, a long English
  // sentence and the first article's Chinese one.
  var EXAMPLES = [["The bank of the river was muddy.", "I deposited money at the bank.", "bank"],
    ["The cat sat on the mat because it was tired.", "", ""], ["我喜欢人工智能", "", ""]];

  V.buildForm = function () {
    var self = this, srv = this.opts.server, w = this.formEls = {};
    var intro = el("div", { cls: "as-intro", "data-testid": "intro" }, this.root);
    el("h1", { text: "attnscope" + (srv.model ? " · " + srv.model : "") }, intro);
    w.intro = el("p", {}, intro);
    var ex = el("p", { cls: "as-examples" }, intro);
    w.tryIt = el("span", {}, ex);
    w.examples = EXAMPLES.map(function (e, i) {
      var a = el("button", { type: "button", cls: "as-link", "data-testid": "example-" + i }, ex);
      a.addEventListener("click", function () {
        self.inText.value = e[0]; self.inCompare.value = e[1]; self.inToken.value = e[2]; self.submit();
      });
      return a;
    });
    var api = el("p", { cls: "as-note" }, intro);
    w.api = el("span", {}, api);
    w.docs = el("a", { href: "docs" }, api);
    w.offline = el("span", {}, api);
    var f = el("form", { cls: "as-form", "data-testid": "form" }, this.root);
    var l1 = el("label", {}, f);
    w.text = el("span", {}, l1);
    this.inText = el("textarea", { name: "text", "data-testid": "text-input" }, l1);
    this.inText.addEventListener("keydown", function (ev) {  // Enter shows, Shift+Enter breaks the line
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); self.submit(); }
    });
    var l2 = el("label", {}, f);
    w.compare = el("span", {}, l2);
    this.inCompare = el("input", { name: "compare", "data-testid": "compare-input" }, l2);
    var l3 = el("label", {}, f);
    w.token = el("span", {}, l3);
    this.inToken = el("input", { name: "token", "data-testid": "token-input", style: "width:120px" }, l3);
    w.submit = el("button", { type: "submit", "data-testid": "submit" }, f);
    this.formMsg = el("div", { "data-testid": "form-message" }, this.root);
    f.addEventListener("submit", function (ev) { ev.preventDefault(); self.submit(); });
    this.formWords();
  };

  // The form's words in the page's language now (again after the switch).
  V.formWords = function () {
    var w = this.formEls, srv = this.opts.server;
    if (!w) return;
    w.intro.textContent = tr("viewer.intro");
    w.tryIt.textContent = tr("viewer.try");
    w.examples.forEach(function (a, i) { a.textContent = EXAMPLES[i][0] + (EXAMPLES[i][1] ? tr("viewer.versus") + EXAMPLES[i][1] : ""); });
    w.api.textContent = tr("viewer.api"); w.docs.textContent = tr("viewer.api_docs"); w.offline.textContent = tr("viewer.offline");
    w.text.textContent = tr("viewer.form_text") + (srv.maxChars ? tr("viewer.up_to", { n: srv.maxChars }) : "");
    this.inText.setAttribute("placeholder", tr("viewer.text_placeholder"));
    w.compare.textContent = tr("viewer.form_compare");
    this.inCompare.setAttribute("placeholder", tr("viewer.compare_placeholder"));
    w.token.textContent = tr("viewer.form_token");
    w.submit.textContent = tr("viewer.submit");
    if (this.formMsg.getAttribute("data-computing")) this.formMsg.textContent = tr("viewer.computing");
  };

  V.formBody = function () {
    var body = { text: this.inText.value };
    if (this.inCompare.value.trim()) body.compare = this.inCompare.value;
    if (this.inToken.value.trim()) body.token = this.inToken.value.trim();
    return body;
  };

  V.submit = function () {  // the encoder–decoder viewer's too, with its own formBody and clear
    var self = this, body = this.formBody();
    this.formMsg.className = "as-note"; this.formMsg.textContent = tr("viewer.computing");
    this.formMsg.setAttribute("data-computing", "1");
    this.root.removeAttribute("data-ready");  // set again once the answer is drawn
    var seq = this.seq = (this.seq || 0) + 1;  // only the latest answer is shown
    return U.postJson(this.opts.server.endpoint || "api/view", body).then(function (data) {
      if (seq !== self.seq) return;
      self.formMsg.className = ""; self.formMsg.textContent = ""; self.formMsg.removeAttribute("data-computing");
      if (data.font_css !== undefined) { self.setFontCss(data.font_css); delete data.font_css; }
      return self.setData(data);
    }).catch(function (e) {
      if (seq !== self.seq) return;
      self.clear();  // the old result must not stand under a message about the new text
      self.formMsg.removeAttribute("data-computing");
      self.formMsg.className = "as-err"; self.formMsg.textContent = String(e.message || e);
    });
  };
})(window.attnscope);
