// Concerto's page: chat, live plan diagram and timeline, answer, one panel per agent, sources, agents.
//
// URL parameters: `?now=2025-06-15T12:00:00Z` fixes the clock every agent sees (the API's `now`,
// as `concerto ask --now`; for demo data of past years, e.g. the KPI demo's 2023-2025); the
// page shows it in its header. Without it the page never sends `now`.
import { ask } from "./stream.js";
import { h, $, clear, getJSON, fmtMs, scrollRegion } from "./dom.js";
import { PlanDiagram } from "./diagram.js";
import { agentPanel } from "./panels.js";

const HISTORY_KEY = "concerto.history";
const MAX_TURNS = 20;
const MAX_QUERY_CHARS = 499; // the input contract refuses a question of 500 characters or more
const NOW = new URLSearchParams(location.search).get("now");
const diagram = new PlanDiagram($("#diagram"));
let busy = false;
let lastRun = null; // {question, request, events, result, savedAt} of the last answered question, for "Save this run"

function loadHistory() {
  try { return JSON.parse(localStorage.getItem(HISTORY_KEY)) || []; } catch { return []; }
}
function saveHistory(turns) {
  localStorage.setItem(HISTORY_KEY, JSON.stringify(turns.slice(-MAX_TURNS * 2)));
}

function renderHistory() {
  const log = clear($("#chat-log"));
  for (const t of loadHistory()) log.append(h("li", { class: `msg ${t.role}` }, h("span", { class: "who" }, t.role === "user" ? "You" : "Concerto"), h("span", { class: "text" }, t.content)));
  log.scrollTop = log.scrollHeight;
}

function timeline(ev, t0) {
  const dt = t0 ? `+${fmtMs((ev.ts - t0) * 1000)}` : "";
  const who = ev.source === "orchestrator" ? "" : `${ev.source}: `;
  $("#timeline").append(h("li", { class: `ev ${ev.type}` },
    h("span", { class: "ev-type" }, ev.state ? `${ev.type} · ${ev.state}` : ev.type),
    h("span", { class: "ev-title" }, who + ev.title), h("span", { class: "muted" }, dt)));
}

function renderAnswer(body) {
  const box = clear($("#answer"));
  if ("error_message" in body) {
    box.append(h("p", { class: "error", role: "alert" }, body.error_message));
    if (body.alternative_queries?.length) box.append(h("p", {}, "Try:"), followUps(body.alternative_queries));
  } else {
    box.append(h("p", { class: "response" }, body.response));
    if (body.key_findings?.length) box.append(h("h3", {}, "Key findings"), h("ul", {}, body.key_findings.map((f) => h("li", {}, f))));
    if (body.follow_up_questions?.length) box.append(h("h3", {}, "Follow-up questions"), followUps(body.follow_up_questions));
    box.append(h("p", { class: "muted" }, `${(body.agents_invoked || []).join(", ")} · ${fmtMs(body.total_latency_ms)}`));
  }
  const panels = clear($("#panels"));
  for (const r of body.agent_results || body.partial_results || []) panels.append(agentPanel(r));
}

function followUps(list) {
  return h("ul", { class: "chips" }, list.map((q) => h("li", {}, h("button", { type: "button", class: "chip", onclick: () => submit(q) }, q))));
}

/** Whether the question can be sent; if not, say why (the typed text stays in the box). */
function checkQuestion(question) {
  const box = $("#question");
  let problem = "";
  if (!question) problem = "Type a question first.";
  else if (question.length > MAX_QUERY_CHARS) {
    problem = `The question is ${question.length} characters long; the limit is ${MAX_QUERY_CHARS}. Shorten it to one question.`;
  }
  box.setAttribute("aria-invalid", String(Boolean(problem)));
  if (problem) {
    $("#status").textContent = problem;
    $("#status").classList.add("error");
    box.focus();
  }
  return !problem;
}

function countChars() {
  const n = $("#question").value.trim().length;
  const el = $("#count");
  el.hidden = n < MAX_QUERY_CHARS - 99;
  el.textContent = `${n} / ${MAX_QUERY_CHARS} characters`;
  el.classList.toggle("error", n > MAX_QUERY_CHARS);
  if (n <= MAX_QUERY_CHARS) $("#question").setAttribute("aria-invalid", "false");
}

