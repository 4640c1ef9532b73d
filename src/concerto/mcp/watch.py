"""Notice when a streamable-HTTP MCP server goes away, so calls fail fast instead of waiting.

The SDK's streamable HTTP client (1.x) logs a broken connection and leaves the pending
request waiting for its timeout. This transport wraps httpx's own and sets `failed`
when a request or a response stream breaks at the network level (refused, reset,
closed mid-stream); the MCP client races each call against it. Timeouts are not
failures here: the session's own request timeout handles them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx

_FATAL = (httpx.NetworkError, httpx.RemoteProtocolError)


class FailureWatch(httpx.AsyncBaseTransport):
    """An httpx transport that records the first network failure."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.inner = inner or httpx.AsyncHTTPTransport()
        self.failed = asyncio.Event()
        self.error: BaseException | None = None

    def fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc
        self.failed.set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except _FATAL as exc:
            self.fail(exc)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _WatchedStream(response.stream, self)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class _WatchedStream(httpx.AsyncByteStream):
    """A response body that reports a connection broken while it is read (SSE streams)."""

    def __init__(self, inner: httpx.AsyncByteStream, watch: FailureWatch) -> None:
        self.inner = inner
        self.watch = watch

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner:
                yield chunk
        except _FATAL as exc:
            self.watch.fail(exc)
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()
