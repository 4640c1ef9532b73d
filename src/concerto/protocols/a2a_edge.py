"""What the A2A routes answer before the SDK runs: refusals in each binding's own error shape,
and JSON bodies only. It needs no SDK, so the routes that say the `a2a` extra is missing
(`a2a_routes.py`) answer in the same shapes.

- The JSON-RPC endpoint (`/a2a`) answers JSON-RPC's error object,
  `{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": ...}}` (-32603 for a
  fault of the server).
- The HTTP+JSON binding (`/a2a/...`) answers its error payload,
  `{"error": {"code": 401, "status": "UNAUTHENTICATED", "message": ...}}` (google.rpc.Status).

Each route is a `JsonRpcRoute` or a `RestRoute`, whose `refusal` the server's edge finds
(`concerto.server.lookup.OwnErrors`) for a wrong host or token, another site's page or a body
over the limit (docs/security.md).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

A2A_PATH = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"  # the SDK's AGENT_CARD_WELL_KNOWN_PATH
INVALID_REQUEST, INTERNAL_ERROR = -32600, -32603  # JSON-RPC's codes
# google.rpc's status names of the HTTP statuses refused here (the binding's error payload).
RPC_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    501: "UNIMPLEMENTED",
}
NOT_JSON = "Send the request as JSON (Content-Type: application/json)"


def jsonrpc_error(status: int, message: str) -> JSONResponse:
    """JSON-RPC's error object for a request refused with HTTP `status` (its id is unknown)."""
    code = INVALID_REQUEST if status < 500 else INTERNAL_ERROR
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status)


def binding_error(status: int, message: str) -> JSONResponse:
    """The HTTP+JSON binding's error payload for a request refused with HTTP `status`."""
    name = RPC_STATUS.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    return JSONResponse({"error": {"code": status, "status": name, "message": message}}, status_code=status)


class JsonRpcRoute(Route):
    """A route of the JSON-RPC endpoint: refusals are JSON-RPC errors."""

    def refusal(self, status: int, message: str) -> Response:
        """JSON-RPC's error object (`jsonrpc_error`)."""
        return jsonrpc_error(status, message)


class RestRoute(Route):
    """A route of the HTTP+JSON binding: refusals are its error payload."""

    def refusal(self, status: int, message: str) -> Response:
        """The binding's error payload (`binding_error`)."""
        return binding_error(status, message)


def json_only(route: BaseRoute, kind: type[JsonRpcRoute | RestRoute]) -> BaseRoute:
    """The SDK's `route` as a route of `kind`, reading a POST's body before the SDK does: refused
    with 415 when it is not declared JSON (the SDK parses any body as JSON, so a page on another
    site could send a task as a `text/plain` post, which browsers send without asking), and
    refused by the server's edge when it is over the app's limit (the SDK's HTTP+JSON binding
    would make that a 500). Both in `kind`'s error shape (docs/security.md)."""
    if not isinstance(route, Route):
        return route
    endpoint = route.endpoint

    async def checked(request: Request) -> Response:
        """The JSON check and the body read, then the SDK's endpoint."""
        if request.method == "POST":
            if _has_body(request) and not _json_type(request.headers.get("content-type", "")):
                return shaped.refusal(415, NOT_JSON)
            await request.body()  # kept by the request: the SDK reads it from there
        response: Response = await endpoint(request)
        return response

    # FastAPI rebuilds an included router's plain routes from their endpoints: the check is one.
    methods = list(route.methods or ())
    shaped = kind(route.path, checked, methods=methods, name=route.name, include_in_schema=route.include_in_schema)
    return shaped


def _has_body(request: Request) -> bool:
    """Whether the request says it sends a body: a `Content-Length` over 0, or chunked (no
    length at all) — a chunked POST without a Content-Type is not an empty one."""
    length = request.headers.get("content-length")
    if length is not None:
        return not length.isdigit() or int(length) > 0
    return "transfer-encoding" in request.headers


def _json_type(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
