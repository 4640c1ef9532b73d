"""A bounded stop for `concerto serve`: requests still running when the server stops get an answer.

On SIGTERM (or Ctrl-C) uvicorn stops accepting connections and waits for the requests in
flight; `concerto serve` bounds that wait (`--shutdown-timeout`), after which uvicorn cancels
the requests' tasks and runs the app's shutdown (runs stopped, agents and MCP servers closed).
A request cancelled that way would otherwise get uvicorn's bare `500 Internal Server Error`
text, and a stream would be cut without its end. `answer_when_cancelled` wraps the app so that
such a request gets the error contract with `503` and `Retry-After` (ask again: another
process, or this one restarted, will answer), and a response already started (a stream of
events) is ended cleanly, so a client can resume it elsewhere (`Last-Event-ID`).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from concerto.server.errors import error_response

STOPPING = "The server is shutting down and could not finish this question; ask again."


def answer_when_cancelled(app: ASGIApp) -> ASGIApp:
    """`app`, whose HTTP requests cancelled by the server's shutdown end with an answer."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        started = finished = False

        async def tracking_send(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            await app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            # The request's own task, cancelled by uvicorn when the shutdown's wait ran out:
            # answer (the task has nothing left to do) instead of leaving it to a bare 500.
            if finished:
                return
            if started:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            headers = {"Retry-After": "1", "Connection": "close"}
            answer = error_response(503, STOPPING, category="timeout", retry=True, headers=headers)
            await answer(scope, receive, send)

    return wrapped
