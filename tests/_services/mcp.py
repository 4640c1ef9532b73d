"""MCP servers that packs declare, started as their own processes over streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager

from _services.ports import free_port, stop, wait_for_port


def start_http_server(
    name: str, *, env: dict[str, str] | None = None, timeout_s: float = 30
) -> tuple[subprocess.Popen[bytes], str]:
    """`concerto mcp serve NAME --transport http` on a free port; returns the process and its /mcp URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "concerto.cli", "mcp", "serve", name, "--transport", "http", "--port", str(port)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, timeout_s)
    except BaseException:
        stop(proc)
        raise
    return proc, f"http://127.0.0.1:{port}/mcp"


@contextmanager
def running_http_servers(names: Iterable[str], *, weather_url: str) -> Iterator[dict[str, str]]:
    """Several servers at once (the weather one talks to `weather_url`); name → URL."""
    with ExitStack() as stack:
        urls = {}
        for name in names:
            proc, urls[name] = start_http_server(name, env={"CONCERTO_WEATHER_URL": weather_url})
            stack.callback(stop, proc)
        yield urls
