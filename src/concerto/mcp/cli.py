"""`concerto mcp ...`: run the MCP servers that packs declare, list the configured ones."""

from __future__ import annotations

import json

import click

from concerto.agents.loader import load_packs

_SERVERS = load_packs().mcp_servers()


@click.group()
def mcp() -> None:
    """MCP servers: the packs' own (weather, datetime, echo, ...) and the external ones configured."""


@mcp.command()
@click.argument("server", type=click.Choice(sorted(_SERVERS)))
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
    """Run one MCP server declared by a pack (e.g. weather, datetime, echo of the city pack).

    \b
    Example:
        concerto mcp serve datetime --transport http --port 8765
        # then an MCP client connects to http://127.0.0.1:8765/mcp
    """
    from concerto.agents.pack import resolve
    from concerto.mcp.serve import run

    pack, ref = _SERVERS[server]
    run(resolve(ref, f"MCP server {server} of pack {pack}"), transport, host, port)  # type: ignore[arg-type]


@mcp.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def list_servers(as_json: bool) -> None:
    """List the packs' MCP servers and the external ones in CONCERTO_MCP_SERVERS_FILE."""
    from concerto.mcp.settings import MCPSettings
    from concerto.mcp.spec import ServersFileError, load_servers

    try:
        external = load_servers(MCPSettings().mcp_servers_file)
    except ServersFileError as exc:
        raise click.ClickException(str(exc)) from None
    rows = [{"name": n, "source": f"pack {p}", "where": "concerto mcp serve " + n} for n, (p, _) in _SERVERS.items()]
    rows += [{"name": s.name, "source": "servers file", "where": s.where} for s in external]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        click.echo(f"{row['name']:<16} {row['source']:<16} {row['where']}")
