"""Fixtures of the city pack tests: a replaying weather provider and real MCP servers.

Nothing stands in for an MCP server or the provider: the servers are the pack's own,
started as subprocesses (stdio, or streamable HTTP on a free port), and the provider is
a local HTTP server replaying recorded Open-Meteo responses.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from concerto.packs.city import spawn
from concerto.resources import Resources
from concerto.settings import Settings

from .replay import Replay

HERE = Path(__file__).parent
FIXTURE_SERVERS = HERE / "mcp_servers"


@pytest.fixture(scope="session")
def _replay_server() -> Iterator[Replay]:
    with Replay() as replay:
        yield replay


@pytest.fixture
def provider(_replay_server: Replay) -> Iterator[Replay]:
    """The replaying weather provider, reset to the recorded answer for each test."""
    _replay_server.set()
    _replay_server.requests.clear()
    yield _replay_server
    _replay_server.set()


@pytest.fixture
def settings(tmp_path: Path, provider: Replay) -> Settings:
    """Settings pointing at the replay provider, with timeouts generous enough for a busy CI."""
    return Settings(
        data_dir=tmp_path,
        weather_url=provider.url,
        mcp_connect_timeout_ms=20000,
        city_request_timeout_ms=15000,
    )


@pytest_asyncio.fixture(loop_scope="function")
async def resources(settings: Settings) -> AsyncIterator[Resources]:
    """The orchestrator's shared resources; closing them stops the MCP server processes."""
    res = Resources(settings)
    yield res
    await res.aclose()


def start_http_server(kind: str, weather_url: str) -> tuple[subprocess.Popen[bytes], str]:
    """`concerto mcp serve KIND --transport http` on a free port; returns it and its /mcp URL."""
    return spawn.start_http_server(kind, env={"CONCERTO_WEATHER_URL": weather_url})


@pytest.fixture(scope="session")
def http_servers(_replay_server: Replay) -> Iterator[dict[str, str]]:
    """The three servers over streamable HTTP, started once for the session."""
    procs, urls = [], {}
    try:
        for kind in ("weather", "datetime", "echo"):
            proc, url = start_http_server(kind, _replay_server.url)
            procs.append(proc)
            urls[kind] = url
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


def servers_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mcp_servers.yaml"
    path.write_text(text, encoding="utf-8")
    return path
