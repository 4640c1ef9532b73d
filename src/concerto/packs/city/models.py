"""Entities of 002_*.txt as pydantic models, with the spec's validation rules.

The MCP result shapes (`WeatherResult`, `DateTimeResult`, `EchoResult`) are what the
servers return and what the agents check a server's answer against; the `*Data` models
are what the agents put in `AgentResult.output`; `QueryResponse` is the spec's final
answer, built from the engine's `OrchestratorOutput` by `to_query_response`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from concerto.mcp.errors import MCPError as MCPError  # 002's error entity, shared with any MCP server

if TYPE_CHECKING:
    from concerto.contracts.events import Event
    from concerto.contracts.orchestrator import OrchestratorErrorResponse, OrchestratorOutput

MIN_TEMPERATURE_F = -100.0
MAX_TEMPERATURE_F = 150.0
MAX_ECHO_CHARS = 1000
UTC_OFFSET = re.compile(r"^[+-](?:0\d|1[0-4]):[0-5]\d$")
_STRIP = ConfigDict(str_strip_whitespace=True)


class QueryType(StrEnum):
    """What a question asks for (002_*.txt `QueryType`)."""

    TEMPERATURE = "temperature"
    DATETIME = "datetime"
    BOTH = "both"


class AgentType(StrEnum):
    """The sub-agents of the pack; the values are the registered agent names."""

    TEMPERATURE = "temperature"
    DATETIME = "datetime"
    ECHO = "echo"


def _check_fahrenheit(value: float, unit: str) -> float:
    fahrenheit = value if unit == "F" else value * 9 / 5 + 32
    if not MIN_TEMPERATURE_F <= fahrenheit <= MAX_TEMPERATURE_F:
        raise ValueError(f"temperature {value}°{unit} is outside {MIN_TEMPERATURE_F:g}..{MAX_TEMPERATURE_F:g} °F")
    return value


class WeatherResult(BaseModel):
    """Result of `getTemperature` (spec: temperature, unit, description; plus city and source)."""

    model_config = _STRIP

    temperature: float
    unit: Literal["F", "C"]
    description: str = Field(..., min_length=1)
    city: str = ""
    source: str = ""

    @model_validator(mode="after")
    def _range(self) -> WeatherResult:
        _check_fahrenheit(self.temperature, self.unit)
        return self


class DateTimeResult(BaseModel):
    """Result of `getDateTime` (spec: datetime in ISO 8601, timezone, utc_offset; plus city)."""

    model_config = _STRIP

    datetime: str
    timezone: str
    utc_offset: str = Field(..., pattern=UTC_OFFSET.pattern)
    city: str = ""

    @field_validator("datetime")
    @classmethod
    def _iso(cls, value: str) -> str:
        parsed = dt.datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            raise ValueError("datetime must carry its UTC offset")
        return value

    @field_validator("timezone")
    @classmethod
    def _iana(cls, value: str) -> str:
        return _check_timezone(value)


class EchoResult(BaseModel):
    """Result of `echo` (spec: original_text, echo_text)."""

    original_text: str = Field(..., min_length=1, max_length=MAX_ECHO_CHARS)
    echo_text: str

    @model_validator(mode="after")
    def _must_match(self) -> EchoResult:
        if self.echo_text != self.original_text:
            raise ValueError("echo response must match the original text exactly")
        return self


def _check_timezone(value: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"'{value}' is not an IANA timezone") from None
    return value


class TemperatureData(BaseModel):
    """What the `temperature` agent returns (002_*.txt `TemperatureData`)."""

    model_config = _STRIP

    city: str
    temperature: float
    unit: Literal["F", "C"] = "F"
    description: str
    timestamp: dt.datetime
    source: str

    @model_validator(mode="after")
    def _range(self) -> TemperatureData:
        _check_fahrenheit(self.temperature, self.unit)
        return self


class DateTimeData(BaseModel):
    """What the `datetime` agent returns (002_*.txt `DateTimeData`)."""

    model_config = _STRIP

    city: str
    datetime: dt.datetime
    timezone: str
    utc_offset: str = Field(..., pattern=UTC_OFFSET.pattern)
    timestamp: dt.datetime

    @field_validator("timezone")
    @classmethod
    def _iana(cls, value: str) -> str:
        return _check_timezone(value)

    @field_validator("datetime")
    @classmethod
    def _bounds(cls, value: dt.datetime) -> dt.datetime:
        if value.tzinfo is None or not 1970 <= value.year <= 2200:
            raise ValueError("datetime must be timezone-aware and between 1970 and 2200")
        return value


class EchoData(EchoResult):
    """What the `echo` agent returns (002_*.txt `EchoData`)."""

    timestamp: dt.datetime | None = None


class QueryResponse(BaseModel):
    """The final answer of 002_*.txt, derived from the engine's output."""

    query_id: str = ""
    message: str
    query_type: QueryType | None = Field(
        None, description="Temperature, DateTime or Both, from the city agents that were invoked"
    )
    temperature: TemperatureData | None = None
    datetime: DateTimeData | None = None
    echo: EchoData | None = None
    invoked_agents: list[str] = []
    orchestration_log: list[str] = []
    errors: list[str] = []
    duration: dt.timedelta

    @computed_field  # type: ignore[prop-decorator]
    @property
    def duration_ms(self) -> float:
        """The duration in milliseconds, for readers that do not parse ISO 8601 durations."""
        return round(self.duration.total_seconds() * 1000, 3)


