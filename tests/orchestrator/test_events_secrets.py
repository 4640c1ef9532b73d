"""The safety net where events leave the stream: a secret an agent or a library put in an event
is masked for every subscriber and in what the stream keeps. Where the shared log stores rows:
tests/server/test_log_secrets.py."""

from __future__ import annotations

import asyncio

from concerto.contracts.events import Event, EventType
from concerto.orchestrator.events import EventStream

PASSWORD = "s3cret-PASSWORD"
URL = f"http://user:{PASSWORD}@127.0.0.1:9/api"


async def test_events_leave_the_stream_scrubbed() -> None:
    stream = EventStream("q1")
    received: list[Event] = []

    async def watch() -> None:
        received.extend([e async for e in stream.subscribe()])

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0)
    stream.emit(EventType.ACTION, f"Querying {URL}", details={"url": URL, "nested": [{"token": PASSWORD}]})
    stream.close()
    await watcher
    for event in [*received, *stream.events]:
        assert PASSWORD not in event.model_dump_json()
        assert event.title == "Querying http://user:***@127.0.0.1:9/api"
        assert event.details == {"url": "http://user:***@127.0.0.1:9/api", "nested": [{"token": "***"}]}
    assert len(received) == 1
