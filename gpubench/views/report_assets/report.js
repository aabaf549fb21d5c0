// gpubench report: the point tables (built from each run's data block, a page at a time), sorting, filtering
// and point details. The charts and the lab's tables are plain HTML and SVG and need none of this.
(function () {
  "use strict";
  const PAGE = 1000;  // rows shown at a time; "show more" adds a page
  const NUMERIC = new Set([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  const form = document.querySelector("form.filters");
  const views = [];

  function esc(value) {
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function sortKey(text, numeric) {
    if (text === "") return null;
    if (!numeric) return text;
    const value = Number(text.replace(/,/g, ""));
    return Number.isNaN(value) ? null : value;
  }

  class PointTable {
    constructor(table, points) {
      this.table = table;
      this.body = table.tBodies[0];
      this.more = table.nextElementSibling;
      this.points = points;
      this.order = points.map((_, i) => i);
      this.visible = this.order;
      this.shown = PAGE;
      this.text = points.map((p) => p.cells.join(" ").toLowerCase());
    }

    filter(op, variant, status, text) {
      this.visible = this.order.filter((i) => {
        const c = this.points[i].cells;
        return (!op || c[0] === op) && (!variant || c[1] === variant) && (!status || c[4] === status) &&
          (!text || this.text[i].includes(text));
      });
      this.shown = PAGE;
      this.render();
    }

    sort(col, ascending) {
      const numeric = NUMERIC.has(col);
      const keys = this.points.map((p) => sortKey(p.cells[col], numeric));
      this.order = this.order.slice().sort((a, b) => {
        const x = keys[a], y = keys[b];
        if (x === null || y === null) return (x === null) - (y === null);
        const d = numeric ? x - y : String(x).localeCompare(String(y));
        return ascending ? d : -d;
      });
      const wanted = new Set(this.visible);
      this.visible = this.order.filter((i) => wanted.has(i));
      this.render();
    }

    render() {
      const rows = this.visible.slice(0, this.shown).map((i) => {
        const c = this.points[i].cells;
        const tds = c.map((v, j) => `<td${NUMERIC.has(j) ? ' class="num"' : ""}>${esc(v)}</td>`).join("");
        return `<tr class="point ${esc(c[4])}" data-i="${i}" data-op="${esc(c[0])}" data-variant="${esc(c[1])}" ` +
          `data-status="${esc(c[4])}">${tds}</tr>`;
      });
      this.body.innerHTML = rows.join("");
      const left = this.visible.length - this.shown;
      this.more.innerHTML = left > 0 ? `${this.visible.length} points match; <button type="button">show ` +
        `${Math.min(left, PAGE)} more</button>` : `${this.visible.length} point(s)`;
    }
  }

  function applyFilters() {
    const op = form.elements.op.value, variant = form.elements.variant.value;
    const status = form.elements.status.value, text = form.elements.text.value.trim().toLowerCase();
    views.forEach((v) => v.filter(op, variant, status, text));
    for (const el of document.querySelectorAll("svg .series, .legend li")) {
      el.style.display = !variant || el.dataset.key === variant ? "" : "none";
    }
    for (const fig of document.querySelectorAll("figure[data-op]")) {
      fig.style.display = !op || fig.dataset.op === op ? "" : "none";
    }
  }

  function histogram(samples) {
    if (!samples.length) return "<p>No samples (the point was not timed).</p>";
    let lo = Infinity, hi = -Infinity;
    for (const s of samples) { lo = Math.min(lo, s); hi = Math.max(hi, s); }
    const bins = 24, counts = new Array(bins).fill(0);
    for (const s of samples) counts[Math.min(bins - 1, Math.floor(((s - lo) / (hi - lo || 1)) * bins))]++;
    const top = Math.max(...counts), w = 240, h = 60;
    const bars = counts.map((c, i) => `<rect class="bar" x="${(i * w) / bins}" y="${h - (c / top) * h}" ` +
      `width="${w / bins - 1}" height="${(c / top) * h}" fill="#1f77b4"/>`).join("");
    return `<svg class="samples" viewBox="0 0 ${w} ${h + 14}" width="${w}" height="${h + 14}">${bars}` +
      `<text x="0" y="${h + 12}" font-size="10">${lo.toPrecision(4)} ms</text>` +
      `<text x="${w}" y="${h + 12}" font-size="10" text-anchor="end">${hi.toPrecision(4)} ms</text></svg>`;
  }

  function keyValues(title, object) {
    const rows = Object.entries(object || {}).map(([k, v]) =>
      `<tr><th>${esc(k)}</th><td>${esc(typeof v === "object" ? JSON.stringify(v) : v)}</td></tr>`).join("");
    return rows ? `<table class="kv"><caption>${title}</caption>${rows}</table>` : "";
  }

  function toggleDetail(view, row) {
    const next = row.nextElementSibling;
    if (next && next.classList.contains("detail")) { next.remove(); return; }
    const p = view.points[Number(row.dataset.i)];
    const detail = document.createElement("tr");
    detail.className = "detail";
    const cell = detail.insertCell();
    cell.colSpan = row.cells.length;
    cell.innerHTML = `<p>${p.samples.length} samples${p.reason ? " · " + esc(p.reason) : ""}</p>` +
      histogram(p.samples) + keyValues("telemetry", p.telemetry) + keyValues("details", p.details);
    row.after(detail);
  }

  for (const block of document.querySelectorAll("script.point-data")) {
    const table = document.getElementById(block.dataset.table);
    const view = new PointTable(table, JSON.parse(block.textContent));
    views.push(view);
    view.render();
    table.tHead.addEventListener("click", (e) => {
      const th = e.target.closest("th");
      if (!th) return;
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      view.sort(Number(th.dataset.col), ascending);
    });
    table.tBodies[0].addEventListener("click", (e) => {
      const row = e.target.closest("tr.point");
      if (row) toggleDetail(view, row);
    });
    view.more.addEventListener("click", (e) => {
      if (e.target.closest("button")) { view.shown += PAGE; view.render(); }
    });
  }
  if (form) { form.addEventListener("input", applyFilters); form.addEventListener("change", applyFilters); }
})();
