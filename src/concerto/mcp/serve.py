"""Run an MCP server that a pack declares: a factory `(host, port) -> FastMCP`.

`python -m concerto.mcp MODULE:FACTORY --transport stdio` runs one by its import path,
without looking up packs: Concerto starts its built-in stdio servers this way, so a
server process starts as fast as the interpreter allows.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from concerto.agents.pack import resolve

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

Transport = Literal["stdio", "http"]
HTTP_PATH = "/mcp"  # where a server built for streamable HTTP answers


def run(
    factory: Callable[[str, int], FastMCP], transport: Transport, host: str = "127.0.0.1", port: int = 8000
) -> None:
    """Build the server and run it until it is stopped (stdin closed, or Ctrl-C for HTTP)."""
    server = factory(host, port)
    server.run("stdio" if transport == "stdio" else "streamable-http")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m concerto.mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("factory", help="MODULE:FACTORY of a function (host, port) -> FastMCP")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    run(resolve(args.factory, "MCP server factory"), args.transport, args.host, args.port)
