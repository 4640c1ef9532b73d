"""Page benchmark (issue 17): first-load weight, time to the first answer, and how far the
timeline trails the server's events, in Debian's Chromium (Playwright, by path) against
`concerto serve` on loopback.

- Weight: every response the browser received until the page was ready, gzipped as the
  server would send it with compression (the files' own bytes, gzip level 6).
- Time to first answer: from navigation start to the answer on screen, for a structured
  question (echo) and for the seed's commercial question, in a data dir prepared once
  (router vectors cached, data set loaded), five runs each.
- Lag: for each event, the time it appeared in the timeline minus the time the server made
  it (same machine, same clock); the first echo question of the server process (its MCP
  server starts then) is also reported alone.

    .venv/bin/python -m benchmarks.bench_page [--runs 5] [--output benchmarks/results/page.md]
    .venv/bin/python -m benchmarks.bench_page --only lag   # the lag alone, printed; no file written
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tests._services.ports import free_port

ROOT = Path(__file__).resolve().parent.parent

CHROMIUM = os.environ.get("CONCERTO_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
QUESTIONS = {
    "echo (structured)": "echo: hello",
    "commercial (seed)": "What's the impact of increased sampling on Kisqali prescriptions?",
}
# Watches the timeline: the time each row appears (the page's own clock, ms since the epoch).
OBSERVE = """
window.__rows = [];
new MutationObserver((records) => {
  for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 1) window.__rows.push(Date.now());
}).observe(document.querySelector('#timeline'), {childList: true, subtree: false});
"""


def serve(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "CONCERTO_DATA_DIR": str(data_dir)}
    proc = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "concerto"), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("concerto serve did not start")


def first_load(browser: Any, base: str) -> list[str]:
    """Bytes the page needs before a question, raw and gzipped, per file."""
    page = browser.new_page()
    loaded: list[str] = []
    page.on("requestfinished", lambda r: loaded.append(r.url))
    page.goto(base + "/")
    page.wait_for_selector("html[data-ready='1']")
    page.wait_for_load_state("networkidle")
    rows, raw_total, gz_total = [], 0, 0
    for url in loaded:
        path = url[len(base) :] or "/"
        if not (path == "/" or path.startswith("/static/")):
            continue  # API calls (agents, health, sources) are data, not the page
        body = httpx.get(url).content
        gz = len(gzip.compress(body, 6))
        raw_total += len(body)
        gz_total += gz
        rows.append(f"| `{path}` | {len(body) / 1024:.1f} | {gz / 1024:.1f} |")
    page.close()
    return [
        "| file | KB | KB gzipped |",
        "|---|---|---|",
        *rows,
        f"| **first load** | **{raw_total / 1024:.1f}** | **{gz_total / 1024:.1f}** |",
        "",
        "Chart.js (71 KB gzipped) loads only when a panel draws a chart. For comparison "
        "(DEPENDENCIES.md, measured from their wheels, not in this run): Streamlit 0.66 MB, "
        "Chainlit's main bundle 1.31 MB gzipped plus fonts and KaTeX from a CDN.",
    ]


def answer_times(browser: Any, base: str, runs: int) -> tuple[list[str], list[list[float]]]:
    """The answer-time table, and the timeline's lag per event of each run (echo's first run first)."""
    from playwright.sync_api import expect

    lines = ["| question | median s | min s | max s |", "|---|---|---|---|"]
    lags: list[list[float]] = []
    for label, question in QUESTIONS.items():
        seconds = []
        for _ in range(runs):
            page = browser.new_page()
            page.add_init_script("localStorage.clear()")
            run_ids: list[str] = []
            page.on(
                "response",
                lambda r, ids=run_ids: (
                    ids.append(r.json()["run_id"])
                    if r.url.endswith("/v1/runs") and r.request.method == "POST" and r.status == 202
                    else None
                ),
            )
            started = time.perf_counter()
            page.goto(base + "/")
            page.wait_for_selector("html[data-ready='1']")
            page.evaluate(OBSERVE)
            page.fill("#question", question)
            page.press("#question", "Enter")
            # The page's CSP forbids eval, so no wait_for_function: the status line ends with "." when done.
            expect(page.locator("#status")).to_have_text(re.compile(r"\.$"), timeout=120_000)
            seconds.append(time.perf_counter() - started)
            shown = page.evaluate("window.__rows")
            if run_ids:
                made = [e["ts"] * 1000 for e in _events(base, run_ids[0])]
                lags.append([s - m for s, m in zip(shown, made, strict=False)])
            page.close()
        lines.append(f"| {label} | {statistics.median(seconds):.2f} | {min(seconds):.2f} | {max(seconds):.2f} |")
    return lines, lags


def _events(base: str, run_id: str) -> list[dict[str, Any]]:
    import json

    text = httpx.get(f"{base}/v1/runs/{run_id}/events", timeout=30).text
    out = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if fields.get("event") == "event":
            out.append(json.loads(fields["data"]))
    return out


def lag_summary(runs: list[list[float]]) -> str:
    lags = sorted(lag for run in runs for lag in run)
    if not lags:
        return "Timeline lag: no events matched."
    first = f"; on the first echo question of the process, max {max(runs[0]):.0f} ms" if runs and runs[0] else ""
    return (
        f"Timeline lag behind the server's events over {len(lags)} events: median {statistics.median(lags):.0f} ms, "
        f"95th percentile {lags[int(0.95 * (len(lags) - 1))]:.0f} ms, max {lags[-1]:.0f} ms{first} "
        "(goal: within 100 ms)."
    )


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "page.md")
    parser.add_argument("--only", choices=["lag"], help="measure only the timeline's lag, print it, write nothing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-page-") as tmp:
        proc, base = serve(Path(tmp))
        try:
            # Prepare the data dir once (the data set loads on first use), as a user's second visit.
            httpx.post(f"{base}/v1/ask", json={"query": QUESTIONS["commercial (seed)"]}, timeout=300)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                weight = [] if args.only else first_load(browser, base)
                times, runs = answer_times(browser, base, args.runs)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(10)
    lag_line = lag_summary(runs)
    if args.only:
        print(lag_line)
        print("max lag per run, ms:", [round(max(run)) if run else None for run in runs])
        return
    command = " ".join(["python -m benchmarks.bench_page", *sys.argv[1:]])
    body = [
        "## Web page (issue 17)",
        "",
        f"`{command}` on {platform.machine()}, {os.cpu_count()} cores, Chromium from Debian, Python "
        f"{platform.python_version()}.",
        "",
        "### First load",
        "",
        *weight,
        "",
        f"### Time to the first answer (navigation to answer on screen, {args.runs} runs each)",
        "",
        *times,
        "",
        lag_line,
    ]
    args.output.write_text("\n".join(body) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