/** Put a question that was not answered back in the box (unless something else was typed). */
function restore(question) {
  const box = $("#question");
  if (!box.value.trim()) { box.value = question; countChars(); }
}

async function submit(question) {
  const typed = question === undefined;
  question = (question ?? $("#question").value).trim();
  if (busy) return;
  if ($("#view-ask").hidden) $("#tab-ask").click();
  if (!checkQuestion(question)) return;
  busy = true;
  $("#ask-button").disabled = true;
  $("#status").classList.remove("error");
  $("#save-run").hidden = true;
  lastRun = null;
  const history = loadHistory();
  const body = {
    query: question,
    user_expertise: $("#expertise").value,
    output_format: $("#format").value,
    conversation_history: history.slice(-MAX_TURNS * 2),
  };
  const source = $("#source").value;
  if (source) body.source = source;
  if (NOW) body.now = NOW;
  clear($("#timeline")); clear($("#diagram")); clear($("#panels"));
  $("#answer").replaceChildren(h("p", { class: "muted" }, "Working…"));
  $("#status").textContent = "Working on it…";
  let t0 = null;
  const events = [];
  const onStart = () => {
    if (typed && $("#question").value.trim() === question) { $("#question").value = ""; countChars(); }
    saveHistory([...history, { role: "user", content: question }]);
    renderHistory();
  };
  const forget = () => { // the question did not get an answer: out of the history, back in the box
    const turns = loadHistory();
    if (turns.at(-1)?.role === "user" && turns.at(-1).content === question) saveHistory(turns.slice(0, -1));
    restore(question);
  };
  try {
    const res = await ask(body, {
      onStart,
      onEvent: (ev) => { events.push(ev); t0 ??= ev.ts; diagram.event(ev); timeline(ev, t0); $("#status").textContent = "Working on it…"; },
      onReconnect: (n) => { $("#status").textContent = `Connection dropped; reconnecting (attempt ${n})…`; },
    });
    if (!res.started) {
      renderAnswer(res.body);
      restore(question);
      $("#status").textContent = res.status >= 500 ? "Server error: the question was not answered; it is back in the box." : "The question was refused; it is back in the box.";
      $("#status").classList.add("error");
      return;
    }
    diagram.settle(res.body.agent_results || res.body.partial_results || []);
    renderAnswer(res.body);
    if (res.lost) {
      forget();
      $("#status").textContent = "The server restarted and lost the question; it is back in the box: ask it again.";
      $("#status").classList.add("error");
      return;
    }
    const text = res.body.response ?? res.body.error_message ?? "";
    saveHistory([...loadHistory(), { role: "assistant", content: text }]);
    lastRun = { question, request: body, events, result: res.body, savedAt: null };
    $("#save-run").hidden = false;
    $("#status").textContent = res.ok ? "Answered." : "The question could not be answered.";
  } catch (e) {
    forget();
    $("#answer").replaceChildren(h("p", { class: "error", role: "alert" }, `Connection problem: ${e.message}. Ask again when the server is back.`));
    $("#status").textContent = "Connection problem: the question is back in the box.";
    $("#status").classList.add("error");
  } finally {
    busy = false;
    $("#ask-button").disabled = false;
    renderHistory();
    $("#question").focus();
  }
}

async function saveLastRun() {
  if (!lastRun) return;
  const button = $("#save-run");
  button.disabled = true;
  try {
    const { saveRun } = await import("./save.js");
    await saveRun({ ...lastRun, savedAt: new Date() });
    $("#status").textContent = "Run saved as one HTML file (see your downloads).";
  } catch (e) {
    $("#status").textContent = `The run could not be saved: ${e.message}.`;
  } finally {
    button.disabled = false;
  }
}

