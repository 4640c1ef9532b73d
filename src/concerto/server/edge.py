"""The HTTP edge of `concerto serve`: which requests reach the app at all (docs/security.md).

Three checks, in this order, before any route runs or any byte of the body is read:

1. **Host.** The `Host` header must name this server: one of `CONCERTO_ALLOWED_HOSTS`
   (localhost, 127.0.0.1 and ::1 by default; `concerto serve` adds its `--host`), or the
   address the request arrived at. Otherwise 400: a page on `evil.example` whose name the
   attacker points at 127.0.0.1 (DNS rebinding) reaches the server with its own name as host.
2. **Cross-site.** When a browser says a request comes from another site
   (`Sec-Fetch-Site: cross-site` or `same-site`: another port of localhost is the same
   site), only a link to a page passes: a top-level GET navigation to a page (`/`, `/docs`,
   their static files: `server/lookup.py` says what a page is). Frames, images, scripts,
   fetches, any other method, and a link to anything else (`/v1/ask/stream?q=...` runs a
   question) are refused with 403. A request that can change something (any method but GET,
   HEAD and OPTIONS) is also refused when its `Origin` is not this server's (for browsers
   without those headers). A page cannot forge these headers; clients that are not browsers
   (curl, SDKs) send neither and pass.
3. **Token.** With `CONCERTO_API_TOKEN` set, every route but `/health` and `/ready` (liveness
   and readiness probes) needs `Authorization: Bearer TOKEN` or the page's cookie. Opening
   any page with `?token=TOKEN` sets that cookie (HttpOnly, SameSite=Strict) and redirects to
   the same address without it, so the token stays out of the address bar and the access log.
   Otherwise 401 (for a browser, a small page asking for the token).

A refusal comes in the shape of the route the request was meant for (`server/errors.py`):
OpenAI's error on the OpenAI-compatible routes, JSON-RPC's on `/a2a`, the error contract
(`OrchestratorErrorResponse`, `invalid_input`) elsewhere; no route runs.

A request's body is limited to `CONCERTO_MAX_BODY_BYTES` as the app reads it: refused before a
byte is read when its `Content-Length` says more, else as soon as the bytes read pass it
(`BodyTooLarge`, an HTTP 413 the app answers in the route's shape). A route that reads and
counts its own body (an upload) sets its own limit with FastAPI's `max_body_size`. FastAPI's
app-wide `max_body_size` is not used: it answers a body that says it is too long with a
plain-text 413 of its own, whatever the app's handlers say.

Any answer that starts before the request's body was read to its end (a refusal here, a 413,
an upload refused midway) says `Connection: close`: the server then stops reading, where it
would otherwise read and discard the rest of the body (2 GB refused with 401 were read whole).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import urlencode, urlsplit

from starlette.exceptions import HTTPException
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY
from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from concerto.server.errors import refusal, too_large
from concerto.server.lookup import is_page, route_for
from concerto.settings import Settings

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OPEN_PATHS = frozenset({"/health", "/ready"})  # probes: they say whether the server runs, nothing more
TOKEN_PARAMETER = "token"
COOKIE = "concerto_token"
COOKIE_MAX_AGE_S = 30 * 24 * 3600
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@dataclass(frozen=True)
class Refused:
    """A request the edge refuses: its status, what to tell the client and extra headers."""

    status: int
    message: str
    headers: dict[str, str] = field(default_factory=dict)


Outcome = Refused | Response | None  # a check's verdict: refused, answered (a redirect, a page), or passed


class Edge:
    """ASGI middleware applying the three checks to every HTTP request and WebSocket."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.max_body = settings.max_body_bytes
        self.hosts = [h.lower().rstrip(".") for h in settings.allowed_hosts]
        secret = settings.api_token.get_secret_value() if settings.api_token else None
        self.token = secret.encode("utf-8") if secret else None
        # The cookie holds a digest of the token, not the token: what a browser keeps on disk
        # is worth nothing elsewhere (it authorises every route of this server, as the token does).
        self.cookie = hmac.new(self.token, b"concerto page", hashlib.sha256).hexdigest() if self.token else ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        outcome = self._host(connection) or self._site(connection) or self._token(connection)
        if scope["type"] == "websocket":
            if outcome is None:
                await self.app(scope, receive, send)
            else:
                reason = outcome.message if isinstance(outcome, Refused) else "refused"
                await WebSocketClose(code=1008, reason=_close_reason(reason))(scope, receive, send)
            return
        body = _Body(scope, receive, self.max_body)
        send = body.closing(send)
        if outcome is None:
            await self.app(scope, body.receive, send)
            return
        if isinstance(outcome, Refused):
            outcome = refusal(scope, outcome.status, outcome.message, outcome.headers)
        await outcome(scope, receive, send)

    # -- the checks: each answers None (pass), a refusal or the response to send -----------------

    def _host(self, connection: HTTPConnection) -> Outcome:
        given = connection.headers.get("host", "")
        name = host_name(given)
        server = connection.scope.get("server")
        if name and (self._allowed(name) or (server and name == str(server[0]).lower())):
            return None
        shown = given[:100] or "(none)"
        return Refused(
            400,
            f"This server does not answer to the host name {shown!r}; add it to CONCERTO_ALLOWED_HOSTS "
            "(comma-separated) if it is this server's",
        )

    def _allowed(self, name: str) -> bool:
        for pattern in self.hosts:
            if pattern == "*" or name == pattern:
                return True
            if pattern.startswith("*.") and name.endswith(pattern[1:]):
                return True
        return False

    def _site(self, connection: HTTPConnection) -> Outcome:
        headers, scope = connection.headers, connection.scope
        reading = scope["type"] == "http" and scope["method"] in SAFE_METHODS
        site = headers.get("sec-fetch-site")
        if site in ("cross-site", "same-site"):
            # Another site may link to a page (a top-level navigation), nothing else: not
            # embed it in a frame, load the API as an image or script, fetch from it, or link
            # to the API (a GET stream runs a question).
            mode, dest = headers.get("sec-fetch-mode"), headers.get("sec-fetch-dest", "document")
            if not (reading and mode == "navigate" and dest == "document"):
                return Refused(
                    403,
                    f"Cross-site request refused (Sec-Fetch-Site: {site}, Sec-Fetch-Mode: {mode}); "
                    "use this server's own page, or a program",
                )
            if not is_page(route_for(scope)):
                return Refused(
                    403,
                    f"Cross-site request refused: a link from another site may open this server's pages, not "
                    f"{scope['path'][:100]!r}; use this server's own page, or a program",
                )
        origin = headers.get("origin")
        if reading or origin is None or _origin_address(origin) == _host_address(connection):
            return None
        return Refused(
            403,
            f"Cross-site request refused: it comes from a page at {origin[:100]!r}, not from this server; "
            "call the API from this server's page or from a program (which sends no Origin header)",
        )

    def _token(self, connection: HTTPConnection) -> Outcome:
        if self.token is None:
            return None
        scope = connection.scope
        given = connection.query_params.get(TOKEN_PARAMETER)
        if scope["path"] in OPEN_PATHS:
            return None
        if given is not None and scope["type"] == "http" and scope["method"] == "GET":
            return self._sign_in(connection, given)
        scheme, _, credentials = connection.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(credentials.strip().encode("utf-8"), self.token):
            return None
        cookie = connection.cookies.get(_cookie_name(connection), "")
        if cookie and hmac.compare_digest(cookie.encode("utf-8"), self.cookie.encode("ascii")):
            return None
        reason = "the token given is not this server's" if scheme or cookie else "this server requires its API token"
        return _unauthorized(connection, reason)

    def _sign_in(self, connection: HTTPConnection, given: str) -> Outcome:
        """`GET /any/path?token=TOKEN`: the cookie and a redirect to the address without the token."""
        assert self.token is not None
        kept = urlencode(_without_token(connection))
        if not hmac.compare_digest(given.encode("utf-8"), self.token):
            return _unauthorized(connection, "the token in the address is not this server's")
        # One leading slash: `//evil.example` (sent as /%2F%2Fevil.example) is another site to a browser.
        target = "/" + connection.scope["path"].lstrip("/\\")
        response = RedirectResponse(target + (f"?{kept}" if kept else ""), status_code=303)
        response.set_cookie(
            _cookie_name(connection),
            self.cookie,
            max_age=COOKIE_MAX_AGE_S,
            path="/",
            httponly=True,
            samesite="strict",
            secure=connection.url.scheme == "https",
        )
        return response


