"""The city pack through the engine: routing, the parallel plan, a failing sub-agent."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from _helpers.city import city_settings
from _services.ports import dead_url
from _services.weather import Replay
from concerto.agents.loader import load_packs
from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.packs.city.models import to_query_response

NOW = datetime(2025, 11, 2, 7, 30, tzinfo=UTC)  # 01:30 CST, the second 01:30 in Chicago


async def test_weather_and_time_in_one_question(tmp_path: Path, provider: Replay) -> None:
    settings = city_settings(tmp_path, provider.url)
    async with Orchestrator(settings, packs=load_packs("city")) as orch:
        result = await orch.ask("What's the weather and the time in Chicago?", now=NOW)
    assert isinstance(result, OrchestratorOutput), result
    response = to_query_response(result)
    assert set(response.invoked_agents) == {"temperature", "datetime"}
    assert response.temperature is not None and response.temperature.temperature == 72.5
    assert response.datetime is not None
    assert response.datetime.datetime.isoformat() == "2025-11-02T01:30:00-06:00"
    assert response.errors == [] and response.duration_ms > 0
    assert "72.5°F" in response.message and "1:30 AM" in response.message


async def test_a_failing_agent_leaves_the_other_answer(tmp_path: Path) -> None:
    settings = city_settings(tmp_path, dead_url())
    async with Orchestrator(settings, packs=load_packs("city")) as orch:
        result = await orch.ask("What's the weather and the time in Chicago?", now=NOW)
        unknown = await orch.ask("What time is it in Atlantis?", now=NOW)
    assert isinstance(result, OrchestratorOutput), result
    response = to_query_response(result)
    assert response.datetime is not None and response.temperature is None
    assert any("cannot be reached" in e for e in response.errors)
    assert isinstance(unknown, OrchestratorErrorResponse)
    assert "not a US city I know" in unknown.error_message
