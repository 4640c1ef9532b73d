// Tiny DOM helpers. Every text from the server goes through textContent, never innerHTML.

/** h("div", {class: "x", onclick: fn}, "text", child) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);

/** A box that scrolls a wide table sideways: a named region in the Tab order, so a keyboard
 * can scroll it too (axe's scrollable-region-focusable) when nothing inside takes focus. */
export function scrollRegion(label, ...children) {
  return h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": label }, ...children);
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export async function getJSON(url, init) {
  const res = await fetch(url, init);
  const body = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) throw new Error((body && (body.error_message || body.detail)) || `${url}: HTTP ${res.status}`);
  return body;
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
