// daybook console: optional enhancements. Every page works without this.
// In the heatmap, the arrow keys move between days and datasets, Home and
// End go to a row's first and last day, and Tab leaves the heatmap in one
// step instead of visiting every day.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("[data-heatmap]").forEach(function (hm) {
    var rows = Array.prototype.map.call(hm.querySelectorAll(".hm-row:not([aria-hidden]) .hm-cells"), function (r) {
      return Array.prototype.slice.call(r.children);
    });
    var links = hm.querySelectorAll("a.hm-cell");
    if (links.length === 0) { return; }
    links.forEach(function (a) { a.tabIndex = -1; });
    links[links.length - 1].tabIndex = 0;
    function at(row, col) {
      var cells = rows[row];
      if (!cells) { return null; }
      // the nearest day with a partition
      for (var d = 0; d < cells.length; d++) {
        if (cells[col + d] && cells[col + d].tagName === "A") { return cells[col + d]; }
        if (cells[col - d] && cells[col - d].tagName === "A") { return cells[col - d]; }
      }
      return null;
    }
    function move(from, to) {
      if (!to) { return; }
      from.tabIndex = -1;
      to.tabIndex = 0;
      to.focus();
    }
    hm.addEventListener("keydown", function (e) {
      var a = e.target;
      if (!a.classList || !a.classList.contains("hm-cell")) { return; }
      var row = -1, col = -1;
      rows.forEach(function (cells, i) { var j = cells.indexOf(a); if (j >= 0) { row = i; col = j; } });
      if (row < 0) { return; }
      var cells = rows[row], next = null, k;
      switch (e.key) {
      case "ArrowLeft":
        for (k = col - 1; k >= 0 && !next; k--) { if (cells[k].tagName === "A") { next = cells[k]; } }
        break;
      case "ArrowRight":
        for (k = col + 1; k < cells.length && !next; k++) { if (cells[k].tagName === "A") { next = cells[k]; } }
        break;
      case "ArrowUp": next = at(row - 1, col); break;
      case "ArrowDown": next = at(row + 1, col); break;
      case "Home": next = at(row, 0); break;
      case "End": next = at(row, cells.length - 1); break;
      default: return;
      }
      e.preventDefault();
      move(a, next);
    });
  });
});
