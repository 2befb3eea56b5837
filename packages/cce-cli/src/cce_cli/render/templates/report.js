// The cce HTML report's behaviour: sort and filter the query table, and show a query's
// evidence on click. User text is only ever written with textContent, never as markup.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("cce-data").textContent);
  var table = document.getElementById("queries");
  var body = table.tBodies[0];
  var headers = table.tHead.rows[0].cells;
  var filter = document.getElementById("filter");
  var status = document.getElementById("status");
  var shown = document.getElementById("shown");

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }

  function caseRows() {
    return Array.prototype.filter.call(body.rows, function (row) {
      return row.classList.contains("case");
    });
  }

  function closeDetail(row) {
    var next = row.nextElementSibling;
    if (next && next.classList.contains("detail")) { body.removeChild(next); }
    row.querySelector("button.open").setAttribute("aria-expanded", "false");
  }

  function hitsTable(side, anchors) {
    var wrap = el("div", null, "side");
    wrap.appendChild(el("h3", side.label));
    if (side.hits === null) {
      wrap.appendChild(el("p", data.hasEvidence ? "no results recorded for this query"
        : "no results file given (cce report ... --results FILE)"));
      return wrap;
    }
    if (side.hits.length === 0) {
      wrap.appendChild(el("p", "nothing retrieved"));
      return wrap;
    }
    var found = {};
    side.hits.forEach(function (hit) {
      hit[6].forEach(function (index) { if (!(index in found)) { found[index] = hit[0]; } });
    });
    if (anchors.length) {
      var list = el("ul", null, "anchors");
      anchors.forEach(function (anchor, index) {
        var hit = found[index];
        list.appendChild(el("li", hit === undefined ? "✗ " + anchor + " — missing"
          : "✓ " + anchor + " — rank " + hit, hit === undefined ? "missing" : "found"));
      });
      wrap.appendChild(list);
    }
    var t = el("table", null, "hits");
    var head = t.createTHead().insertRow();
    ["rank", "path:lines", "kind", "score", "matched", "code"].forEach(function (name) {
      head.appendChild(el("th", name));
    });
    var tb = t.createTBody();
    side.hits.forEach(function (hit) {
      var tr = tb.insertRow();
      tr.appendChild(el("td", hit[0], "num"));
      tr.appendChild(el("td", hit[1] + ":" + hit[2] + "-" + hit[3]));
      tr.appendChild(el("td", hit[4]));
      tr.appendChild(el("td", hit[5], "num"));
      var matched = hit[6].length ? "yes (anchor " + hit[6].map(function (i) {
        return i + 1;
      }).join(", ") + ")" : "no";
      tr.appendChild(el("td", matched, hit[6].length ? "matched" : ""));
      var cell = el("td");
      cell.appendChild(el("pre", hit[7] >= 0 ? data.code[hit[7]].join("\n")
        : "(code not available)", "code"));
      tr.appendChild(cell);
    });
    wrap.appendChild(t);
    return wrap;
  }

  function openDetail(row) {
    var entry = data.cases[Number(row.getAttribute("data-i"))];
    var detail = document.createElement("tr");
    detail.className = "detail";
    var cell = el("td");
    cell.colSpan = headers.length;
    if (entry.anchors.length) {
      cell.appendChild(el("p", "expected anchors: " + entry.anchors.join(", ")));
    }
    entry.sides.forEach(function (side) { cell.appendChild(hitsTable(side, entry.anchors)); });
    detail.appendChild(cell);
    body.insertBefore(detail, row.nextSibling);
    row.querySelector("button.open").setAttribute("aria-expanded", "true");
  }

  body.addEventListener("click", function (event) {
    var button = event.target.closest("button.open");
    if (!button) { return; }
    var row = button.closest("tr");
    if (button.getAttribute("aria-expanded") === "true") { closeDetail(row); } else { openDetail(row); }
  });

  function applyFilter() {
    var needle = filter.value.toLowerCase();
    var wanted = status.value;
    var count = 0;
    caseRows().forEach(function (row) {
      var text = row.cells[0].textContent + " " + row.cells[1].textContent + " " + row.cells[2].textContent;
      var show = (!needle || text.toLowerCase().indexOf(needle) >= 0)
        && (!wanted || row.getAttribute("data-status") === wanted);
      if (!show) { closeDetail(row); }
      row.hidden = !show;
      if (show) { count += 1; }
    });
    shown.textContent = count + " of " + caseRows().length + " queries";
  }
  filter.addEventListener("input", applyFilter);
  status.addEventListener("change", applyFilter);

  Array.prototype.forEach.call(headers, function (th, column) {
    th.addEventListener("click", function () {
      var numeric = th.getAttribute("data-sort") === "number";
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(headers, function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var rows = caseRows();
      rows.forEach(closeDetail);
      rows.sort(function (a, b) {
        var x = a.cells[column], y = b.cells[column], order;
        if (numeric) {
          order = Number(x.getAttribute("data-v")) - Number(y.getAttribute("data-v"));
        } else {
          order = x.textContent < y.textContent ? -1 : (x.textContent > y.textContent ? 1 : 0);
        }
        if (order === 0) {
          order = Number(a.getAttribute("data-i")) - Number(b.getAttribute("data-i"));
          return order;
        }
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
}());
