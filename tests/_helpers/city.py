"""Helpers of the city pack's tests: settings on the replaying weather provider, and MCP
server lists (tests/packs/city/mcp_servers/ holds the misbehaving servers the tests start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concerto.mcp.settings import MCPSettings
from concerto.packs.city.settings import CitySettings
from concerto.settings import Settings

FIXTURE_SERVERS = Path(__file__).resolve().parents[1] / "packs" / "city" / "mcp_servers"


def city_settings(tmp_path: Path, weather_url: str, *, city: dict[str, Any] | None = None, **mcp: Any) -> Settings:
    """Settings for the city pack (`city`: CitySettings, the rest: MCPSettings), with timeouts
    generous enough for a busy CI."""
    return Settings(data_dir=tmp_path).using(
        CitySettings(**{"weather_url": weather_url, "city_request_timeout_ms": 15000, **(city or {})}),
        MCPSettings(**{"mcp_connect_timeout_ms": 20000, **mcp}),
    )


def servers_file(tmp_path: Path, text: str) -> Path:
    """An MCP servers file (`CONCERTO_MCP_SERVERS_FILE`) holding `text`."""
    path = tmp_path / "mcp_servers.yaml"
    path.write_text(text, encoding="utf-8")
    return path
