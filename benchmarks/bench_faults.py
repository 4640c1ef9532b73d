"""Fault benchmark (issue 26): a backend that never replies, through `concerto serve`, then SIGTERM.

1. A TCP "blackhole" listener: it accepts connections and never reads or replies.
2. `concerto serve` (as users run it: uvicorn picks uvloop when it is installed) with
   `CONCERTO_PROMETHEUS_URL` pointing at the blackhole, and an intent table that gives the
   metrics agent's task a short timeout (`--task-timeout-ms`), so every question ends on the
   executor's own timer and 1,000 questions take a few minutes, not the 15 s each the agent
   declares.
3. `--questions` metrics questions over HTTP (`POST /v1/ask`), `--in-flight` at a time. A
   question without a response within twice the task timeout is *unanswered*; the client waits
   on to `HANG_S` to tell a late answer (a loaded machine) from none at all (a hung question).
4. `--in-flight` more questions are sent and, while they wait on the backend, SIGTERM: the
   time until the process exits, and what those last questions got.

Goals: 0 unanswered, exit < 5 s after SIGTERM.

With `--baseline REF` the same run is made first on the `src` tree of git revision REF
(e.g. the commit before a fix), and both are printed side by side.

Run:  .venv/bin/python -m benchmarks.bench_faults [--questions 1000] [--in-flight 10]
      [--task-timeout-ms 2000] [--baseline REF] [--output benchmarks/results/faults.md]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from benchmarks.bench_kpi_load import extract_src
from tests._services.blackhole import Blackhole
from tests._services.ports import free_port

ROOT = Path(__file__).resolve().parents[1]

QUESTIONS = [
    "CPU usage by instance",
    "Are all scrape targets up?",
    "Top 3 hosts by memory used",
    "Which instance has the highest CPU usage?",
    "show CPU usage for the last hour",
    "Memory used on the servers this week compared to last week",
    "How much disk space is left on each host?",
    "network traffic received per instance over the last 30 minutes",
]
NOTE = (
    "\nThe questions in flight at SIGTERM end on their own task timeout (2 s), inside `concerto serve`'s "
    "`--shutdown-timeout` (2 s); questions that would outlive it are answered 503 with the error "
    'contract, and streams are ended (`tests/faults/test_serve_blackhole.py`). "Before" hung on the '
    "executor's misreading of its own timer under uvloop; SIGTERM then waited on the hung requests.\n"
)
HANG_S = 60  # a question without any response after this is hung, not late
EXIT_WAIT_S = 60  # after this, the server is killed and its exit time reported as "> EXIT_WAIT_S"


@dataclass
class Result:
    """One server's run."""

    outcomes: Counter[str] = field(default_factory=Counter)  # HTTP status, or "hung" / "closed"
    latencies: list[float] = field(default_factory=list)  # of the questions that got a response
    wall_s: float = 0.0
    exit_s: float | None = None  # None: still running after EXIT_WAIT_S
    last: Counter[str] = field(default_factory=Counter)  # the questions in flight at SIGTERM
    loop: str = "?"  # the server's event loop, read from the libraries it mapped

    def late(self, limit_s: float) -> int:
        return sum(1 for x in self.latencies if x > limit_s)


def start_server(
    data_dir: Path, blackhole: Blackhole, timeout_ms: int, src: Path
) -> tuple[subprocess.Popen[bytes], str]:
    intents = data_dir / "intents.yaml"
    intents.write_text(
        "intents:\n  metrics_agent:\n    description: the metrics agent with a short timeout\n"
        f"    tasks:\n      - {{agent: metrics_agent, timeout_ms: {timeout_ms}}}\n",
        encoding="utf-8",
    )
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CONCERTO_")},
        "PYTHONPATH": str(src),
        "CONCERTO_DATA_DIR": str(data_dir),
        "CONCERTO_PROMETHEUS_URL": blackhole.url,
        "CONCERTO_INTENTS_FILE": str(intents),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "concerto.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(data_dir / "serve.log", "wb"),  # noqa: SIM115  # closed with the process
    )
    return proc, f"http://127.0.0.1:{port}"


async def wait_ready(client: httpx.AsyncClient, base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"concerto serve exited with {proc.returncode} before it was ready")
        try:
            resp = await client.get(f"{base}/ready", timeout=5)
            if resp.status_code == 200 and resp.json().get("ready"):
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.5)
    raise SystemExit("concerto serve was not ready within 180 s")


async def fire(
    client: httpx.AsyncClient, base: str, n: int, in_flight: int, offset: int, into: Counter[str]
) -> list[float]:
    """Ask `n` questions, `in_flight` at a time; count each outcome into `into`; the latencies."""
    slots = asyncio.Semaphore(in_flight)
    latencies: list[float] = []

    async def one(i: int) -> None:
        async with slots:
            start = time.perf_counter()
            question = {"query": f"{QUESTIONS[i % len(QUESTIONS)]} ({i})"}
            try:
                resp = await client.post(f"{base}/v1/ask", json=question, timeout=HANG_S)
            except httpx.TimeoutException:
                into["hung"] += 1
                return
            except httpx.HTTPError:
                into["closed"] += 1
                return
            into[str(resp.status_code)] += 1
            latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(one(offset + i) for i in range(n)))
    return latencies