class BodyTooLarge(HTTPException):
    """A request body over its limit (raised while the app reads it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large("The request body", f"{limit:,} bytes", "CONCERTO_MAX_BODY_BYTES"))


class _Body:
    """The request's body as the app reads it: counted against the route's limit (FastAPI's
    `max_body_size` of the route, read when the app first reads, after routing) or the app's,
    and whether some of it is still unread."""

    def __init__(self, scope: Scope, receive: Receive, default: int) -> None:
        self.scope, self._receive, self.default = scope, receive, default
        self.declared = _content_length(scope)
        self.read = 0
        chunked = any(name == b"transfer-encoding" for name, _ in scope.get("headers", ()))
        self.unread = chunked or bool(self.declared)

    async def receive(self) -> Message:
        """`receive`, raising `BodyTooLarge` as soon as the body is known to be over its limit."""
        limit = self.scope.get(MAX_BODY_SIZE_SCOPE_KEY, self.default)
        if self.declared is not None and self.declared > limit:
            raise BodyTooLarge(limit)
        message = await self._receive()
        if message["type"] == "http.request":
            self.read += len(message.get("body", b""))
            if self.read > limit:
                raise BodyTooLarge(limit)
            self.unread = bool(message.get("more_body", False))
        return message

    def closing(self, send: Send) -> Send:
        """`send`, adding `Connection: close` to an answer that starts while the body is unread."""

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and self.unread:
                headers = list(message.get("headers", ()))
                if not any(name.lower() == b"connection" for name, _ in headers):
                    message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        return closing_send


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _without_token(connection: HTTPConnection) -> list[tuple[str, str]]:
    return [(k, v) for k, v in connection.query_params.multi_items() if k != TOKEN_PARAMETER]


def host_name(host: str) -> str:
    """The name of a `Host` header's value, lower case, without port, brackets or final dot;
    empty when it is not a host."""
    try:
        name = urlsplit(f"//{host}").hostname or ""
    except ValueError:
        return ""
    return name.rstrip(".")


def _host_address(connection: HTTPConnection) -> tuple[str, int | None] | None:
    try:
        parts = urlsplit(f"//{connection.headers.get('host', '')}")
        return _address(parts.hostname, _port(parts), connection.url.scheme)
    except ValueError:
        return None


def _origin_address(origin: str) -> tuple[str, int | None] | None:
    """(host, port) of an `Origin`; None for "null" (a sandboxed frame, a file, a redirect) or
    a value that is not an origin (`http://[::1`), which matches no server."""
    try:
        parts = urlsplit(origin)
        if not parts.scheme or not parts.hostname:
            return None
        return _address(parts.hostname, _port(parts), parts.scheme)
    except ValueError:
        return None


def _port(parts: Any) -> int | None:
    try:
        port: int | None = parts.port
    except ValueError:
        return -1
    return port


def _address(name: str | None, port: int | None, scheme: str) -> tuple[str, int | None]:
    """(host, port) with the scheme's default port as None: `https://x` and `Host: x` (behind a
    proxy that ends TLS, the request's own scheme is http) are the same address."""
    return (name or "").rstrip("."), None if port == DEFAULT_PORTS.get(scheme) else port


