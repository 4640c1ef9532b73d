"""`concerto mcp ...`: run the city pack's MCP servers on their own.

Also runnable as `python -m concerto.packs.city.cli serve weather` (the pack's agents
start the servers this way, with the interpreter they run in).
"""

from __future__ import annotations

import click

from concerto.packs.city.servers import SERVER_KINDS


@click.group()
def mcp() -> None:
    """MCP servers of the city pack (weather, datetime, echo)."""


@mcp.command()
@click.argument("server", type=click.Choice(SERVER_KINDS))
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: JSON-RPC on stdin/stdout; http: streamable HTTP at path /mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (http).")
@click.option("--port", type=int, default=8000, show_default=True, help="Port to listen on (http).")
def serve(server: str, transport: str, host: str, port: int) -> None:
    """Run one MCP server: weather (getTemperature), datetime (getDateTime) or echo (echo).

    \b
    Example:
        concerto mcp serve datetime --transport http --port 8765
        # then an MCP client connects to http://127.0.0.1:8765/mcp
    """
    from concerto.packs.city.servers import serve as run_server

    run_server(server, transport, host, port)  # type: ignore[arg-type]


if __name__ == "__main__":
    mcp()
