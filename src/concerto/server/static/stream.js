// The live event source of one question: a run (POST /v1/runs) whose events are read as
// server-sent events and resumed with Last-Event-ID when the stream drops. The only module
// that knows the transport.

/** Parse an SSE byte stream into {event, id, data} messages (the WHATWG rules that matter here). */
export async function* sseMessages(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let msg = { event: "message", id: null, data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let nl;
    while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (msg.data.length) yield { event: msg.event, id: msg.id, data: msg.data.join("\n") };
        msg = { event: "message", id: msg.id, data: [] };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "event") msg.event = val;
      else if (field === "data") msg.data.push(val);
      else if (field === "id") msg.id = val;
    }
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const MAX_RETRIES = 20;

/**
 * Ask a question and follow it live: POST /v1/runs starts it, then its events stream is read;
 * a dropped stream is reopened with Last-Event-ID, so the server replays only what was missed
 * (the question goes on meanwhile). Calls onEvent(event) per transparency event and
 * onStart(run) once the server has accepted the question, onReconnect(attempt) before each
 * retry; resolves to {ok, status, started, lost, body} where body is the output or the error
 * contract: started is false when the server refused the question (nothing ran), lost is true
 * when the server no longer knows the run (it restarted: the question must be asked again).
 */
export async function ask(body, { onEvent = () => {}, onStart = () => {}, onReconnect = () => {}, signal } = {}) {
  const res = await fetch("/v1/runs", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) return { ok: false, status: res.status, started: false, body: await errorBody(res) };
  const run = await res.json();
  onStart(run);
  let last = null;
  for (let attempt = 0; ; attempt++) {
    try {
      const headers = { Accept: "text/event-stream" };
      if (last !== null) headers["Last-Event-ID"] = last;
      const stream = await fetch(run.events_url, { headers, signal });
      if (stream.status === 404) {
        // The server no longer knows the run (it restarted): the question is lost, not the page.
        return { ok: false, status: 404, started: true, lost: true, body: { error_message: "The server restarted and lost this question: ask it again." } };
      }
      if (!stream.ok) throw new Error(`the server answered ${stream.status}`);
      for await (const m of sseMessages(stream.body)) {
        if (m.id !== null) last = m.id;
        const data = JSON.parse(m.data);
        if (m.event === "event") onEvent(data);
        else if (m.event === "result") return { ok: !("error_message" in data), status: 200, started: true, body: data };
      }
    } catch (e) {
      if (signal?.aborted || attempt >= MAX_RETRIES) throw e;
    }
    onReconnect(attempt + 1);
    await sleep(Math.min(250 * 2 ** attempt, 4000));
  }
}

/** The error contract of a refused request; for anything else (a proxy's or a crashed server's
 * page) a message saying what happened. */
async function errorBody(res) {
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  if (body && typeof body.error_message === "string") return body;
  const what = res.status >= 500 ? "The server had an error" : "The server refused the question";
  return { error_message: `${what} (HTTP ${res.status}); nothing was answered. Try again.` };
}
