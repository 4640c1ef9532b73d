"""`MCPServer` with servers that hang or die: a real MCP server process (`servers/clock.py`)
stopped with SIGSTOP or killed with SIGKILL, and one whose tool is merely slow.

A hung server is replaced (its process killed) after a call times out or is abandoned,
whatever the event loop; a slow one keeps its session. Every test runs on asyncio and on
uvloop (`conftest.py`), the loop `concerto serve` runs on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from _services.ports import free_port, wait_for_port
from concerto.contracts.common import ErrorKind
from concerto.mcp.client import MCPCallError, MCPServer
from concerto.mcp.spec import ServerSpec

CLOCK = Path(__file__).parent / "servers" / "clock.py"


async def gone(pid: int, timeout_s: float = 15) -> bool:
    """Whether process `pid` has exited (and been reaped) within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.05)
    return False


@contextlib.contextmanager
def resumed_at_exit(pid: int) -> Iterator[None]:
    """SIGCONT and SIGKILL whatever the test stopped, so no stopped process outlives it."""
    try:
        yield
    finally:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)


@contextlib.asynccontextmanager
async def clock_server(
    *, request_timeout_s: float = 5.0, ping_timeout_s: float = 5.0, url: str | None = None
) -> AsyncIterator[MCPServer]:
    spec = (
        ServerSpec(name="clock", url=url)
        if url
        else ServerSpec(name="clock", command=sys.executable, args=[str(CLOCK)])
    )
    # the ping is bounded by the connect timeout; start-up (a Python process) has its own allowance
    server = MCPServer(
        spec, connect_timeout_s=ping_timeout_s, request_timeout_s=request_timeout_s, startup_timeout_s=30
    )
    try:
        yield server
    finally:
        await server.aclose()


async def whoami(server: MCPServer) -> int:
    return int((await server.call("whoami", {}))["pid"])


async def test_a_stopped_server_is_replaced_after_a_timeout() -> None:
    async with clock_server(request_timeout_s=2, ping_timeout_s=2) as server:
        first = await whoami(server)
        with resumed_at_exit(first):
            os.kill(first, signal.SIGSTOP)
            with pytest.raises(MCPCallError, match="did not answer whoami within 2 s") as err:
                await whoami(server)
            assert err.value.kind is ErrorKind.TIMEOUT
            # the next call waits for the ping (2 s), then a new process answers it
            second = await whoami(server)
            assert second != first
            assert await gone(first), "the stopped server process was not killed"


async def test_a_call_abandoned_on_a_stopped_server_replaces_it() -> None:
    """The executor cancels an agent mid-call (its task timeout) before the MCP request timeout."""
    async with clock_server(request_timeout_s=60, ping_timeout_s=2) as server:
        first = await whoami(server)
        with resumed_at_exit(first):
            os.kill(first, signal.SIGSTOP)
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(whoami(server), 0.5)
            second = await whoami(server)
            assert second != first
            assert await gone(first), "the stopped server process was not killed"


async def test_a_slow_tool_keeps_its_server() -> None:
    async with clock_server(request_timeout_s=1, ping_timeout_s=10) as server:  # a busy machine answers pings late
        first = await whoami(server)
        with pytest.raises(MCPCallError, match="did not answer sleep within 1 s"):
            await server.call("sleep", {"seconds": 5})
        with pytest.raises(TimeoutError):  # abandoned by the caller
            await asyncio.wait_for(server.call("sleep", {"seconds": 5}), 0.3)
        assert await whoami(server) == first
        assert server.connected


async def test_a_server_killed_mid_call_fails_fast_and_is_restarted(tmp_path: Path) -> None:
    received = tmp_path / "received"
    async with clock_server(request_timeout_s=60) as server:
        first = await whoami(server)
        call = asyncio.ensure_future(server.call("sleep", {"seconds": 30, "received": str(received)}))
        deadline = time.monotonic() + 30
        while not received.exists():  # killed mid-call: after the server has the request, never before
            assert time.monotonic() < deadline and not call.done(), "the call never reached the server"
            await asyncio.sleep(0.02)
        started = time.monotonic()
        os.kill(first, signal.SIGKILL)
        with pytest.raises(MCPCallError, match="closed the connection") as err:
            await call
        assert err.value.kind is ErrorKind.UNAVAILABLE
        assert time.monotonic() - started < 10  # not the 60 s request timeout
        assert await whoami(server) != first


async def test_a_server_killed_while_idle_is_restarted_transparently() -> None:
    async with clock_server() as server:
        first = await whoami(server)
        os.kill(first, signal.SIGKILL)
        assert await gone(first)
        assert await whoami(server) != first


async def test_aclose_kills_a_stopped_server_promptly() -> None:
    """Closing asks a server to exit (its stdin closed); one that is stopped is killed after the grace."""
    server = MCPServer(
        ServerSpec(name="clock", command=sys.executable, args=[str(CLOCK)]),
        connect_timeout_s=1,
        request_timeout_s=1,
        startup_timeout_s=30,
    )
    first = await whoami(server)
    with resumed_at_exit(first):
        os.kill(first, signal.SIGSTOP)
        started = time.monotonic()
        await asyncio.wait_for(server.aclose(), 60)  # it used to wait for the stopped process forever
        assert time.monotonic() - started < 8  # the 3 s grace, then killed; not the SDK's 4 s escalation on top
        assert await gone(first)


@pytest.fixture
def http_clock() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(CLOCK), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, proc, timeout_s=60)
        yield proc, f"http://127.0.0.1:{port}/mcp"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait(10)


async def test_a_stopped_http_server_gets_a_new_session(http_clock: tuple[subprocess.Popen[bytes], str]) -> None:
    """A URL server is not ours to kill: its hung session is dropped, and the next call connects
    afresh (failing while it stays stopped, answering once it runs again)."""
    proc, url = http_clock
    async with clock_server(url=url, ping_timeout_s=3) as server:
        assert await whoami(server) == proc.pid
        os.kill(proc.pid, signal.SIGSTOP)
        with pytest.raises(MCPCallError) as err:
            await whoami(server)
        assert err.value.kind is ErrorKind.TIMEOUT
        # the ping failed, so the session was dropped: a new connection, which cannot complete
        with pytest.raises(MCPCallError, match="did not complete the connection"):
            await whoami(server)
        os.kill(proc.pid, signal.SIGCONT)
        assert await whoami(server) == proc.pid
