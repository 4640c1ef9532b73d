"""Event stream: bounded memory, subscribers that lag lose the oldest events, storage."""

from __future__ import annotations

import asyncio

from concerto.contracts.events import EventType, QueryState
from concerto.orchestrator.events import EventStream
from concerto.orchestrator.log import EventLog


def test_memory_is_bounded() -> None:
    stream = EventStream("q", max_events=10)
    for i in range(25):
        stream.emit(EventType.THINKING, f"step {i}")
    assert len(stream.events) == 10 and stream.dropped == 15
    assert stream.events[-1].seq == 25


async def test_slow_subscriber_never_blocks_the_query() -> None:
    stream = EventStream("q", queue_size=5)
    received: list[int] = []

    async def read() -> None:
        async for event in stream.subscribe():
            received.append(event.seq)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)
    for i in range(50):
        stream.emit(EventType.ACTION, str(i))  # never awaits
    stream.close()
    await asyncio.wait_for(reader, 1)
    assert received and received[-1] == 50 and len(received) <= 6


def test_event_log_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    stream = EventStream("q1")
    stream.state(QueryState.RECEIVED)
    stream.emit(EventType.RESULT, "done", source="echo", details={"ms": 1.5})
    log = EventLog(tmp_path / "events.sqlite")
    log.write(list(stream.events))
    back = log.read("q1")
    assert [e.model_dump() for e in back] == [e.model_dump() for e in stream.events]
    assert log.read(limit=1)[0].title == "done"
