"""How the app answers what no route answers itself, always in a route's error shape: a body
that does not validate or is not JSON (the error contract, not FastAPI's own shape), a body
over the limit (in the shape of the route that was reading), a run that does not exist, the
shared log out of reach, and a 405 that lists every method of the path."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response

from concerto.orchestrator.engine import validation_message
from concerto.server.edge import BodyTooLarge
from concerto.server.errors import error_response, refusal
from concerto.server.lookup import every_route
from concerto.server.runs import UnknownRun
from concerto.store import LogUnavailable

log = logging.getLogger(__name__)

_BODY_NOT_PARSED = "There was an error parsing the body"  # FastAPI's words for a body that is not UTF-8 JSON


def add_error_handlers(app: FastAPI) -> None:
    """The app's exception handlers (FastAPI has them per app, not per router)."""
    app.exception_handler(RequestValidationError)(_invalid)
    app.exception_handler(BodyTooLarge)(_too_large)
    app.exception_handler(HTTPException)(_http)
    app.exception_handler(UnknownRun)(_unknown_run)
    app.exception_handler(LogUnavailable)(_log_unavailable)


async def _invalid(request: Request, exc: RequestValidationError) -> Response:
    return error_response(422, f"Invalid request — {validation_message(exc.errors(), skip='body')}")


async def _too_large(request: Request, exc: BodyTooLarge) -> Response:
    """In the shape of the route that was reading (OpenAI's, JSON-RPC's, or the error contract)."""
    return refusal(request.scope, exc.status_code, exc.detail)


async def _http(request: Request, exc: HTTPException) -> Response:
    if exc.status_code == 400 and exc.detail == _BODY_NOT_PARSED:
        return error_response(422, "Invalid request — the body is not JSON in UTF-8")
    if exc.status_code == 405:  # Starlette lists the methods of the first route of the path only
        exc.headers = {**(exc.headers or {}), "Allow": ", ".join(_methods(request.app, request.url.path))}
    return await http_exception_handler(request, exc)


async def _unknown_run(request: Request, exc: UnknownRun) -> Response:
    return error_response(404, str(exc))


async def _log_unavailable(request: Request, exc: LogUnavailable) -> Response:
    log.warning("%s", exc)
    message = f"The server's database cannot be reached; try again shortly ({exc})"
    return error_response(503, message, category="synthesis_failed", retry=True)


def _methods(app: FastAPI, path: str) -> list[str]:
    """Every method some route of `path` accepts."""
    found: set[str] = set()
    for route in every_route(app):
        regex, methods = getattr(route, "path_regex", None), getattr(route, "methods", None)
        if regex is not None and methods and regex.match(path):
            found |= set(methods)
    return sorted(found)
