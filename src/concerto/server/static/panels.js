// One panel per agent result: its rows as a sortable, paged table, a chart, the queries it ran, its errors.
import { h, fmtMs } from "./dom.js";

const PAGE = 25;
let chartLib = null;

/** Chart.js loads only when a panel needs a chart. */
async function loadChart() {
  if (!chartLib) chartLib = import("/static/vendor/chart.js-4.6.1/chart.umd.min.js").then(() => globalThis.Chart);
  return chartLib;
}

const isRecord = (v) => v && typeof v === "object" && !Array.isArray(v);
const isRecords = (v) => Array.isArray(v) && v.length > 0 && v.every(isRecord);

/** The tables of an output: results[j].data with their chart, else the first list of records found. */
export function tablesOf(output) {
  if (!isRecord(output)) return [];
  const hint = output.visualization_hint || output.insights?.visualization_hint || "table";
  if (Array.isArray(output.results) && output.results.some((r) => isRecord(r) && Array.isArray(r.data))) {
    return output.results
      .filter((r) => isRecord(r) && Array.isArray(r.data))
      .map((r) => ({ title: r.purpose || "", rows: r.data.filter(isRecord), chart: r.chart || { type: hint }, error: r.error }));
  }
  const seen = new Set();
  const find = (v, path, depth) => {
    if (depth > 4 || !v || typeof v !== "object" || seen.has(v)) return null;
    seen.add(v);
    if (isRecords(v)) return { path, rows: v };
    if (Array.isArray(v)) return null;
    for (const [k, child] of Object.entries(v)) {
      const got = find(child, path ? `${path}.${k}` : k, depth + 1);
      if (got) return got;
    }
    return null;
  };
  const got = find(output, "", 0);
  return got ? [{ title: got.path, rows: got.rows, chart: { type: hint } }] : [];
}

function cellText(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Math.round(v * 10000) / 10000);
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function compare(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return cellText(a).localeCompare(cellText(b), undefined, { numeric: true });
}

/** A sortable table paged at 25 rows. */
export function dataTable(rows, caption) {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  let sortCol = null, dir = 1, page = 0;
  const wrap = h("div", { class: "table-wrap" });
  const table = h("table", { class: "data" });
  const nav = h("div", { class: "pager" });
  const render = () => {
    const sorted = sortCol === null ? rows : [...rows].sort((a, b) => dir * compare(a[sortCol], b[sortCol]));
    const pages = Math.max(1, Math.ceil(sorted.length / PAGE));
    page = Math.min(page, pages - 1);
    table.replaceChildren(
      caption ? h("caption", {}, caption) : "",
      h("thead", {}, h("tr", {}, columns.map((c) => {
        const sort = sortCol === c ? (dir > 0 ? "ascending" : "descending") : "none";
        return h("th", { scope: "col", "aria-sort": sort },
          h("button", { type: "button", class: "sort", onclick: () => { dir = sortCol === c ? -dir : 1; sortCol = c; render(); } },
            c, sort === "none" ? "" : sort === "ascending" ? " ▲" : " ▼"));
      }))),
      h("tbody", {}, sorted.slice(page * PAGE, page * PAGE + PAGE).map((r) =>
        h("tr", {}, columns.map((c) => h("td", { class: typeof r[c] === "number" ? "num" : null }, cellText(r[c])))))),
    );
    nav.replaceChildren();
    if (pages > 1) {
      nav.append(
        h("button", { type: "button", disabled: page === 0, onclick: () => { page--; render(); } }, "‹ Previous"),
        h("span", { "aria-live": "polite" }, `Page ${page + 1} of ${pages} · ${rows.length} rows`),
        h("button", { type: "button", disabled: page >= pages - 1, onclick: () => { page++; render(); } }, "Next ›"),
      );
    }
  };
  render();
  wrap.append(table, nav);
  return wrap;
}

/** A chart by spec {type, x, y}; nothing for "table" or rows without numbers. */
export function chartBlock(rows, spec) {
  const type = spec?.type || "table";
  if (!["bar", "line", "pie"].includes(type) || rows.length === 0) return null;
  const cols = Object.keys(rows[0]);
  const numeric = (c) => rows.every((r) => r[c] === null || typeof r[c] === "number");
  const x = spec.x && cols.includes(spec.x) ? spec.x : cols.find((c) => !numeric(c)) || cols[0];
  let ys = (Array.isArray(spec.y) ? spec.y : spec.y ? [spec.y] : []).filter((c) => cols.includes(c));
  if (!ys.length) ys = cols.filter((c) => c !== x && numeric(c)).slice(0, type === "pie" ? 1 : 3);
  if (!ys.length) return null;
  const canvas = h("canvas", { role: "img", "aria-label": `${type} chart of ${ys.join(", ")} by ${x}` });
  const box = h("div", { class: "chart-box" }, canvas);
  const data = rows.slice(0, 500);
  loadChart().then((Chart) => {
    const dark = matchMedia("(prefers-color-scheme: dark)").matches;
    Chart.defaults.color = dark ? "#ddd" : "#333";
    new Chart(canvas, {
      type,
      data: { labels: data.map((r) => cellText(r[x])), datasets: ys.map((y) => ({ label: y, data: data.map((r) => r[y]) })) },
      options: { responsive: true, maintainAspectRatio: false, animation: false },
    });
  }).catch((e) => box.replaceChildren(h("p", { class: "error" }, `Chart unavailable: ${e.message}`)));
  return box;
}

function queriesOf(output) {
  const out = [];
  if (!isRecord(output)) return out;
  for (const q of output.queries_executed || []) if (q && (q.sql || typeof q === "string")) out.push(["SQL", q.sql || q]);
  const prom = output.promql;
  for (const p of Array.isArray(prom) ? prom : prom ? [prom] : []) out.push(["PromQL", p]);
  return out;
}

export function agentPanel(r) {
  const status = r.status === "completed" && r.used_fallback ? "fell back" : r.status;
  const panel = h("section", { class: `panel status-${String(r.status)}`, "aria-label": `${r.agent} results`, "data-agent": r.agent },
    h("h3", {}, r.agent, h("span", { class: "badge" }, status), h("span", { class: "muted" }, fmtMs(r.total_latency_ms))));
  if (r.summary) panel.append(h("p", {}, r.summary));
  if (r.fallback_reason) panel.append(h("p", { class: "muted" }, `Fallback: ${r.fallback_reason}`));
  for (const t of tablesOf(r.output)) {
    if (t.error) panel.append(h("p", { class: "error" }, t.error));
    if (!t.rows.length) continue;
    const chart = chartBlock(t.rows, t.chart);
    if (chart) panel.append(chart);
    panel.append(dataTable(t.rows, t.title));
  }
  const queries = queriesOf(r.output);
  if (queries.length) {
    panel.append(h("details", {}, h("summary", {}, `Queries run (${queries.length})`),
      queries.map(([kind, text]) => h("div", {}, h("span", { class: "muted" }, kind), h("pre", {}, h("code", {}, String(text)))))));
  }
  for (const e of r.errors || []) panel.append(h("p", { class: "error", role: "alert" }, e.message || JSON.stringify(e)));
  if (r.output && !tablesOf(r.output).length) {
    panel.append(h("details", {}, h("summary", {}, "Output"), h("pre", {}, JSON.stringify(r.output, null, 2))));
  }
  return panel;
}
