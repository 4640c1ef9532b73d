"""Start a built-in MCP server as its own process over streamable HTTP, and wait until it listens.

Used by the tests and the city benchmark, and handy for trying a server by hand from Python.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    """Return once something accepts connections on `port`; raise if `proc` dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port}")


def start_http_server(
    kind: str, *, env: dict[str, str] | None = None, timeout_s: float = 30
) -> tuple[subprocess.Popen[bytes], str]:
    """`concerto mcp serve KIND --transport http` on a free port; returns the process and its /mcp URL.

    `env` adds variables (e.g. CONCERTO_WEATHER_URL) to this process's environment.
    """
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "concerto.packs.city.cli", "serve", kind, "--transport", "http", "--port", str(port)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, timeout_s)
    except BaseException:
        proc.kill()
        raise
    return proc, f"http://127.0.0.1:{port}/mcp"
