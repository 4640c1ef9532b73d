"""Fixtures of the city pack tests: a replaying weather provider and real MCP servers.

Nothing stands in for an MCP server or the provider: the servers are the pack's own,
started as subprocesses (stdio, or streamable HTTP on a free port), and the provider is
a local HTTP server replaying recorded Open-Meteo responses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from _services.weather import Replay
from concerto.mcp.settings import MCPSettings
from concerto.packs.city.settings import CitySettings
from concerto.resources import Resources
from concerto.settings import Settings

HERE = Path(__file__).parent
FIXTURE_SERVERS = HERE / "mcp_servers"


def city_settings(tmp_path: Path, weather_url: str, *, city: dict[str, Any] | None = None, **mcp: Any) -> Settings:
    """Settings for the city pack (`city`: CitySettings, the rest: MCPSettings), with timeouts
    generous enough for a busy CI."""
    return Settings(data_dir=tmp_path).using(
        CitySettings(**{"weather_url": weather_url, "city_request_timeout_ms": 15000, **(city or {})}),
        MCPSettings(**{"mcp_connect_timeout_ms": 20000, **mcp}),
    )


@pytest.fixture
def provider(weather_replay: Replay) -> Iterator[Replay]:
    """The replaying weather provider, reset to the recorded answer for each test."""
    weather_replay.set()
    weather_replay.requests.clear()
    yield weather_replay
    weather_replay.set()


@pytest.fixture
def settings(tmp_path: Path, provider: Replay) -> Settings:
    """Settings pointing at the replay provider."""
    return city_settings(tmp_path, provider.url)


@pytest_asyncio.fixture(loop_scope="function")
async def resources(settings: Settings) -> AsyncIterator[Resources]:
    """The orchestrator's shared resources; closing them stops the MCP server processes."""
    res = Resources(settings)
    yield res
    await res.aclose()


@pytest.fixture(scope="session")
def http_servers(mcp_http_servers: dict[str, str]) -> dict[str, str]:
    """The three servers over streamable HTTP, started once for the session."""
    return mcp_http_servers


def servers_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mcp_servers.yaml"
    path.write_text(text, encoding="utf-8")
    return path
