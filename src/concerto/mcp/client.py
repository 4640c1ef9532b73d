"""A long-lived MCP client session per server, shared by the agents of one orchestrator.

`MCPServer` is the object kept in `Resources` (one per server, see `shared_server`): it connects on first
use, reconnects after the server died, bounds the connection and each call by the
configured timeouts, and turns every failure into an `MCPCallError` with an `ErrorKind`.

A server that hangs (stopped, deadlocked) is replaced, not waited on forever: when a call
times out, or is abandoned mid-way (the agent's timeout, the question's deadline, a caller
that left), the session is checked with an MCP `ping` bounded by the connect timeout. A
server that answers keeps its session, so a tool that is merely slow costs one ping, not a
restart; one that does not answer is stopped at once (a stdio server's process is killed)
and the next call starts a new one. Calls that arrive during the check wait for its outcome.

Why a task owns each session: the SDK's transports are anyio context managers whose
cancel scopes must be entered and left by the same task, while the agents calling
tools run in the executor's tasks and `Resources.aclose()` runs in yet another. The
owner task opens the transport and the `ClientSession`, signals it is ready, and closes
both when asked; calls from any task go through the session's streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from concerto.contracts.common import ErrorKind
from concerto.mcp.spec import ServerSpec

if TYPE_CHECKING:
    import anyio
    from mcp import ClientSession
    from mcp.types import Tool

    from concerto.mcp.settings import MCPSettings
    from concerto.resources import Resources

log = logging.getLogger(__name__)
_TERMINATE_GRACE_S = 3.0


class MCPCallError(Exception):
    """A failed connection or tool call; `code` is the server's MCPError code when it sent one."""

    def __init__(self, message: str, *, kind: ErrorKind, code: int = -1, data: dict[str, Any] | None = None) -> None:
        from concerto.redact import scrub  # a transport's error may quote the server's URL

        message = scrub(message)
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.code = code
        self.data = data or {}


