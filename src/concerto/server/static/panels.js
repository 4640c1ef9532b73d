// One panel per agent result: its rows as a sortable, paged table, a chart, the queries it ran, its errors.
import { h, fmtMs, scrollRegion } from "./dom.js";

const PAGE = 25;
let chartLib = null;

const drawing = new Set(); // charts still being drawn (Chart.js loading), awaited before a run is saved

/** Chart.js loads only when a panel needs a chart. */
async function loadChart() {
  if (!chartLib) chartLib = import("/static/vendor/chart.js-4.6.1/chart.umd.min.js").then(() => globalThis.Chart);
  return chartLib;
}

/** Resolves once every chart asked for so far is drawn (or has failed). */
export async function chartsDrawn() {
  await Promise.allSettled([...drawing]);
}

/** Draw `config` into a new canvas (in a box) once Chart.js has loaded. */
function drawChart(type, label, config) {
  const canvas = h("canvas", { role: "img", "aria-label": label, "data-chart": type });
  const box = h("div", { class: "chart-box" }, canvas);
  const job = loadChart().then((Chart) => {
    const dark = matchMedia("(prefers-color-scheme: dark)").matches;
    Chart.defaults.color = dark ? "#ddd" : "#333";
    new Chart(canvas, { type, ...config, options: { responsive: true, maintainAspectRatio: false, animation: false, ...config.options } });
    canvas.dataset.drawn = "1";
  }).catch((e) => box.replaceChildren(h("p", { class: "error" }, `Chart unavailable: ${e.message}`)))
    .finally(() => drawing.delete(job));
  drawing.add(job);
  return box;
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
  wrap.fullTable = () => staticTable(rows, caption, columns); // every row, for a saved run
  return wrap;
}

/** Every row as a plain table (no buttons, no paging): what a saved run shows. */
export function staticTable(rows, caption, columns = [...new Set(rows.flatMap((r) => Object.keys(r)))]) {
  return scrollRegion(caption || "Table", h("table", { class: "data" },
    caption ? h("caption", {}, caption) : "",
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, columns.map((c) => h("td", { class: typeof r[c] === "number" ? "num" : null }, cellText(r[c]))))))));
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
  const data = rows.slice(0, 500);
  return drawChart(type, `${type} chart of ${ys.join(", ")} by ${x}`, {
    data: { labels: data.map((r) => cellText(r[x])), datasets: ys.map((y) => ({ label: y, data: data.map((r) => r[y]) })) },
  });
}

// ---- time series: KPI records and metrics datapoints ----------------------------------------

const isTime = (v) => typeof v === "string" && /^\d{4}-\d{2}-\d{2}/.test(v);

function metricsName(s) {
  const labels = isRecord(s.labels) ? Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(", ") : "";
  const name = String(s.label || s.metric_name || "value") + (labels ? ` {${labels}}` : "");
  return s.role && s.role !== "current" ? `${name} (${s.role})` : name;
}

/**
 * The time series of an agent's output, or []: [{name, unit, points: [[time, value]]}].
 * A metrics answer (metrics pack) has `series[]` with `datapoints[{timestamp, value}]` (only the
 * current window is drawn when a baseline is there too), else `datapoints` at the top; a KPI
 * answer (kpi pack) has `records[{kpi, department, month, value, unit}]`, one series per KPI
 * and department.
 */
