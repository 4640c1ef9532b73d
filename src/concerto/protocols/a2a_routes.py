"""The A2A routes on `concerto serve`: the SDK's (`a2a_server.py`), or, when the `a2a` extra is
not installed, routes at the same paths that say how to get it (HTTP 501, each in its own
shape: the error contract for the card, JSON-RPC's error on `/a2a`, the HTTP+JSON binding's
on `/a2a/...`), so a user following the README who fetches the agent card learns what to
install instead of a 404."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from concerto.protocols.a2a_edge import A2A_PATH, CARD_PATH, JsonRpcRoute, RestRoute, binding_error, jsonrpc_error
from concerto.server.errors import error_response

MISSING = "A2A needs the a2a extra, which is not installed: pip install 'concerto[a2a]'"


def router() -> APIRouter:
    """The A2A routes, or the routes that name the missing extra."""
    try:
        from concerto.protocols import a2a_server
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("a2a"):
            raise
        return missing()
    return a2a_server.router()


def missing() -> APIRouter:
    """The card and the endpoint's paths, each answering 501 with what to install."""
    api = APIRouter(include_in_schema=False)

    async def card(request: Request) -> Response:
        return error_response(501, MISSING)

    async def rpc(request: Request) -> Response:
        return jsonrpc_error(501, MISSING)

    async def rest(request: Request) -> Response:
        return binding_error(501, MISSING)

    api.add_api_route(CARD_PATH, card, methods=["GET"])
    api.routes.append(JsonRpcRoute(A2A_PATH, rpc, methods=["GET", "POST"], include_in_schema=False))
    rest_methods = ["GET", "POST", "DELETE"]
    api.routes.append(RestRoute(A2A_PATH + "/{path:path}", rest, methods=rest_methods, include_in_schema=False))
    return api
