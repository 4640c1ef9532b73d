"""The route a request would reach, found before any route runs, and what the edge reads from it.

The edge (`server/edge.py`) decides before routing, so it looks the route up itself: whether
it is a page (a link from another site may open a page, nothing else) and whether it answers
refusals in a protocol's own error shape (OpenAI's clients read only OpenAI's errors, A2A's
JSON-RPC clients only JSON-RPC's). Neither names a pack: a route says it by what it is.

- A **page** is a route that answers HTML (`response_class=HTMLResponse`: the page at `/`,
  `/docs`) or a file of a mounted static directory (the page's modules and styles, Swagger
  UI's files, a pack's `static`).
- A route with **its own error shape** has a `refusal(status, message)` method (`OwnErrors`):
  the OpenAI-compatible routes' class, the A2A routes. Any other route's refusals are
  Concerto's error contract.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from fastapi.routing import APIRoute
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Scope


@runtime_checkable
class OwnErrors(Protocol):
    """A route whose protocol has its own error shape: refusals of requests to it (by the edge,
    or a body over the limit) are answered with `refusal`."""

    def refusal(self, status: int, message: str) -> Response:
        """The protocol's error response saying `message`, with HTTP status `status`."""
        ...


def every_route(app: Any) -> Iterator[BaseRoute]:
    """Every route of the app in the order the app tries them, the routes of included routers
    (packs' routes, included whole and without a prefix) in their place."""
    stack = list(reversed(getattr(app, "routes", [])))
    while stack:
        route = stack.pop()
        nested = getattr(route, "original_router", None)  # a router included whole (FastAPI's _IncludedRouter)
        if nested is not None:
            stack.extend(reversed(nested.routes))
        else:
            yield route


def route_for(scope: Scope) -> BaseRoute | None:
    """The first route whose path matches the request's (whatever its methods), or None."""
    path = scope.get("path", "")
    for route in every_route(scope.get("app")):
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(path):
            return route
    return None


def is_page(route: BaseRoute | None) -> bool:
    """Whether the route answers a page: HTML, or a file of a static directory."""
    if isinstance(route, Mount):
        return isinstance(route.app, StaticFiles)
    if isinstance(route, APIRoute):
        answer = route.response_class
        return isinstance(answer, type) and issubclass(answer, HTMLResponse)
    return False