export function timeSeriesOf(output) {
  if (!isRecord(output)) return [];
  const points = (list) => (Array.isArray(list) ? list : [])
    .filter((p) => isRecord(p) && isTime(p.timestamp) && typeof p.value === "number")
    .map((p) => [p.timestamp, p.value]);
  if (Array.isArray(output.series) && output.series.some((s) => isRecord(s) && Array.isArray(s.datapoints))) {
    let series = output.series.filter(isRecord);
    if (series.some((s) => (s.role || "current") === "current")) series = series.filter((s) => (s.role || "current") === "current");
    const out = series.map((s) => ({ name: metricsName(s), unit: String(s.unit ?? output.unit ?? ""), points: points(s.datapoints) }));
    if (out.some((s) => s.points.length)) return out.filter((s) => s.points.length);
  }
  if (Array.isArray(output.datapoints)) {
    const pts = points(output.datapoints);
    if (pts.length) return [{ name: metricsName(output), unit: String(output.unit ?? ""), points: pts }];
  }
  if (Array.isArray(output.records)) {
    const groups = new Map();
    for (const r of output.records) {
      if (!isRecord(r) || !isTime(r.month) || typeof r.value !== "number") continue;
      const name = [r.kpi, r.department].filter(Boolean).join(" · ") || "value";
      if (!groups.has(name)) groups.set(name, { name, unit: String(r.unit ?? output.unit ?? ""), points: [] });
      groups.get(name).points.push([r.month, r.value]);
    }
    return [...groups.values()];
  }
  return [];
}

function timeLabel(t, span) {
  if (/^\d{4}-\d{2}-01$/.test(t)) return t.slice(0, 7); // a KPI month
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return t;
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return span > 86400e3 ? `${d.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}` : time;
}

/** One line chart per unit of the series (values of different units never share an axis). */
export function timeSeriesCharts(series) {
  const byUnit = new Map();
  for (const s of series) {
    if (!byUnit.has(s.unit)) byUnit.set(s.unit, []);
    byUnit.get(s.unit).push(s);
  }
  const out = [];
  for (const [unit, group] of byUnit) {
    if (!group.some((s) => s.points.length > 1)) continue;
    const times = [...new Set(group.flatMap((s) => s.points.map((p) => p[0])))].sort();
    const ms = times.map((t) => Date.parse(t)).filter((n) => !Number.isNaN(n));
    const span = ms.length ? Math.max(...ms) - Math.min(...ms) : 0;
    const datasets = group.slice(0, 12).map((s) => {
      const at = new Map(s.points);
      return { label: unit ? `${s.name} (${unit})` : s.name, data: times.map((t) => at.get(t) ?? null), spanGaps: true, pointRadius: times.length > 60 ? 0 : 3, tension: 0.2 };
    });
    const names = group.map((s) => s.name).join(", ");
    const chart = drawChart("line", `Line chart over time of ${names}${unit ? ` in ${unit}` : ""}`, {
      data: { labels: times.map((t) => timeLabel(t, span)), datasets },
      options: { scales: { y: { title: { display: Boolean(unit), text: unit } } } },
    });
    chart.classList.add("timeseries");
    out.push(chart);
  }
  return out;
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
  const lines = timeSeriesCharts(timeSeriesOf(r.output)); // KPI and metrics time series: line charts
  panel.append(...lines);
  for (const t of tablesOf(r.output)) {
    if (t.error) panel.append(h("p", { class: "error" }, t.error));
    if (!t.rows.length) continue;
    const chart = lines.length ? null : chartBlock(t.rows, t.chart);
    if (chart) panel.append(chart);
    panel.append(dataTable(t.rows, t.title));
  }
  const queries = queriesOf(r.output);
  if (queries.length) {
    panel.append(h("details", {}, h("summary", {}, `Queries run (${queries.length})`),
      queries.map(([kind, text]) => h("div", {}, h("span", { class: "muted" }, kind), h("pre", {}, h("code", {}, String(text)))))));
  }
  for (const e of r.errors || []) {
    panel.append(h("p", { class: "error agent-error" }, e.message || JSON.stringify(e)));
    if (e.suggestion) panel.append(h("p", { class: "muted" }, e.suggestion));
  }
  if (r.output && !tablesOf(r.output).length) {
    panel.append(h("details", {}, h("summary", {}, "Output"), h("pre", {}, JSON.stringify(r.output, null, 2))));
  }
  return panel;
}
