"""The `temperature`, `datetime` and `echo` agents calling the real MCP servers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from _helpers.city import city_settings, servers_file
from _services.ports import dead_url
from _services.weather import Replay, forecast
from concerto.agents.base import AgentFailure
from concerto.agents.loader import load_registry
from concerto.contracts.common import ErrorKind
from concerto.mcp.client import MCPServer
from concerto.packs.city.datetime_agent import DateTimeAgent
from concerto.packs.city.echo import EchoAgent
from concerto.packs.city.models import DateTimeData, EchoData, TemperatureData
from concerto.packs.city.temperature import TemperatureAgent
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import make_context, run_agent

NOW = datetime(2025, 3, 9, 8, 0, tzinfo=UTC)  # the first minute of CDT in Chicago


def test_agents_are_registered_with_the_pack_limits() -> None:
    registry = load_registry("city")
    for name in ("temperature", "datetime", "echo"):
        info = registry.get(name).info
        assert info.pack == "city" and info.max_concurrency == 2
        assert info.description and info.capabilities and info.examples


async def test_temperature(settings: Settings, resources: Resources, provider: Replay) -> None:
    agent = TemperatureAgent(settings, resources)
    question = "How warm is it in Seattle right now?"
    ctx = make_context(question, now=NOW, settings=settings, resources=resources)
    inputs = await agent.prepare(question, ctx)
    assert inputs["city"] == "Seattle"
    result = await run_agent(agent, ctx, question, inputs=inputs)
    assert result.summary == "It is 72.5°F and partly cloudy in Seattle, WA."
    data = TemperatureData.model_validate(result.output)
    assert (data.city, data.temperature, data.unit, data.source) == (
        "Seattle, WA",
        72.5,
        "F",
        "open-meteo",
    )
    assert data.timestamp == NOW

    provider.set(forecast(-12.4, 73))
    cold = await run_agent(agent, ctx, inputs={"city": "Fairbanks"})
    assert cold.summary == "It is -12.4°F and snow in Fairbanks, AK."


async def test_datetime_across_dst_phoenix_and_honolulu(settings: Settings, resources: Resources) -> None:
    agent = DateTimeAgent(settings, resources)
    cases = {
        ("Chicago", "2025-03-09T07:59:00+00:00"): ("2025-03-09T01:59:00-06:00", "-06:00"),
        ("Chicago", "2025-03-09T08:00:00+00:00"): ("2025-03-09T03:00:00-05:00", "-05:00"),
        ("Chicago", "2025-11-02T06:59:00+00:00"): ("2025-11-02T01:59:00-05:00", "-05:00"),
        ("Chicago", "2025-11-02T07:00:00+00:00"): ("2025-11-02T01:00:00-06:00", "-06:00"),
        ("Phoenix", "2025-07-01T19:00:00+00:00"): ("2025-07-01T12:00:00-07:00", "-07:00"),
        ("Phoenix", "2025-12-01T19:00:00+00:00"): ("2025-12-01T12:00:00-07:00", "-07:00"),
        ("Honolulu", "2025-07-01T22:00:00+00:00"): ("2025-07-01T12:00:00-10:00", "-10:00"),
        ("Honolulu", "2025-12-01T22:00:00+00:00"): ("2025-12-01T12:00:00-10:00", "-10:00"),
    }
    for (city, now), (local, offset) in cases.items():
        ctx = make_context(
            f"time in {city}",
            now=datetime.fromisoformat(now),
            settings=settings,
            resources=resources,
        )
        result = await run_agent(agent, ctx, f"What time is it in {city}?")
        data = DateTimeData.model_validate(result.output)
        assert (data.datetime.isoformat(), data.utc_offset) == (local, offset), city
    assert result.summary == (
        "It is 12:00 PM on Monday, December 1, 2025 in Honolulu, HI (Pacific/Honolulu, UTC-10:00)."
    )


async def test_echo(settings: Settings, resources: Resources) -> None:
    agent = EchoAgent(settings, resources)
    ctx = make_context("echo", now=NOW, settings=settings, resources=resources)
    text = "special <>&\"' chars — ✓"
    result = await run_agent(agent, ctx, f'echo "{text}"')
    assert EchoData.model_validate(result.output).echo_text == text
    assert result.summary == f'Echo: "{text}"'
    assert (await run_agent(agent, ctx, inputs={"text": "y" * 1000})).output["echo_text"] == "y" * 1000
    with pytest.raises(AgentFailure, match="1001 characters; the maximum is 1000") as err:
        await run_agent(agent, ctx, inputs={"text": "y" * 1001})
    assert err.value.kind == ErrorKind.VALIDATION


async def test_one_session_per_server_is_reused(settings: Settings, resources: Resources) -> None:
    agent = DateTimeAgent(settings, resources)
    ctx = make_context("t", now=NOW, settings=settings, resources=resources)
    await run_agent(agent, ctx, inputs={"city": "Boston"})
    server = resources.get("mcp.server.datetime", lambda: None)
    assert isinstance(server, MCPServer) and server.connected
    session = await server.session()
    results = await asyncio.gather(*(run_agent(agent, ctx, inputs={"city": c}) for c in ("Miami", "Denver", "Austin")))
    assert [r.output["timezone"] for r in results] == [
        "America/New_York",
        "America/Denver",
        "America/Chicago",
    ]
    assert await server.session() is session
    await resources.aclose()
    assert not server.connected


async def test_ambiguous_unknown_and_missing_cities(settings: Settings, resources: Resources) -> None:
    agent = TemperatureAgent(settings, resources)
    ctx = make_context("q", now=NOW, settings=settings, resources=resources)
    with pytest.raises(AgentFailure, match="several cities named Springfield") as err:
        await run_agent(agent, ctx, "weather in Springfield?")
    assert err.value.error_type == "ambiguous_city" and err.value.kind == ErrorKind.VALIDATION
    assert "Springfield, IL" in err.value.details["options"]
    assert "Which one? Add the state, e.g. 'Springfield, MO'." in err.value.message

    ok = await run_agent(agent, ctx, "weather in Springfield, IL?")
    assert ok.output["city"] == "Springfield, IL"

    with pytest.raises(AgentFailure, match="not a US city I know") as err:
        await run_agent(agent, ctx, "weather in Seatle?")
    assert err.value.error_type == "city_not_found" and err.value.details["options"][0] == "Seattle, WA"

    with pytest.raises(AgentFailure, match="Which city") as err:
        await run_agent(agent, ctx, "how hot is it?")
    assert err.value.error_type == "missing_city"


@pytest.mark.parametrize(
    ("question", "label"),
    [
        ("weather in St. Louis", "St. Louis, MO"),
        ("weather in Coeur d'Alene", "Coeur d'Alene, ID"),
        ("weather in Winston-Salem", "Winston-Salem, NC"),
        ("weather in NYC", "New York City, NY"),
        ("weather in Washington DC", "Washington, DC"),
    ],
)
async def test_special_characters_in_city_names(
    question: str, label: str, settings: Settings, resources: Resources
) -> None:
    agent = TemperatureAgent(settings, resources)
    ctx = make_context(question, now=NOW, settings=settings, resources=resources)
    assert (await run_agent(agent, ctx, question)).output["city"] == label


async def test_hostile_city_text_is_refused(settings: Settings, resources: Resources) -> None:
    ctx = make_context("q", now=NOW, settings=settings, resources=resources)
    with pytest.raises(AgentFailure, match="not a city name") as err:
        await run_agent(DateTimeAgent(settings, resources), ctx, inputs={"city": "Boston'); DROP TABLE x;--"})
    assert err.value.kind == ErrorKind.VALIDATION


async def test_offline_provider_is_a_clear_error(tmp_path: object, provider: Replay) -> None:
    settings = city_settings(Path(str(tmp_path)), dead_url())
    resources = Resources(settings)
    ctx = make_context("q", now=NOW, settings=settings, resources=resources)
    try:
        with pytest.raises(AgentFailure, match="cannot be reached") as err:
            await run_agent(TemperatureAgent(settings, resources), ctx, inputs={"city": "Boston"})
        assert err.value.kind == ErrorKind.UNAVAILABLE and err.value.error_type == "provider_unavailable"
    finally:
        await resources.aclose()


async def test_agents_over_streamable_http(tmp_path: object, provider: Replay, http_servers: dict[str, str]) -> None:
    path = servers_file(
        Path(str(tmp_path)),
        "\n".join(f"- name: {kind}\n  url: {url}" for kind, url in http_servers.items()),
    )
    settings = city_settings(Path(str(tmp_path)), provider.url, mcp_servers_file=path)
    resources = Resources(settings)
    ctx = make_context("q", now=NOW, settings=settings, resources=resources)
    try:
        t = await run_agent(TemperatureAgent(settings, resources), ctx, inputs={"city": "Seattle"})
        d = await run_agent(DateTimeAgent(settings, resources), ctx, inputs={"city": "Chicago"})
        e = await run_agent(EchoAgent(settings, resources), ctx, inputs={"text": "over http"})
        assert t.output["temperature"] == 72.5
        assert d.output["datetime"] == "2025-03-09T03:00:00-05:00"
        assert e.output["echo_text"] == "over http"
        assert resources.get("mcp.server.echo", lambda: None).spec.url == http_servers["echo"]  # type: ignore[attr-defined]
    finally:
        await resources.aclose()


async def test_at_most_city_max_concurrency_requests_at_once(tmp_path: object, provider: Replay) -> None:
    import time

    provider.set(delay_s=0.3)
    settings = city_settings(Path(str(tmp_path)), provider.url, city={"city_max_concurrency": 1})
    resources = Resources(settings)
    agent = TemperatureAgent(settings, resources)
    ctx = make_context("q", now=NOW, settings=settings, resources=resources)
    try:
        await run_agent(agent, ctx, inputs={"city": "Boston"})  # start the server
        started = time.monotonic()
        await asyncio.gather(*(run_agent(agent, ctx, inputs={"city": c}) for c in ("Miami", "Denver")))
        assert time.monotonic() - started >= 0.6  # one after the other
    finally:
        await resources.aclose()


async def test_clock_outside_reasonable_bounds(settings: Settings, resources: Resources) -> None:
    ctx = make_context("q", now=datetime(1900, 1, 1, tzinfo=UTC), settings=settings, resources=resources)
    with pytest.raises(AgentFailure, match="1970 to 2200") as err:
        await run_agent(DateTimeAgent(settings, resources), ctx, inputs={"city": "Boston"})
    assert err.value.kind == ErrorKind.VALIDATION
