"""The three MCP servers through the SDK's own `ClientSession`, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from _services.ports import dead_url
from _services.weather import Replay
from concerto.mcp.errors import parse_tool_error
from concerto.packs.city.models import DateTimeResult, EchoResult, WeatherResult

TRANSPORTS = ["stdio", "http"]


@asynccontextmanager
async def open_session(
    kind: str, transport: str, weather_url: str, http_servers: dict[str, str] | None
) -> AsyncIterator[ClientSession]:
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "concerto.cli", "mcp", "serve", kind, "--transport", "stdio"],
            env={**os.environ, "CONCERTO_WEATHER_URL": weather_url},
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
    else:
        assert http_servers is not None
        async with (
            streamable_http_client(http_servers[kind]) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def maybe_http(transport: str, request: pytest.FixtureRequest) -> dict[str, str] | None:
    return request.getfixturevalue("http_servers") if transport == "http" else None


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    return await session.call_tool(tool, args)


async def test_weather_tool(transport: str, provider: Replay, maybe_http: dict[str, str] | None) -> None:
    async with open_session("weather", transport, provider.url, maybe_http) as session:
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["getTemperature"]
        assert tools[0].description and "Fahrenheit" in tools[0].description
        assert tools[0].inputSchema["required"] == ["city"]
        result = await session.call_tool("getTemperature", {"city": "Seattle"})
    assert not result.isError
    body = WeatherResult.model_validate(result.structuredContent)
    assert (body.temperature, body.unit, body.description) == (72.5, "F", "partly cloudy")
    assert body.city == "Seattle, WA" and body.source == "open-meteo"
    asked = provider.requests[-1]
    assert asked["path"] == ["/v1/forecast"] and asked["temperature_unit"] == ["fahrenheit"]
    assert asked["current"] == ["temperature_2m,weather_code"]
    assert float(asked["latitude"][0]) == pytest.approx(47.606, abs=0.01)


async def test_datetime_tool(transport: str, provider: Replay, maybe_http: dict[str, str] | None) -> None:
    async with open_session("datetime", transport, provider.url, maybe_http) as session:
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["getDateTime"]
        result = await session.call_tool("getDateTime", {"city": "chicago", "at": "2025-07-04T17:00:00Z"})
        now = await session.call_tool("getDateTime", {"city": "Denver"})
    body = DateTimeResult.model_validate(result.structuredContent)
    assert body.model_dump() == {
        "datetime": "2025-07-04T12:00:00-05:00",
        "timezone": "America/Chicago",
        "utc_offset": "-05:00",
        "city": "Chicago, IL",
    }
    assert DateTimeResult.model_validate(now.structuredContent).timezone == "America/Denver"


async def test_echo_tool(transport: str, provider: Replay, maybe_http: dict[str, str] | None) -> None:
    text = 'Ünïcödé "quotes" <tags> & newlines\nand tabs\t— 🎵'
    async with open_session("echo", transport, provider.url, maybe_http) as session:
        ok = await session.call_tool("echo", {"text": text})
        at_limit = await session.call_tool("echo", {"text": "x" * 1000})
        too_long = await session.call_tool("echo", {"text": "x" * 1001})
        empty = await session.call_tool("echo", {"text": "   "})
    assert EchoResult.model_validate(ok.structuredContent).echo_text == text
    assert not at_limit.isError
    assert too_long.isError and empty.isError
    err = parse_tool_error(too_long.content[0].text)  # type: ignore[union-attr]
    assert err.code == 400 and "1001 characters; the maximum is 1000" in err.message
    assert parse_tool_error(empty.content[0].text).message == "Echo text must be non-empty."  # type: ignore[union-attr]


async def test_tool_errors_carry_the_spec_error_shape(
    transport: str, provider: Replay, maybe_http: dict[str, str] | None
) -> None:
    async with open_session("datetime", transport, provider.url, maybe_http) as session:
        unknown = await session.call_tool("getDateTime", {"city": "Atlantis"})
        ambiguous = await session.call_tool("getDateTime", {"city": "Springfield"})
        hostile = await session.call_tool("getDateTime", {"city": "Seattle; DROP TABLE cities"})
        bad_at = await session.call_tool("getDateTime", {"city": "Seattle", "at": "yesterday"})
    for result in (unknown, ambiguous, hostile, bad_at):
        assert result.isError
        text = result.content[0].text  # type: ignore[union-attr]
        body = json.loads(text[text.index("{") :])["error"]
        assert set(body) >= {"code", "message"}
    assert parse_tool_error(unknown.content[0].text).code == 404  # type: ignore[union-attr]
    amb = parse_tool_error(ambiguous.content[0].text)  # type: ignore[union-attr]
    assert amb.code == 409 and "Springfield, IL" in (amb.data or {})["options"]
    assert parse_tool_error(hostile.content[0].text).code == 400  # type: ignore[union-attr]
    assert parse_tool_error(bad_at.content[0].text).code == 400  # type: ignore[union-attr]


async def test_provider_offline_is_a_clear_tool_error(tmp_path: Any) -> None:
    dead = dead_url()
    async with open_session("weather", "stdio", dead, None) as session:
        result = await session.call_tool("getTemperature", {"city": "Boston"})
    err = parse_tool_error(result.content[0].text)  # type: ignore[union-attr]
    assert result.isError and err.code == 503
    assert "cannot be reached" in err.message and "CONCERTO_WEATHER_URL" in err.message
