"""The `mcp` pack: the tools of any MCP server as agents, and the `concerto mcp` command."""

from concerto.agents.pack import Pack

pack = Pack(
    name="mcp",
    description="Every tool of the MCP servers in CONCERTO_MCP_SERVERS_FILE, as one agent each.",
    settings="concerto.mcp.settings:MCPSettings",
    discover="concerto.mcp.adapter:discover",
    commands={"mcp": "concerto.mcp.cli:mcp"},
)
