"""Settings of the MCP layer: external servers whose tools become agents, and the timeouts."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from concerto.settings import PackSettings


class MCPSettings(PackSettings):
    """Read from `CONCERTO_MCP_*`; the city pack's built-in servers use the connection limits too."""

    mcp_servers_file: Path | None = Field(None, description="YAML list of external MCP servers")
    mcp_connect_timeout_ms: int = Field(2000, ge=1, description="MCP server connection timeout")
    mcp_startup_timeout_ms: int = Field(
        10000,
        ge=0,
        description="Extra time a stdio MCP server process gets to start (Python start-up, imports); "
        "URL servers get none",
    )
    mcp_request_timeout_ms: int = Field(5000, ge=1, description="Timeout of one tool call on an external MCP server")