_DATA: dict[str, type[BaseModel]] = {
    AgentType.TEMPERATURE: TemperatureData,
    AgentType.DATETIME: DateTimeData,
    AgentType.ECHO: EchoData,
}


def to_query_response(
    output: OrchestratorOutput | OrchestratorErrorResponse, events: Iterable[Event] = ()
) -> QueryResponse:
    """Build the spec's `QueryResponse` from what the orchestrator returned.

    Each sub-agent's data is taken from its completed result, so a failing agent leaves
    the other's data in place; its error goes to `errors`. With the query's `events`,
    the orchestration log is the step-by-step record (states, the plan's strategy and
    reasoning, each agent's actions); without them it is rebuilt from the output.
    """
    from concerto.contracts.orchestrator import OrchestratorOutput

    data: dict[str, BaseModel] = {}
    errors: list[str] = []
    log: list[str] = []
    ic = output.intent_classification
    if ic is not None:
        log.append(
            f"Classified as '{ic.primary_intent}' by {ic.classification_method} "
            f"(confidence {ic.confidence:.2f}); agents: {', '.join(ic.agents) or 'none'}"
        )
        if ic.reasoning:
            log.append(f"Reasoning: {ic.reasoning}")
    if isinstance(output, OrchestratorOutput):
        message, results, invoked = output.response, output.agent_results, output.agents_invoked
        log.extend(_plan_lines(output.breakdown))
        notes = output.notes
    else:
        message, results = output.error_message, output.partial_results or []
        invoked = [r.agent for r in results]
        notes = []
    for r in results:
        log.append(f"{r.agent}: {r.status} in {r.total_latency_ms:.0f} ms")
        errors.extend(f"{r.agent}: {e.message}" for e in r.errors)
        model = _DATA.get(r.agent)
        if model is not None and r.status == "completed" and r.agent not in data:
            data[r.agent] = model.model_validate(r.output)
    log.extend(notes)
    if events:
        log = [_event_line(e) for e in events] or log
    if not isinstance(output, OrchestratorOutput) and not errors:
        errors.append(output.error_message)
    return QueryResponse(
        query_id=output.query_id,
        message=message,
        query_type=query_type(invoked),
        temperature=data.get(AgentType.TEMPERATURE),
        datetime=data.get(AgentType.DATETIME),
        echo=data.get(AgentType.ECHO),
        invoked_agents=list(dict.fromkeys(invoked)),
        orchestration_log=log,
        errors=errors,
        duration=dt.timedelta(milliseconds=max(output.total_latency_ms, 0.001)),
    )


def query_type(agents: Iterable[str]) -> QueryType | None:
    """The spec's query type from the agents a plan used (None when neither city agent ran)."""
    names = set(agents)
    weather, clock = AgentType.TEMPERATURE in names, AgentType.DATETIME in names
    if weather and clock:
        return QueryType.BOTH
    return QueryType.TEMPERATURE if weather else QueryType.DATETIME if clock else None


def _event_line(event: Event) -> str:
    """One orchestration step: "Planned: Planned 2 task(s), parallel (both independent)"."""
    who = event.state.value if event.state is not None else event.source
    reasoning = event.details.get("reasoning")
    return f"{who}: {event.title}" + (f" ({reasoning})" if reasoning else "")


def _plan_lines(breakdown: dict[str, Any]) -> list[str]:
    """Plan strategy and reasoning, when the engine put the plan in the breakdown."""
    plan = breakdown.get("plan")
    if not isinstance(plan, dict):
        return []
    lines = []
    if plan.get("strategy"):
        tasks = plan.get("tasks") or []
        names = ", ".join(str(t.get("agent")) for t in tasks if isinstance(t, dict))
        lines.append(f"Plan: {plan['strategy']}" + (f" ({names})" if names else ""))
    if plan.get("reasoning"):
        lines.append(f"Plan reasoning: {plan['reasoning']}")
    return lines
