"""A real MCP server standing in for a misbehaving weather server, for the failure tests.

`getTemperature(city)` answers by city: "Slowville" sleeps 60 s (to be killed or time
out), "Malformed" returns a result of the wrong shape, "Boom" raises a plain exception;
any other city gets a valid answer. The process writes its PID to `$PID_FILE` and
touches `$STARTED_FILE` when a slow call begins. With a port argument it serves
streamable HTTP at /mcp instead of stdio.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import FastMCP

server = FastMCP(name="odd-weather", log_level="WARNING")


@server.tool(name="getTemperature")
async def get_temperature(city: str) -> dict[str, Any]:
    """Temperature of a city, with deliberate failures for tests."""
    if city == "Slowville":
        Path(os.environ["STARTED_FILE"]).touch()
        await asyncio.sleep(60)
    if city == "Malformed":
        return {"temperature": "hot", "unit": "K"}
    if city == "Boom":
        raise ValueError("the thermometer broke")
    return {"temperature": 55.0, "unit": "F", "description": "overcast", "city": f"{city}, ZZ"}


if __name__ == "__main__":
    import sys

    if os.environ.get("PID_FILE"):
        Path(os.environ["PID_FILE"]).write_text(str(os.getpid()))
    if len(sys.argv) > 1:  # a port: streamable HTTP at /mcp
        server.settings.port = int(sys.argv[1])
        server.run("streamable-http")
    else:
        server.run("stdio")