// ---- sources -------------------------------------------------------------
async function loadSources(select) {
  const list = clear($("#source-list"));
  const pick = $("#source");
  const keep = select ?? pick.value;
  pick.replaceChildren(h("option", { value: "" }, "Any (the agents choose)"));
  let sources = [];
  try { sources = await getJSON("/v1/data/sources"); } catch (e) { list.append(h("li", { class: "muted" }, `Sources unavailable: ${e.message}`)); return; }
  if (!sources.length) list.append(h("li", { class: "muted" }, "No sources loaded yet: upload a file."));
  for (const s of sources) {
    pick.append(h("option", { value: s.name }, `${s.name} (${s.row_count} rows)`));
    list.append(h("li", {},
      h("button", { type: "button", class: "link", onclick: () => showSource(s.name) }, s.name),
      h("span", { class: "muted" }, ` ${s.row_count} rows · ${s.columns.length} columns `),
      h("button", { type: "button", class: "danger", "aria-label": `Delete ${s.name}`, onclick: () => dropSource(s.name) }, "Delete")));
  }
  if ([...pick.options].some((o) => o.value === keep)) pick.value = keep;
}

function profileView(ctx) {
  const rows = ctx.columns.map((c) => {
    const p = ctx.detected_types[c] || {};
    return { column: c, type: p.type, role: p.role, nulls: p.nulls, distinct: p.distinct,
      samples: (p.sample_values || []).slice(0, 3).map(String).join(", "), description: ctx.semantic_profile?.field_descriptions?.[c] || "" };
  });
  const cols = ["column", "type", "role", "nulls", "distinct", "samples", "description"];
  return h("div", {},
    h("h3", {}, `${ctx.name}: ${ctx.row_count} rows`),
    h("p", { class: "muted" }, `${ctx.file_name} · ${ctx.semantic_profile?.domain || ""} · one row: ${ctx.semantic_profile?.entity_name || ""}`),
    scrollRegion(`Profile of ${ctx.name}`, h("table", { class: "data" },
      h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, cols.map((c) => h("td", {}, r[c] ?? ""))))))),
    (ctx.notes || []).map((n) => h("p", { class: "muted" }, n)));
}

async function showSource(name) {
  const box = clear($("#profile"));
  try { box.append(profileView(await getJSON(`/v1/data/sources/${encodeURIComponent(name)}`))); }
  catch (e) { box.append(h("p", { class: "error", role: "alert" }, e.message)); }
}

async function dropSource(name) {
  if (!confirm(`Delete the source ${name}?`)) return;
  try { await getJSON(`/v1/data/sources/${encodeURIComponent(name)}`, { method: "DELETE" }); clear($("#profile")); }
  catch (e) { $("#upload-status").textContent = e.message; }
  loadSources();
}

let uploadLimit = null; // bytes, from GET /v1/data/limits (null: unknown, the server decides)

async function loadLimits() {
  try { uploadLimit = (await getJSON("/v1/data/limits")).max_file_bytes; } catch { uploadLimit = null; }
}

const megabytes = (n) => `${Math.round(n / 2 ** 20).toLocaleString()} MB`;

function upload(file) {
  const status = $("#upload-status");
  const bar = $("#upload-progress");
  if (uploadLimit !== null && file.size > uploadLimit) {
    // Refused here: sending gigabytes only for the server to cut the connection helps no one.
    status.classList.add("error");
    status.textContent = `${file.name} is ${megabytes(file.size)}; the server takes files up to ${megabytes(uploadLimit)} `
      + "(CONCERTO_DATA_MAX_FILE_MB). Split it or ask the administrator to raise the limit.";
    return;
  }
  const form = new FormData();
  form.append("file", file);
  const name = $("#upload-name").value.trim();
  if (name) form.append("name", name);
  const xhr = new XMLHttpRequest();
  xhr.open("POST", "/v1/data/sources");
  xhr.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = e.loaded / e.total; };
  bar.hidden = false; bar.value = 0;
  status.classList.remove("error");
  status.textContent = `Uploading ${file.name}…`;
  xhr.onload = () => {
    bar.hidden = true;
    let body = null;
    try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
    if (xhr.status === 201 && body) {
      status.textContent = `Loaded ${body.name}: ${body.row_count} rows. It is now the source of the next question.`;
      clear($("#profile")).append(profileView(body));
      loadSources(body.name);
    } else if (xhr.status === 413) {
      status.textContent = `Upload refused (file too large): ${(body && body.error_message) || "it is over the server's limit (CONCERTO_DATA_MAX_FILE_MB)"}.`;
    } else {
      status.textContent = `Upload failed: ${(body && body.error_message) || `the server answered HTTP ${xhr.status}`}`;
    }
    if (xhr.status !== 201) status.classList.add("error");
  };
  // A server refusing a large file mid-way (413) may close the connection before the browser can read its answer.
  xhr.onerror = () => {
    bar.hidden = true;
    status.classList.add("error");
    status.textContent = `Upload of ${file.name} failed: the connection was lost. A file over the server's size limit `
      + `(CONCERTO_DATA_MAX_FILE_MB${uploadLimit ? `, ${megabytes(uploadLimit)} here` : ""}) is cut off this way; otherwise try again.`;
  };
  xhr.send(form);
}