class MCPServer:
    """One server's session, (re)connected on demand; `aclose()` stops it."""

    def __init__(
        self, spec: ServerSpec, *, connect_timeout_s: float, request_timeout_s: float, startup_timeout_s: float = 0.0
    ):
        self.spec = spec
        self.connect_timeout_s = connect_timeout_s
        # A stdio server is a new process: 002's 2 s connection timeout assumes a running
        # server, so process start-up (about 1 s here, more on a busy or fresh machine that
        # compiles bytecode) gets its own allowance. URL servers get none.
        self.startup_timeout_s = 0.0 if spec.url else startup_timeout_s
        self.request_timeout_s = request_timeout_s
        # A server that cannot answer a ping within the connect timeout, after a call timed out, is hung.
        self.ping_timeout_s = connect_timeout_s
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None  # the owner's: cancelling it stops the transport at once
        self._check: asyncio.Task[None] | None = None  # the liveness check after a call timed out
        self._calls = 0  # calls waiting for an answer
        self._closing = asyncio.Event()
        self._lock = asyncio.Lock()
        self._stopping: set[asyncio.Task[None]] = set()
        self._watch: Any = None  # FailureWatch of the current HTTP connection

    @classmethod
    def configured(cls, spec: ServerSpec, settings: MCPSettings, *, request_timeout_ms: int | None = None) -> MCPServer:
        """A server with the configured limits; `request_timeout_ms` overrides the call timeout."""
        return cls(
            spec,
            connect_timeout_s=settings.mcp_connect_timeout_ms / 1000,
            request_timeout_s=(request_timeout_ms or settings.mcp_request_timeout_ms) / 1000,
            startup_timeout_s=settings.mcp_startup_timeout_ms / 1000,
        )

    @property
    def connected(self) -> bool:
        broken = self._watch is not None and self._watch.failed.is_set()
        return self._session is not None and self._owner is not None and not self._owner.done() and not broken

    async def session(self) -> ClientSession:
        """The open session, connecting (again) if there is none, the last one died, or it hung."""
        check = self._check
        if check is not None and not check.done():
            await asyncio.shield(check)  # a session under suspicion: use what the check leaves
        async with self._lock:
            if not self.connected:
                await self._stop()
                await self._connect()
            assert self._session is not None
            return self._session

    async def _connect(self) -> None:
        # Importing the SDK takes about 0.5 s: in a worker thread, so the event loop keeps
        # sending other questions' events meanwhile (the imports below are then lookups).
        await asyncio.to_thread(_import_sdk, "mcp.client.streamable_http" if self.spec.url else "mcp.client.stdio")
        import anyio

        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._scope = anyio.CancelScope()
        self._owner = asyncio.create_task(self._own(ready, self._scope), name=f"mcp:{self.spec.name}")
        try:
            budget = self.connect_timeout_s + self.startup_timeout_s
            self._session = await asyncio.wait_for(asyncio.shield(ready), budget)
        except TimeoutError:
            ready.cancel()  # the owner must not report into a future nobody awaits
            self._stop_in_background()  # stopping a stuck process takes seconds; report now
            knobs = "CONCERTO_MCP_CONNECT_TIMEOUT_MS" + (
                " or CONCERTO_MCP_STARTUP_TIMEOUT_MS" if self.startup_timeout_s else ""
            )
            raise MCPCallError(
                f"MCP server '{self.spec.name}' ({self.spec.where}) did not complete the "
                f"connection within {budget:g} s; check that it starts and speaks MCP, or raise {knobs}.",
                kind=ErrorKind.TIMEOUT,
            ) from None
        except MCPCallError:
            await self._stop()
            raise

    async def _own(self, ready: asyncio.Future[ClientSession], scope: anyio.CancelScope) -> None:
        """Open transport and session, hand the session over, hold it until closing.

        Everything runs inside `scope`: cancelling it (`_stop`) reaches every wait of the
        SDK's shutdown, whose own escalation for a process that ignores its closed stdin
        takes 4 s; cancelled, anyio kills the process.
        """
        from mcp import ClientSession

        session: ClientSession | None = None
        closing = self._closing
        try:
            with scope:
                async with contextlib.AsyncExitStack() as stack:
                    read, write = await self._open_transport(stack)
                    session = await stack.enter_async_context(ClientSession(read, write))
                    await session.initialize()
                    if not ready.done():
                        ready.set_result(session)
                    await closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(self._connect_error(exc))
            if not isinstance(exc, asyncio.CancelledError | Exception):
                raise
        finally:
            # An owner stopped in the background may end after a newer one started.
            if session is not None and self._session is session:
                self._session = None

    async def _open_transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        spec = self.spec
        if spec.url:
            import httpx
            from mcp.client.streamable_http import streamable_http_client

            from concerto.mcp.watch import FailureWatch

            self._watch = FailureWatch()
            client = await stack.enter_async_context(
                httpx.AsyncClient(
                    headers=spec.headers,
                    transport=self._watch,
                    # Calls are bounded by the request timeout; this one covers the
                    # server's idle event stream, as in the SDK's own client.
                    timeout=httpx.Timeout(300, connect=self.connect_timeout_s),
                )
            )
            read, write, _ = await stack.enter_async_context(streamable_http_client(spec.url, http_client=client))
            return read, write
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=spec.command or "", args=spec.args, env={**os.environ, **spec.env}, cwd=spec.cwd
        )
        return await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))

    def _connect_error(self, exc: BaseException) -> MCPCallError:
        leaf = _leaf(exc)
        return MCPCallError(
            f"Cannot connect to MCP server '{self.spec.name}' ({self.spec.where}): "
            f"{type(leaf).__name__}: {leaf}".rstrip(": "),
            kind=ErrorKind.UNAVAILABLE,
        )

    def _stop_in_background(self) -> None:
        """Stop the owner task now and let it clean up on its own; `aclose` awaits it."""
        owner, scope = self._detach()
        if owner is not None:
            self._cancel(owner, scope)

    async def _stop(self, *, hung: bool = False) -> None:
        """Ask the owner task to close the session, stopping it if it does not in time; a
        `hung` server is not asked (a stdio server's process is killed at once)."""
        owner, scope = self._detach()
        if owner is None:
            return
        if not hung:
            self._closing.set()
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(owner), _TERMINATE_GRACE_S)
        if not owner.done():
            self._cancel(owner, scope)
            await asyncio.wait({owner}, timeout=_TERMINATE_GRACE_S)  # a cancelled caller stops waiting, not the stop

    def _detach(self) -> tuple[asyncio.Task[None] | None, anyio.CancelScope | None]:
        """Forget the current session; its owner task (kept until it ends, for `aclose`) and
        scope if it is still running."""
        owner, scope = self._owner, self._scope
        self._owner, self._session, self._scope = None, None, None
        if owner is None or owner.done():
            return None, None
        self._stopping.add(owner)
        owner.add_done_callback(self._stopping.discard)
        return owner, scope

    @staticmethod
    def _cancel(owner: asyncio.Task[None], scope: anyio.CancelScope | None) -> None:
        """Stop an owner task now. anyio's cancellation (unlike one `Task.cancel`) reaches every
        wait inside the SDK's shutdown, and a stdio server's process is killed."""
        if scope is not None:
            scope.cancel()
        else:
            owner.cancel()

    async def list_tools(self) -> list[Tool]:
        """Every tool of the server (all pages)."""
        session = await self.session()
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            try:
                page = await asyncio.wait_for(session.list_tools(cursor), self.request_timeout_s)
            except TimeoutError:
                self._suspect(session)
                raise
            tools.extend(page.tools)
            cursor = page.nextCursor
            if not cursor:
                return tools

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool; return its structured result or raise `MCPCallError`.

        A server that died while idle is noticed when the request cannot even be sent;
        then the server is restarted and the request sent once more. A server that dies
        while handling the request is not asked again (the request may be what kills it).
        A call that times out or is cancelled leaves the session under suspicion (see the
        module's docstring).
        """
        import anyio

        from concerto.mcp.errors import parse_tool_error

        for attempt in (1, 2):
            session = await self.session()
            self._calls += 1
            try:
                result = await self._send(session, tool, arguments)
                break
            except asyncio.CancelledError:  # abandoned mid-call: is the server still there?
                self._suspect(session)
                raise
            except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
                await self._forget()
                if attempt == 1:
                    continue
                raise MCPCallError(
                    f"MCP server '{self.spec.name}' connection failed during {tool}: {type(exc).__name__}",
                    kind=ErrorKind.UNAVAILABLE,
                ) from None
            finally:
                self._calls -= 1
        text = "\n".join(getattr(c, "text", "") for c in result.content).strip()
        if result.isError:
            err = parse_tool_error(text)
            kind = ErrorKind.VALIDATION if 400 <= err.code < 500 else ErrorKind.ERROR
            if err.code in (503, 504):
                kind = ErrorKind.UNAVAILABLE
            raise MCPCallError(err.message, kind=kind, code=err.code, data=err.data)
        if result.structuredContent is not None:
            return dict(result.structuredContent)
        return {"text": text}

    async def _send(self, session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
        """One `tools/call` under the request timeout; failures other than a closed
        stream become `MCPCallError`."""
        import anyio
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED

        name, limit = self.spec.name, self.request_timeout_s
        try:
            return await self._race(
                session.call_tool(tool, arguments, read_timeout_seconds=timedelta(seconds=limit)),
                limit + 0.5,
            )
        except _Disconnected:
            await self._forget()
            raise MCPCallError(
                f"MCP server '{name}' closed the connection during {tool}. It will be restarted on the next request.",
                kind=ErrorKind.UNAVAILABLE,
            ) from None
        except TimeoutError:
            self._suspect(session)
            raise MCPCallError(
                f"MCP server '{name}' did not answer {tool} within {limit:g} s.",
                kind=ErrorKind.TIMEOUT,
            ) from None
        except McpError as exc:
            code = exc.error.code
            if "Timed out" in exc.error.message:  # the SDK's read timeout (code 408)
                self._suspect(session)
                raise MCPCallError(
                    f"MCP server '{name}' did not answer {tool} within {limit:g} s.",
                    kind=ErrorKind.TIMEOUT,
                ) from None
            if code == CONNECTION_CLOSED:
                await self._forget()
                raise MCPCallError(
                    f"MCP server '{name}' closed the connection during {tool}. "
                    "It will be restarted on the next request.",
                    kind=ErrorKind.UNAVAILABLE,
                ) from None
            raise MCPCallError(
                f"MCP server '{name}' refused {tool}: {exc.error.message}",
                kind=ErrorKind.ERROR,
                code=code,
            ) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise
        except Exception as exc:  # a transport that broke under the call
            await self._forget()
            leaf = _leaf(exc)
            raise MCPCallError(
                f"MCP server '{name}' connection failed during {tool}: {type(leaf).__name__}: {leaf}".rstrip(": "),
                kind=ErrorKind.UNAVAILABLE,
            ) from None

    async def _race(self, call: Any, timeout: float) -> Any:
        """Await `call`, but stop as soon as the HTTP connection is seen to break."""
        watch = self._watch if self.spec.url else None
        if watch is None:
            return await asyncio.wait_for(call, timeout)
        task = asyncio.ensure_future(call)
        broken = asyncio.ensure_future(watch.failed.wait())
        try:
            done, _ = await asyncio.wait({task, broken}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            broken.cancel()
        if task in done:
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        if broken in done:
            raise _Disconnected
        raise TimeoutError

    async def _forget(self) -> None:
        """Drop a broken session so the next call reconnects."""
        async with self._lock:
            await self._stop()

    def _suspect(self, session: ClientSession) -> None:
        """A call on `session` timed out or was abandoned: check in the background that the
        server still answers (one check at a time; calls wait for it in `session()`)."""
        if session is self._session and (self._check is None or self._check.done()):
            self._check = asyncio.create_task(self._check_alive(session), name=f"mcp-ping:{self.spec.name}")

    async def _check_alive(self, session: ClientSession) -> None:
        """Ping the server; replace it when it does not answer within `ping_timeout_s`."""
        try:
            await asyncio.wait_for(session.send_ping(), self.ping_timeout_s)
            return
        except Exception as exc:  # no answer in time, or the session broke meanwhile
            reason = f"{type(exc).__name__}: {exc}".rstrip(": ")
        async with self._lock:
            if self._session is not session:
                return  # already replaced
            log.warning(
                "MCP server '%s' (%s) did not answer a ping within %g s after a call timed out or was abandoned "
                "(%s); stopping it, the next call starts a new session",
                self.spec.name,
                self.spec.where,
                self.ping_timeout_s,
                reason,
            )
            await self._stop(hung=True)

    async def aclose(self) -> None:
        """Close the session and stop the server process (called by `Resources.aclose`).

        A server that may hang is not asked to close, it is stopped at once: one under
        suspicion (a call timed out or was abandoned, and its ping has not answered yet), or
        one still handling calls (they are being cancelled with whatever closes us). A
        shutdown does not wait on a hung server.
        """
        suspect = self._calls > 0 or (self._check is not None and not self._check.done())
        if self._check is not None:
            self._check.cancel()
            await asyncio.wait({self._check})
        async with self._lock:
            await self._stop(hung=suspect)
        if self._stopping:
            await asyncio.wait(self._stopping, timeout=_TERMINATE_GRACE_S)


class _Disconnected(Exception):
    """The HTTP connection of the session broke while a call was waiting."""


def _import_sdk(transport: str) -> None:
    """Import the MCP SDK's session and the transport's client module."""
    import importlib

    importlib.import_module("mcp")
    importlib.import_module(transport)


async def preload_sdk() -> None:
    """Import the MCP SDK (both transports) in a worker thread, e.g. when a server starts.

    Connecting imports it anyway; done before the first question, that question's other
    work does not wait for the import (the GIL, and the import lock of modules both use).
    """
    await asyncio.to_thread(_import_sdk, "mcp.client.stdio")
    await asyncio.to_thread(_import_sdk, "mcp.client.streamable_http")


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def shared_server(resources: Resources, key: str, make: Callable[[], MCPServer]) -> MCPServer:
    """The `MCPServer` kept in an orchestrator's resources under `key`, made on first use.

    Agents that call the same server share one session (and one process for stdio);
    `Resources.aclose()` stops it with the orchestrator.
    """
    return resources.get(f"mcp.server.{key}", make)