async def measure(args: argparse.Namespace, src: Path) -> Result:
    result = Result()
    blackhole = Blackhole()
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_server(Path(tmp), blackhole, args.task_timeout_ms, src)
        limits = httpx.Limits(max_connections=args.in_flight * 2, max_keepalive_connections=args.in_flight * 2)
        try:
            async with httpx.AsyncClient(limits=limits) as client:
                await wait_ready(client, base, proc)
                with contextlib.suppress(OSError):
                    result.loop = "uvloop" if "uvloop" in Path(f"/proc/{proc.pid}/maps").read_text() else "asyncio"
                started = time.perf_counter()
                result.latencies = await fire(client, base, args.questions, args.in_flight, 0, result.outcomes)
                result.wall_s = time.perf_counter() - started
                # The last questions: SIGTERM while they wait on the backend.
                last = asyncio.ensure_future(fire(client, base, args.in_flight, args.in_flight, 10**6, result.last))
                await asyncio.sleep(0.5)
                term = time.perf_counter()
                proc.send_signal(signal.SIGTERM)
                try:
                    await asyncio.to_thread(proc.wait, EXIT_WAIT_S)
                    result.exit_s = time.perf_counter() - term
                except subprocess.TimeoutExpired:
                    proc.kill()
                await last
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            blackhole.close()
    return result


def report(args: argparse.Namespace, runs: dict[str, Result]) -> str:
    limit_s = 2 * args.task_timeout_ms / 1000
    command = f"`.venv/bin/python -m benchmarks.bench_faults --questions {args.questions} --in-flight {args.in_flight} "
    command += f"--task-timeout-ms {args.task_timeout_ms}" + (f" --baseline {args.baseline}`" if args.baseline else "`")

    def counts(c: Counter[str]) -> str:
        return ", ".join(f"{k}: {v}" for k, v in sorted(c.items()))

    def exit_time(r: Result) -> str:
        return f"{r.exit_s:.2f} s" if r.exit_s is not None else f"> {EXIT_WAIT_S} s (killed)"

    def median_max(r: Result) -> str:
        xs = sorted(r.latencies)
        return f"{xs[len(xs) // 2]:.2f} s / {xs[-1]:.2f} s" if xs else "-"

    rows = [
        ("event loop of `concerto serve`", lambda r: r.loop),
        ("unanswered: no response within 2 × the task timeout", lambda r: str(r.late(limit_s) + r.outcomes["hung"])),
        (f"of which never answered (nothing after {HANG_S} s: hung)", lambda r: str(r.outcomes["hung"])),
        ("responses by HTTP status", lambda r: counts(r.outcomes)),
        ("response time, median / max", median_max),
        ("wall time for the questions", lambda r: f"{r.wall_s:.0f} s"),
        (f"exit after SIGTERM, {args.in_flight} questions in flight", exit_time),
        (f"the {args.in_flight} questions in flight at SIGTERM", lambda r: counts(r.last)),
    ]
    names = list(runs)
    lines = [
        "### Faults: a backend that never replies, then SIGTERM (issue 26)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} at the end; {command}. `concerto serve` as users run it, "
        f"`CONCERTO_PROMETHEUS_URL` at a listener that accepts and never replies, the metrics agent's "
        f"task timeout {args.task_timeout_ms} ms; {args.questions} metrics questions, {args.in_flight} in flight, "
        f"over HTTP; then {args.in_flight} more and SIGTERM 0.5 s later. Goals: 0 unanswered "
        f"(within {limit_s:g} s), exit < 5 s.",
        "",
        "| measure | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
        *(f"| {label} | " + " | ".join(value(runs[n]) for n in names) + " |" for label, value in rows),
    ]
    return "\n".join(lines) + "\n" + NOTE


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=1000, help="metrics questions to send")
    parser.add_argument("--in-flight", type=int, default=10, help="questions in flight at once")
    parser.add_argument("--task-timeout-ms", type=int, default=2000, help="the metrics agent's task timeout")
    parser.add_argument("--baseline", help="also measure the src tree of this git revision, first")
    parser.add_argument("--output", type=Path, help="write the table (markdown) here too")
    args = parser.parse_args()
    runs: dict[str, Result] = {}
    with tempfile.TemporaryDirectory() as work:
        if args.baseline:
            old_src, commit = extract_src(args.baseline, Path(work))
            runs[f"before ({commit})"] = await measure(args, old_src)
        runs["this tree"] = await measure(args, ROOT / "src")
    text = report(args, runs)
    print(text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
