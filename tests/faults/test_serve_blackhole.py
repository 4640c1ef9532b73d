"""`concerto serve` (uvloop, as users run it) against a Prometheus that accepts and never replies:
every question gets an answer, and SIGTERM with questions in flight stops the server in < 5 s.

Before: about one question in fifty waited forever (the executor misread its own timer under
uvloop), and SIGTERM waited on them for minutes.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest

from _services.blackhole import Blackhole, blackhole
from _services.serve import Served, running_serve

# Generous: on a busy 2-core machine a question still ends within seconds of its timeout; one
# that hangs never does.
ANSWER_BOUND_S = 60
DISPATCHED = "Dispatching metrics_agent"  # the event of a question whose task has started


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


async def ask_all(base: str, n: int, in_flight: int, sent: list[int] | None = None) -> list[int | str]:
    """Send `n` metrics questions, `in_flight` at a time: each one's HTTP status, `unanswered`, or
    `closed` (the connection closed without an answer). `sent` gets each question's number once
    its request is sent whole."""
    slots = asyncio.Semaphore(in_flight)

    async def one(client: httpx.AsyncClient, i: int) -> int | str:
        async def trace(event: str, info: dict[str, Any]) -> None:
            if event == "http11.send_request_body.complete" and sent is not None:
                sent.append(i)

        async with slots:
            try:
                reply = await client.post(
                    f"{base}/v1/ask",
                    json={"query": f"CPU usage by instance ({i})"},
                    timeout=ANSWER_BOUND_S,
                    extensions={"trace": trace},
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


async def stream_events(base: str, dispatched: asyncio.Event | None = None) -> str:
    """Follow one question's event stream to its end: `ended` (cleanly, with or without the
    `result`), or `cut` (the connection closed in the middle of the body). `dispatched` is set
    when the metrics agent's task is."""
    async with (
        httpx.AsyncClient(timeout=ANSWER_BOUND_S) as client,
        client.stream("POST", f"{base}/v1/ask/stream", json={"query": "CPU usage by instance"}) as reply,
    ):
        try:
            async for line in reply.aiter_lines():
                if dispatched and line.startswith("data:") and json.loads(line[5:]).get("title") == DISPATCHED:
                    dispatched.set()
        except httpx.RemoteProtocolError:
            return "cut"
    return "ended"


def test_sigterm_with_questions_in_flight_stops_within_5_s(hole: Blackhole, tmp_path: Path) -> None:
    """Eleven questions in flight wait on the backend (on its reply, or on the metric catalog
    another is loading from it), and would for two minutes (their timeouts): the server stops
    within 5 s of SIGTERM, timed from the signal to its exit."""
    with serve_against(hole, tmp_path, timeout_ms=120_000) as served:

        async def main() -> tuple[list[int | str], str, float | None]:
            sent: list[int] = []
            dispatched = asyncio.Event()
            asking = asyncio.ensure_future(ask_all(served.base, 10, 10, sent))
            streaming = asyncio.ensure_future(stream_events(served.base, dispatched))
            await asyncio.wait_for(dispatched.wait(), 60)  # the stream's question waits on the backend
            deadline = time.monotonic() + 60
            while len(sent) < 10:
                assert time.monotonic() < deadline, f"{len(sent)} of 10 questions sent"
                await asyncio.sleep(0.02)
            # The server reads requests in the order they arrive and starts each one's task as it
            # reads it: once a later request is answered, the ten are in flight in the app.
            async with httpx.AsyncClient(base_url=served.base) as later:
                assert (await later.get("/health")).status_code == 200
            assert not asking.done() and not streaming.done()
            took = await asyncio.to_thread(served.terminate_timed, 60)
            return await asking, await streaming, took

        outcomes, stream, took = asyncio.run(main())
        assert took is not None, "concerto serve was still running 60 s after SIGTERM"
    assert took < 5, f"concerto serve took {took:.1f} s to stop"
    # each question in flight was answered (503: ask again, with the error contract), none left
    # hanging or its connection closed
    assert outcomes == [503] * 10, outcomes
    assert stream == "ended"  # a stream in flight is ended, not cut: its client can tell and resume
