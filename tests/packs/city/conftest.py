"""Fixtures of the city pack tests: a replaying weather provider and real MCP servers.

Nothing stands in for an MCP server or the provider: the servers are the pack's own,
started as subprocesses (stdio, or streamable HTTP on a free port), and the provider is
a local HTTP server replaying recorded Open-Meteo responses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from _helpers.city import city_settings
from _services.mcp import running_http_servers
from _services.weather import Replay
from concerto.resources import Resources
from concerto.settings import Settings


@pytest.fixture(scope="session")
def weather_replay() -> Iterator[Replay]:
    """A local weather provider replaying recorded Open-Meteo answers."""
    with Replay() as replay:
        yield replay


@pytest.fixture(scope="session")
def http_servers(weather_replay: Replay) -> Iterator[dict[str, str]]:
    """The pack's three MCP servers over streamable HTTP, started once for the session: name → /mcp URL."""
    with running_http_servers(("weather", "datetime", "echo"), weather_url=weather_replay.url) as urls:
        yield urls


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
