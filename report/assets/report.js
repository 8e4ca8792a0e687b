
(function () {
  function copyIn(link, fn) {
    var p = link.parentNode;
    if (p.hasAttribute("data-filled")) return;
    var src = document.getElementById(link.getAttribute("href").slice(1));
    if (!src) return;
    p.setAttribute("data-filled", "");
    fn(src, p, p.nextSibling);
  }
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (d.tagName !== "DETAILS" || !d.open) return;
    var links = d.querySelectorAll("a.same"), i;
    for (i = 0; i < links.length; i++) copyIn(links[i], function (src, p, at) {
      var tv = src.querySelector(".tv");
      if (tv) p.parentNode.insertBefore(tv.cloneNode(true), at);
    });
    links = d.querySelectorAll("a.ref");
    for (i = 0; i < links.length; i++) copyIn(links[i], function (src, p, at) {
      for (var n = src.firstElementChild; n; n = n.nextElementSibling) {
        if (n.tagName !== "H3") p.parentNode.insertBefore(n.cloneNode(true), at);
      }
    });
  }, true);
  var box = document.getElementById("q");
  var shown = document.getElementById("shown");
  var table = document.getElementById("cells");
  if (!box || !table) return;
  var rows = table.tBodies;
  var texts = null;
  document.getElementById("search").hidden = false;
  function filter() {
    if (texts === null) {
      texts = [];
      for (var i = 0; i < rows.length; i++) texts.push(rows[i].rows[0].textContent.toLowerCase());
    }
    var terms = box.value.toLowerCase().split(/\s+/).filter(function (t) { return t !== ""; });
    var n = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = true;
      for (var j = 0; j < terms.length && ok; j++) ok = texts[i].indexOf(terms[j]) >= 0;
      rows[i].hidden = !ok;
      if (ok) n++;
    }
    shown.textContent = terms.length === 0 ? "" : n + " of " + rows.length + " cells match";
  }
  var timer = 0;
  box.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(filter, rows.length > 2000 ? 200 : 60);
  });
  if (box.value !== "") filter();
})();