// ---- agents and health -----------------------------------------------------
async function loadAgents() {
  const list = clear($("#agent-list"));
  try {
    const [agents, status] = await Promise.all([getJSON("/v1/agents"), getJSON("/v1/agents/availability").catch(() => [])]);
    const reasons = new Map(status.filter((x) => !x.available).map((x) => [x.agent, x.reason]));
    for (const a of agents) {
      const reason = reasons.get(a.name);
      list.append(h("li", { class: "agent", "data-available": reason ? "no" : "yes" },
        h("h3", {}, a.name, h("span", { class: "muted" }, ` ${a.pack}`),
          h("span", { class: `pill ${reason ? "off" : "ok"}` }, reason ? "not available" : "available")),
        h("p", {}, a.description),
        reason ? h("p", { class: "muted" }, reason) : "",
        a.examples?.length ? followUps(a.examples.slice(0, 4)) : ""));
    }
  } catch (e) { list.append(h("li", { class: "error" }, e.message)); }
}

async function loadHealth() {
  const el = $("#llm");
  try {
    const hz = await getJSON("/health");
    el.textContent = hz.llm ? "LLM configured" : "No LLM: rules and templates answer";
    el.className = `pill ${hz.llm ? "ok" : "off"}`;
    if (hz.failed_packs?.length) el.title = hz.failed_packs.map((p) => `${p.pack}: ${p.error}`).join("\n");
  } catch { el.textContent = "Server unreachable"; el.className = "pill off"; }
}

// ---- wiring ----------------------------------------------------------------
$("#ask-form").addEventListener("submit", (e) => { e.preventDefault(); submit(); });
$("#question").addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); } });
$("#question").addEventListener("input", countChars);
$("#save-run").addEventListener("click", saveLastRun);
if (NOW) { $("#clock").hidden = false; $("#clock").textContent = `Clock fixed at ${NOW}`; }
$("#clear-history").addEventListener("click", () => { localStorage.removeItem(HISTORY_KEY); renderHistory(); });
$("#file").addEventListener("change", (e) => { if (e.target.files[0]) upload(e.target.files[0]); });
const drop = $("#drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); if (e.dataTransfer.files[0]) upload(e.dataTransfer.files[0]); });
for (const tab of document.querySelectorAll("[role=tab]")) {
  tab.addEventListener("click", () => {
    for (const t of document.querySelectorAll("[role=tab]")) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      $(`#${t.getAttribute("aria-controls")}`).hidden = !on;
    }
    if (tab.id === "tab-agents" && !$("#agent-list").children.length) loadAgents();
  });
}
// The ARIA tabs pattern: only the selected tab is in the Tab order; arrows, Home and End move between tabs.
$("[role=tablist]").addEventListener("keydown", (e) => {
  const tabs = [...document.querySelectorAll("[role=tab]")];
  const at = tabs.indexOf(document.activeElement);
  if (at < 0) return;
  const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[e.key];
  if (next === undefined) return;
  e.preventDefault();
  const tab = tabs[(next + tabs.length) % tabs.length];
  tab.focus();
  tab.click();
});

renderHistory();
loadHealth();
loadLimits();
loadSources();
document.documentElement.dataset.ready = "1";
