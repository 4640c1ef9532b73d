"""Fault benchmark (issue 26): a backend that never replies, through `concerto serve`, then SIGTERM.

1. A TCP "blackhole" listener: it accepts connections and never reads or replies.
2. `concerto serve` (as users run it: uvicorn picks uvloop when it is installed) with
   `CONCERTO_PROMETHEUS_URL` pointing at the blackhole, and an intent table that gives the
   metrics agent's task a short timeout (`--task-timeout-ms`), so every question ends on the
   executor's own timer and 1,000 questions take a few minutes, not the 15 s each the agent
   declares.
3. `--questions` metrics questions over HTTP (`POST /v1/ask`), `--in-flight` at a time. A
   question without a response within twice the task timeout is *unanswered* (the client gives
   up on it; the server may still be holding it).
4. `--in-flight` more questions are sent and, while they are in flight, SIGTERM: the time until
   the process exits, and what those last questions got (an answer, or the connection closed).

Goals: 0 unanswered, exit < 5 s after SIGTERM.

Run:  .venv/bin/python benchmarks/bench_faults.py [--questions 1000] [--in-flight 10]
      [--task-timeout-ms 2000]
(To measure another checkout's server, put its sources first: PYTHONPATH=/path/to/src.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _services.blackhole import Blackhole
from _services.ports import free_port

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
EXIT_WAIT_S = 120  # after this, the server is killed and its exit time reported as "> EXIT_WAIT_S"


def start_server(data_dir: Path, blackhole: Blackhole, timeout_ms: int) -> tuple[subprocess.Popen[bytes], str]:
    intents = data_dir / "intents.yaml"
    intents.write_text(
        "intents:\n  metrics_agent:\n    description: the metrics agent with a short timeout\n"
        f"    tasks:\n      - {{agent: metrics_agent, timeout_ms: {timeout_ms}}}\n",
        encoding="utf-8",
    )
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CONCERTO_")},
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


async def ask(client: httpx.AsyncClient, base: str, question: str, limit_s: float) -> str:
    """What became of one question: its HTTP status, `unanswered` or the client error."""
    try:
        resp = await client.post(f"{base}/v1/ask", json={"query": question}, timeout=limit_s)
    except httpx.TimeoutException:
        return "unanswered"
    except httpx.HTTPError as exc:
        return f"closed ({type(exc).__name__})"
    return str(resp.status_code)


async def fire(
    client: httpx.AsyncClient, base: str, n: int, in_flight: int, limit_s: float, offset: int = 0
) -> tuple[Counter[str], list[float]]:
    slots = asyncio.Semaphore(in_flight)
    outcomes: Counter[str] = Counter()
    latencies: list[float] = []

    async def one(i: int) -> None:
        async with slots:
            start = time.perf_counter()
            outcome = await ask(client, base, f"{QUESTIONS[i % len(QUESTIONS)]} ({i})", limit_s)
            outcomes[outcome] += 1
            if outcome != "unanswered":
                latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(one(offset + i) for i in range(n)))
    return outcomes, latencies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=1000, help="metrics questions to send")
    parser.add_argument("--in-flight", type=int, default=10, help="questions in flight at once")
    parser.add_argument("--task-timeout-ms", type=int, default=2000, help="the metrics agent's task timeout")
    args = parser.parse_args()
    limit_s = 2 * args.task_timeout_ms / 1000
    blackhole = Blackhole()
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_server(Path(tmp), blackhole, args.task_timeout_ms)
        limits = httpx.Limits(max_connections=args.in_flight * 2, max_keepalive_connections=args.in_flight * 2)
        try:
            async with httpx.AsyncClient(limits=limits) as client:
                await wait_ready(client, base, proc)
                started = time.perf_counter()
                outcomes, latencies = await fire(client, base, args.questions, args.in_flight, limit_s)
                elapsed = time.perf_counter() - started
                # The last questions: SIGTERM while they are in flight.
                last = asyncio.ensure_future(fire(client, base, args.in_flight, args.in_flight, EXIT_WAIT_S, 10**6))
                await asyncio.sleep(0.5)
                term = time.perf_counter()
                proc.send_signal(signal.SIGTERM)
                try:
                    await asyncio.to_thread(proc.wait, EXIT_WAIT_S)
                    exit_s: float | None = time.perf_counter() - term
                except subprocess.TimeoutExpired:
                    exit_s = None
                    proc.kill()
                last_outcomes, _ = await last
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            blackhole.close()
    latencies.sort()
    p50 = latencies[len(latencies) // 2] if latencies else float("nan")
    p_max = latencies[-1] if latencies else float("nan")
    answered = sum(c for k, c in outcomes.items() if k != "unanswered")
    print(
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} cores; "
        f"`.venv/bin/python benchmarks/bench_faults.py --questions {args.questions} --in-flight {args.in_flight} "
        f"--task-timeout-ms {args.task_timeout_ms}`\n"
    )
    print("| measure | value | goal |")
    print("|---|---|---|")
    print(f"| questions answered (any HTTP response) | {answered} of {args.questions} | all |")
    print(f"| unanswered within {limit_s:g} s | {outcomes['unanswered']} | 0 |")
    print(f"| responses by status | {', '.join(f'{k}: {v}' for k, v in sorted(outcomes.items()))} | |")
    print(f"| answer time, median / max | {p50:.2f} s / {p_max:.2f} s | |")
    print(f"| wall time for the questions | {elapsed:.0f} s | |")
    shown = f"{exit_s:.2f} s" if exit_s is not None else f"> {EXIT_WAIT_S} s (killed)"
    print(f"| exit after SIGTERM, {args.in_flight} questions in flight | {shown} | < 5 s |")
    print(
        f"| the {args.in_flight} questions in flight at SIGTERM | "
        f"{', '.join(f'{k}: {v}' for k, v in sorted(last_outcomes.items()))} | an answer or a closed connection |"
    )


if __name__ == "__main__":
    asyncio.run(main())
