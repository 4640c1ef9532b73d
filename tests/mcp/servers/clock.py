"""A small MCP server for the client's fault tests: it says which process it is, and sleeps on request.

`whoami()` returns the server's PID (so a test can stop or kill it, and see that a call was
answered by a new process); `sleep(seconds)` is a tool that is merely slow, which first
creates the file `received` when given one (so a test knows the call reached the server).
With a port argument it serves streamable HTTP at /mcp instead of stdio.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import FastMCP

server = FastMCP(name="clock", log_level="WARNING")


@server.tool(name="whoami")
def whoami() -> dict[str, Any]:
    """The server's process id."""
    return {"pid": os.getpid()}


@server.tool(name="sleep")
async def sleep(seconds: float, received: str | None = None) -> dict[str, Any]:
    """Wait `seconds`, then answer; first create the file `received`, if given."""
    if received:
        Path(received).touch()
    await asyncio.sleep(seconds)
    return {"slept": seconds}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.settings.port = int(sys.argv[1])
        server.run("streamable-http")
    else:
        server.run("stdio")
