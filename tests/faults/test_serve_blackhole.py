"""`concerto serve` (uvloop, as users run it) against a Prometheus that accepts and never replies:
every question gets an answer, and SIGTERM with questions in flight stops the server in < 5 s.

Before: about one question in fifty waited forever (the executor misread its own timer under
uvloop), and SIGTERM waited on them for minutes.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, suppress
from pathlib import Path

import httpx
import pytest

from _services.blackhole import Blackhole, blackhole
from _services.serve import Served, running_serve

# Generous: on a busy 2-core machine a question still ends within seconds of its timeout; one
# that hangs never does.
ANSWER_BOUND_S = 60


def metrics_with_timeout(tmp_path: Path, timeout_ms: int) -> Path:
    """An intent table giving the metrics agent's task `timeout_ms` (the agent declares 15 s)."""
    path = tmp_path / "intents.yaml"
    path.write_text(
        f"intents:\n  metrics_agent:\n    tasks:\n      - {{agent: metrics_agent, timeout_ms: {timeout_ms}}}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def hole() -> Iterator[Blackhole]:
    with blackhole() as hole:
        yield hole


def serve_against(hole: Blackhole, tmp_path: Path, timeout_ms: int) -> AbstractContextManager[Served]:
    return running_serve(
        {
            "CONCERTO_DATA_DIR": str(tmp_path / "data"),
            "CONCERTO_PROMETHEUS_URL": hole.url,
            "CONCERTO_METRICS_TIMEOUT_S": "600",  # the backend's own timeout never ends a question here
            "CONCERTO_INTENTS_FILE": str(metrics_with_timeout(tmp_path, timeout_ms)),
        },
        ready="/ready",
        timeout_s=180,
    )


async def ask_all(base: str, n: int, in_flight: int) -> list[int | str]:
    """Send `n` metrics questions, `in_flight` at a time: each one's HTTP status, `unanswered`, or
    `closed` (the connection closed without an answer)."""
    slots = asyncio.Semaphore(in_flight)

    async def one(client: httpx.AsyncClient, i: int) -> int | str:
        async with slots:
            try:
                reply = await client.post(
                    f"{base}/v1/ask", json={"query": f"CPU usage by instance ({i})"}, timeout=ANSWER_BOUND_S
                )
            except httpx.TimeoutException:
                return "unanswered"
            except httpx.TransportError:
                return "closed"
            assert reply.json()["error_category"], reply.text  # the error contract
            return reply.status_code

    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=in_flight)) as client:
        return await asyncio.gather(*(one(client, i) for i in range(n)))


def test_every_question_against_a_blackhole_is_answered(hole: Blackhole, tmp_path: Path) -> None:
    with serve_against(hole, tmp_path, timeout_ms=250) as served:
        outcomes = asyncio.run(ask_all(served.base, 200, 10))
    assert hole.connections > 0  # the questions did reach the backend
    assert outcomes.count("unanswered") == 0
    assert set(outcomes) <= {502, 504}


async def stream_events(base: str) -> str:
    """Follow one question's event stream to its end: `ended` (cleanly, with or without the
    `result`), or `cut` (the connection closed in the middle of the body)."""
    async with (
        httpx.AsyncClient(timeout=ANSWER_BOUND_S) as client,
        client.stream("POST", f"{base}/v1/ask/stream", json={"query": "CPU usage by instance"}) as reply,
    ):
        try:
            async for _ in reply.aiter_lines():
                pass
        except httpx.RemoteProtocolError:
            return "cut"
    return "ended"


def test_sigterm_with_questions_in_flight_stops_within_5_s(hole: Blackhole, tmp_path: Path) -> None:
    with serve_against(hole, tmp_path, timeout_ms=120_000) as served:

        async def main() -> tuple[list[int | str], str, float]:
            asking = asyncio.ensure_future(ask_all(served.base, 10, 10))
            streaming = asyncio.ensure_future(stream_events(served.base))
            await asyncio.sleep(2)  # all are waiting on the backend
            assert not asking.done() and not streaming.done()
            started = time.monotonic()
            served.process.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(served.process.wait, 60)
            took = time.monotonic() - started
            return await asking, await streaming, took

        outcomes, stream, took = asyncio.run(main())
        assert served.process.poll() is not None, "concerto serve was still running 60 s after SIGTERM"
    assert took < 5, f"concerto serve took {took:.1f} s to stop"
    # each question was answered (503: ask again, with the error contract), or at worst its
    # connection closed; none was left hanging
    assert set(outcomes) <= {503, "closed"}, outcomes
    assert stream == "ended"  # a stream in flight is ended, not cut: its client can tell and resume
