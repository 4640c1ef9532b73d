// "Save this run": the finished run as ONE self-contained HTML file that reads without script and
// without network: the question, the answer and key findings, the plan diagram (its SVG), the
// timeline, every panel with all its table rows and its charts as PNG images (canvas.toDataURL),
// the page's CSS inline, and the run (events and result) as JSON in a
// <script type="application/json"> for a program to read. Its own policy forbids every request
// and every script. Loaded only when the button is clicked (not part of the first load).
import { h, $ } from "./dom.js";
import { chartsDrawn } from "./panels.js";

const POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";
const SAVED_CSS = `
.saved .top .pill { margin-left: auto; }
.saved .question { font-weight: 600; white-space: pre-wrap; overflow-wrap: anywhere; }
.chart-img { display: block; max-width: 100%; height: auto; margin: .5rem 0; }
.saved .timeline { max-height: none; }
`;

/** The rules of the page's own style sheets, as text. */
function pageCss() {
  const out = [];
  for (const sheet of document.styleSheets) {
    try {
      for (const rule of sheet.cssRules) out.push(rule.cssText);
    } catch { /* a sheet of another origin: the page has none */ }
  }
  return out.join("\n");
}

function escapeText(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** JSON that cannot end its <script> element early: every "<" written as \u003c. */
function scriptJson(value) {
  return JSON.stringify(value, null, 1).replace(/</g, "\\u003c");
}

/** A clone of `live` with nothing that needs script: buttons become text, pagers go, paged
 * tables become full ones, canvases become images. */
function staticCopy(doc, live) {
  const copy = doc.importNode(live, true); // into the saved document: a canvas's inline style is no style of this page
  const liveTables = [...live.querySelectorAll(".table-wrap")];
  const copyTables = [...copy.querySelectorAll(".table-wrap")];
  liveTables.forEach((t, i) => { if (t.fullTable && copyTables[i]) copyTables[i].replaceWith(t.fullTable()); });
  const liveCanvases = [...live.querySelectorAll("canvas")];
  const copyCanvases = [...copy.querySelectorAll("canvas")];
  liveCanvases.forEach((c, i) => {
    let src = "";
    try { src = c.toDataURL("image/png"); } catch { /* a tainted canvas: none here */ }
    const label = c.getAttribute("aria-label") || "chart";
    copyCanvases[i]?.closest(".chart-box")?.replaceWith(
      src.startsWith("data:image/") ? h("img", { class: "chart-img", src, alt: label, width: c.width, height: c.height }) : h("p", { class: "muted" }, `(${label}: not drawn)`),
    );
  });
  for (const el of copy.querySelectorAll(".pager")) el.remove();
  for (const b of copy.querySelectorAll("button")) b.replaceWith(h("span", { class: b.className }, b.textContent));
  for (const el of copy.querySelectorAll("[id]")) el.removeAttribute("id");
  copy.removeAttribute("id");
  return copy;
}

function stamp(d) {
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** The saved file's HTML text for `run` = {question, request, events, result, savedAt}. */
export async function runHtml(run) {
  await chartsDrawn();
  // The body is built as elements (text through textContent) in a document of its own and
  // serialized; the head is written as text.
  const doc = document.implementation.createHTMLDocument();
  const title = `Concerto: ${run.question}`.slice(0, 200);
  const head = [
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${POLICY}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<title>${escapeText(title)}</title>`,
    `<style>\n${(pageCss() + SAVED_CSS).replace(/<\//g, "<\\/")}\n</style>`,
  ].join("\n");
  const req = run.request || {};
  const svg = $("#diagram svg");
  const result = run.result || {};
  doc.body.className = "saved";
  doc.body.append(
    h("header", { class: "top" }, h("h1", {}, "Concerto"),
      h("span", { class: "pill" }, `Saved run · ${run.savedAt.toLocaleString()}${result.query_id ? ` · ${result.query_id}` : ""}`)),
    h("main", {},
      h("section", { "aria-labelledby": "q-h" }, h("h2", { id: "q-h" }, "Question"),
        h("p", { class: "question" }, run.question),
        h("p", { class: "muted" }, [`for ${req.user_expertise || "analyst"}`, `format ${req.output_format || "narrative"}`,
          req.source ? `source ${req.source}` : "", req.now ? `clock fixed at ${req.now}` : ""].filter(Boolean).join(" · "))),
      h("section", { "aria-labelledby": "a-h" }, h("h2", { id: "a-h" }, "Answer"), staticCopy(doc, $("#answer"))),
      h("div", { class: "live" },
        h("section", { "aria-labelledby": "p-h" }, h("h2", { id: "p-h" }, "Plan"),
          h("div", { class: "diagram" }, svg ? doc.importNode(svg, true) : h("p", { class: "muted" }, "No plan."))),
        h("section", { "aria-labelledby": "t-h" }, h("h2", { id: "t-h" }, "Timeline"), staticCopy(doc, $("#timeline")))),
      h("section", { "aria-labelledby": "r-h" }, h("h2", { id: "r-h" }, "Agents' results"), staticCopy(doc, $("#panels"))),
      h("script", { type: "application/json", id: "concerto-run", text: "" }),
    ),
  );
  // Set as raw text: the serializer writes a script's text unescaped, hence scriptJson's escaping.
  doc.getElementById("concerto-run").textContent = scriptJson({ question: run.question, request: req, events: run.events, result });
  return `<!doctype html>\n<html lang="en">\n<head>\n${head}\n</head>\n${doc.body.outerHTML}\n</html>\n`;
}

/** Download the run as concerto-run-YYYYMMDD-HHMMSS.html. */
export async function saveRun(run) {
  const html = await runHtml(run);
  const url = URL.createObjectURL(new Blob([html], { type: "text/html;charset=utf-8" }));
  const a = h("a", { href: url, download: `concerto-run-${stamp(run.savedAt)}.html`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
