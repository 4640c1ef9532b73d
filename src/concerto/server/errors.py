"""How the HTTP API says no: the error contract as a JSON response (the one builder of it), a
refusal in the shape of the route it was meant for, and the words of a 413."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi.responses import JSONResponse
from starlette.responses import Response
from starlette.types import Scope

from concerto.contracts.orchestrator import ErrorCategory, OrchestratorErrorResponse
from concerto.server.lookup import OwnErrors, route_for


def error_response(
    status: int,
    message: str,
    *,
    category: ErrorCategory | None = None,
    retry: bool = False,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """The error contract (`OrchestratorErrorResponse`) with HTTP status `status`. Its category
    is `invalid_input` for a client's error (4xx), `all_agents_failed` for the server's
    (5xx: something it needs cannot be used), unless given."""
    kind: ErrorCategory = category or ("invalid_input" if status < 500 else "all_agents_failed")
    body = OrchestratorErrorResponse(error_message=message, error_category=kind, retry_recommended=retry)
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


def refusal(scope: Scope, status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """A request refused before its route ran (by the edge, or a body over the limit), in the
    shape of the route it was meant for (`server/lookup.py`): the protocol's own error on a
    route that has one, the error contract on any other."""
    route = route_for(scope)
    response = route.refusal(status, message) if isinstance(route, OwnErrors) else error_response(status, message)
    response.headers.update(headers or {})
    return response


def too_large(what: str, limit: str, setting: str) -> str:
    """What a 413 says, for a JSON body as for an upload: what is too large, the limit in the
    unit of the setting that sets it, and that setting."""
    return f"{what} is over the limit of {limit} ({setting})"
