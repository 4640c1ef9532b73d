"""Per-query event stream: bounded in memory, fan-out to live subscribers (stored by the
event log, `concerto.orchestrator.log`).

Emitting is synchronous and cheap (no await) so that every step can be made visible
without slowing the executor; subscribers read through bounded queues and lose the
oldest events, never block the query, when they fall behind.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from concerto.contracts.events import Event, EventType, QueryState
from concerto.redact import scrub, scrub_data

_CLOSED = object()


class EventStream:
    """Events of one query, in order, with step numbers and states."""

    def __init__(self, query_id: str, max_events: int = 1000, queue_size: int = 256) -> None:
        self.query_id = query_id
        # Raw tuples, made into `Event` models only when read or sent to a subscriber:
        # a query nobody watches pays almost nothing for its events.
        self._records: deque[tuple[Any, ...]] = deque(maxlen=max_events)
        self.dropped = 0
        self._seq = 0
        self._queue_size = queue_size
        self._queues: list[asyncio.Queue[Any]] = []
        self.closed = False

    def emit(
        self,
        type: EventType,
        title: str,
        *,
        source: str = "orchestrator",
        step: int = 1,
        state: QueryState | None = None,
        task_id: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Record an event and hand it to every live subscriber."""
        self._seq += 1
        record = (self._seq, type, title, source, step, state, task_id, details or {}, time.time())
        if len(self._records) == self._records.maxlen:
            self.dropped += 1
        self._records.append(record)
        if self._queues:
            event = self._event(record)
            for queue in self._queues:
                _put_dropping_oldest(queue, event)

    def _event(self, r: tuple[Any, ...]) -> Event:
        """The event of a record, as it leaves the stream: its title and details scrubbed
        (`concerto.redact`), so an agent that puts a URL with its password in an event shows
        it to no one. Done here, not in `emit`: an event nobody reads costs nothing more."""
        return Event(
            query_id=self.query_id,
            seq=r[0],
            type=r[1],
            title=scrub(r[2]),
            source=r[3],
            step=r[4],
            state=r[5],
            task_id=r[6],
            details=scrub_data(r[7]),
            ts=r[8],
        )

    @property
    def events(self) -> list[Event]:
        """The events kept in memory (the most recent `max_events`), oldest first."""
        return [self._event(r) for r in self._records]

    def state(self, state: QueryState, title: str | None = None, **details: Any) -> None:
        """Record a transition of the query's processing state (002_*.txt)."""
        self.emit(EventType.STATE, title or state.value, state=state, details=details)

    async def agent_emit(
        self, type: EventType, title: str, details: dict[str, Any], step: int, agent: str, task_id: str
    ) -> None:
        """The `emit` an `AgentContext` calls on behalf of an agent."""
        self.emit(type, title, source=agent, step=step, task_id=task_id, details=details)

    def close(self) -> None:
        """No more events: live subscribers finish after draining."""
        self.closed = True
        for queue in self._queues:
            _put_dropping_oldest(queue, _CLOSED)

    async def subscribe(self) -> AsyncIterator[Event]:
        """Events from now on until `close()`; earlier ones are in `events`."""
        queue: asyncio.Queue[Any] = asyncio.Queue(self._queue_size)
        self._queues.append(queue)
        try:
            while not self.closed or not queue.empty():
                item = await queue.get()
                if item is _CLOSED:
                    return
                yield item
        finally:
            self._queues.remove(queue)


def _put_dropping_oldest(queue: asyncio.Queue[Any], item: Any) -> None:
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(item)


def elapsed_ms(start: float) -> float:
    """Milliseconds since `start` (a `time.perf_counter()` value), rounded to 0.001."""
    return round((time.perf_counter() - start) * 1000, 3)