def _cookie_name(connection: HTTPConnection) -> str:
    """One cookie per port: a browser sends a host's cookies to every port of it."""
    port = _port(urlsplit(f"//{connection.headers.get('host', '')}"))
    return f"{COOKIE}_{port}" if port and port > 0 else COOKIE


def _unauthorized(connection: HTTPConnection, reason: str) -> Outcome:
    headers = {"WWW-Authenticate": 'Bearer realm="concerto"'}
    message = (
        f"Unauthorized: {reason}. Send `Authorization: Bearer TOKEN` (CONCERTO_API_TOKEN), "
        "or open this page once with ?token=TOKEN"
    )
    if connection.scope["type"] == "http" and "text/html" in connection.headers.get("accept", ""):
        return HTMLResponse(_sign_in_page(reason), status_code=401, headers={**headers, **_PAGE_HEADERS})
    return Refused(401, message, headers)


_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "Cache-Control": "no-store",
}


def _sign_in_page(reason: str) -> str:
    """A page without scripts or styles: what is wrong and a field for the token (sent as
    `?token=`, which sets the cookie and comes back here)."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Concerto: token needed</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"></head><body><main>'
        f"<h1>Concerto</h1><p>{escape(reason[:1].upper() + reason[1:])}.</p>"
        '<form method="get"><label for="token">API token (CONCERTO_API_TOKEN)</label> '
        '<input id="token" name="token" type="password" autocomplete="current-password" required> '
        '<button type="submit">Open</button></form></main></body></html>'
    )


def _close_reason(message: str) -> str:
    """A refusal's message as a WebSocket's close reason (at most 123 bytes)."""
    return message.encode("utf-8")[:123].decode("utf-8", "ignore")
