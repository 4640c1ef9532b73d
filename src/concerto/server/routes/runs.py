"""Runs (decision 27, `server/runs.py`): `POST /v1/runs` starts a question and answers at once;
`GET /v1/runs/{run_id}` gives its state and result, `GET /v1/runs/{run_id}/events` its events
(resumed after `Last-Event-ID`), from this process or any other sharing the database."""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent

from concerto.server.routes.common import ERROR_JSON, ERRORS, UNAVAILABLE, AskRequest, StreamItem, question
from concerto.server.runs import MAX_EVENT_ID, Run, Runs, RunStarted, RunStatus, after_id, sse_fields

router = APIRouter()

RUN_EVENTS_DESCRIPTION = (
    "Server-sent events of one run: `event` items (id: the event's sequence number), then one "
    "`result` (the output or error contract). Reconnect with `Last-Event-ID` to get only what you missed."
)


async def _run(run_id: str, request: Request) -> Run:
    """The run of the path, from this process or the shared log (resolved before a stream
    starts, so an unknown one is a 404: `UnknownRun`, answered by `server/handlers.py`)."""
    run: Run = await request.app.state.runs.find(run_id)
    return run


@router.post("/v1/runs", status_code=202, response_model=RunStarted, responses={422: ERRORS[422], **UNAVAILABLE})
async def start_run(body: AskRequest, request: Request) -> RunStarted:
    """Start a question and return at once; follow it at `events_url` (server-sent events that
    resume after `Last-Event-ID`) or poll `result_url`, from this process or any other that
    shares its database. The run goes on if readers leave."""
    run = request.app.state.runs.start(await question(body, request), body.now, body.conversation_id)
    await run.recorded.wait()  # in the log before any other process can be asked about it
    return RunStarted(
        run_id=run.run_id,
        query_id=run.query_id,
        events_url=f"/v1/runs/{run.run_id}/events",
        result_url=f"/v1/runs/{run.run_id}",
    )


@router.get("/v1/runs/{run_id}", response_model=RunStatus, responses={404: ERRORS[422], **UNAVAILABLE})
async def run_status(run: Annotated[Run, Depends(_run)]) -> RunStatus:
    """A run's state, and its result once it has one."""
    return run.describe()


@router.get(
    "/v1/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {"description": RUN_EVENTS_DESCRIPTION},
        **{status: ERROR_JSON for status in (404, 422, 503)},
    },
)
async def run_events(
    run: Annotated[Run, Depends(_run)],
    request: Request,
    after: Annotated[int | None, Query(ge=0, le=MAX_EVENT_ID, description="Resume after this event id")] = None,
) -> AsyncIterable[StreamItem]:
    """Every event of the run after `Last-Event-ID` (or `after`), then new ones live, then
    the `result`."""
    runs: Runs = request.app.state.runs
    start = after_id(request.headers.get("last-event-id"), after)
    async for item in runs.follow(run, start):
        yield ServerSentEvent(data=item, **sse_fields(item, run))  # type: ignore[misc]
