"""Never half an answer: a question naming several cities gets every one answered, and a city
that cannot be answered is named in the response (an error entry and a finding), not dropped."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from _helpers.city import city_settings
from _services.weather import Replay
from concerto.agents.loader import load_packs
from concerto.contracts.orchestrator import OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.packs.city.extract import extract_cities

NOW = datetime(2025, 6, 15, 12, tzinfo=UTC)


def test_every_city_of_a_list_is_found_known_or_not() -> None:
    assert extract_cities("what time is it in Seattle, Boston and Gotham?") == ["Seattle", "Boston", "Gotham"]
    assert extract_cities("time in Springfield, IL and Portland Maine") == ["Springfield, IL", "Portland, ME"]
    assert extract_cities("What's the weather and the time in Chicago?") == ["Chicago"]
    assert extract_cities("how's the weather") == []


async def test_each_city_is_answered_and_an_unknown_one_is_named(tmp_path: Path, provider: Replay) -> None:
    settings = city_settings(tmp_path, provider.url)
    async with Orchestrator(settings, packs=load_packs("city")) as orch:
        times = await orch.ask("What time is it in Seattle, Boston and Gotham?", now=NOW)
        weather = await orch.ask("What's the weather in Denver and Narnia?", now=NOW)
    assert isinstance(times, OrchestratorOutput), times
    (answer,) = [r for r in times.agent_results if r.agent == "datetime"]
    assert [c["city"] for c in answer.output["cities"]] == ["Seattle, WA", "Boston, MA"]
    assert [e.details.get("part") for e in answer.errors] == ["city 'Gotham'"]
    assert answer.errors[0].error_type == "city_not_found"
    assert any(f.startswith("Not answered: city 'Gotham'") for f in times.key_findings)
    assert "Gotham" in times.response and "Seattle" in times.response and "Boston" in times.response

    assert isinstance(weather, OrchestratorOutput), weather
    (answer,) = [r for r in weather.agent_results if r.agent == "temperature"]
    assert answer.output["cities"][0]["city"].startswith("Denver")
    assert [e.details.get("part") for e in answer.errors] == ["city 'Narnia'"]
    assert "Narnia" in weather.response
