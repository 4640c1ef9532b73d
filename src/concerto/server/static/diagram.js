// The plan as a live diagram: tasks and their dependencies laid out with dagre, drawn as SVG.
import dagre from "dagre";
import { clear, fmtMs } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 168, H = 52;
export const STATES = ["waiting", "running", "done", "failed", "fell back", "timed out", "skipped"];

function s(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

export class PlanDiagram {
  constructor(container) {
    this.container = container;
    this.nodes = new Map(); // task_id -> {agent, depends_on, state, ms, started, g, label}
  }

  /** A new plan: [{task_id, agent, depends_on}] */
  plan(tasks) {
    this.nodes.clear();
    clear(this.container);
    const g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: 40, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const t of tasks) g.setNode(t.task_id, { width: W, height: H });
    for (const t of tasks) for (const d of t.depends_on || []) if (g.hasNode(d)) g.setEdge(d, t.task_id);
    dagre.layout(g);
    const { width, height } = g.graph();
    const vw = Math.max(width, W + 16), vh = Math.max(height, H + 16);
    const svg = s("svg", {
      viewBox: `0 0 ${vw} ${vh}`,
      width: vw,
      height: vh,
      role: "img",
      "aria-label": `Plan with ${tasks.length} task(s)`,
      class: "plan-svg",
    });
    const defs = s("defs");
    const marker = s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
    marker.append(s("path", { d: "M0,0L10,5L0,10z", class: "edge-head" }));
    defs.append(marker);
    svg.append(defs);
    for (const e of g.edges()) {
      const pts = g.edge(e).points;
      const d = pts.map((p, i) => `${i ? "L" : "M"}${p.x},${p.y}`).join("");
      svg.append(s("path", { d, class: "edge", "marker-end": "url(#arrow)" }));
    }
    for (const t of tasks) {
      const n = g.node(t.task_id);
      const grp = s("g", { class: "node waiting", transform: `translate(${n.x - W / 2},${n.y - H / 2})`, "data-task": t.task_id, "data-agent": t.agent });
      const title = s("title");
      grp.append(title, s("rect", { width: W, height: H, rx: 8 }));
      const name = s("text", { x: 10, y: 21, class: "node-name" });
      name.textContent = t.agent;
      const label = s("text", { x: 10, y: 40, class: "node-state" });
      grp.append(name, label);
      svg.append(grp);
      this.nodes.set(t.task_id, { ...t, state: "waiting", ms: null, started: null, g: grp, label, title });
      this.paint(t.task_id);
    }
    this.container.append(svg);
  }

  set(taskId, state, ms = null) {
    const n = this.nodes.get(taskId);
    if (!n) return;
    n.state = state;
    if (ms !== null && ms !== undefined) n.ms = ms;
    this.paint(taskId);
  }

  paint(taskId) {
    const n = this.nodes.get(taskId);
    n.g.setAttribute("class", `node ${n.state.replace(" ", "-")}`);
    n.g.setAttribute("data-state", n.state);
    const time = n.ms !== null ? ` · ${fmtMs(n.ms)}` : "";
    n.label.textContent = `${n.state}${time}`;
    n.title.textContent = `${n.agent} (${n.task_id}): ${n.state}${time}`;
  }

  /** Apply one transparency event. */
  event(ev) {
    if (ev.type === "STATE" && ev.state === "Planned" && Array.isArray(ev.details?.tasks)) {
      this.plan(ev.details.tasks);
      return;
    }
    const n = ev.task_id && this.nodes.get(ev.task_id);
    if (!n) return;
    if (ev.type === "ACTION" && ev.source === "orchestrator" && n.state === "waiting") {
      n.started = ev.ts;
      this.set(ev.task_id, "running");
    } else if (ev.type === "RESULT" && ev.source === n.agent && ev.title === `${n.agent} answered`) {
      this.set(ev.task_id, "done", ev.details?.ms ?? (n.started ? (ev.ts - n.started) * 1000 : null));
    } else if (ev.type === "ERROR") {
      if (/ skipped$/.test(ev.title)) this.set(ev.task_id, "skipped");
      else if (ev.details?.kind === "timeout") this.set(ev.task_id, "timed out");
      else this.set(ev.task_id, "failed");
    }
  }

  /** The final word: each agent result's status. */
  settle(agentResults = []) {
    for (const r of agentResults) {
      const state = r.status === "completed" ? (r.used_fallback ? "fell back" : "done")
        : r.status === "timeout" ? "timed out"
        : r.status === "skipped" || r.status === "cancelled" ? "skipped"
        : "failed";
      this.set(r.task_id, state, r.total_latency_ms);
    }
    for (const [id, n] of this.nodes) if (n.state === "waiting" || n.state === "running") this.set(id, "skipped");
  }
}
