"""The `datetime` agent of 002_*.txt: local date, time and UTC offset of a US city, via MCP."""

from __future__ import annotations

from datetime import UTC, datetime

from concerto.agents.base import AgentContext, AgentFailure, AgentInfo, AgentResult
from concerto.contracts.common import ErrorKind
from concerto.packs.city.calls import CityAgent, call_tool, check_result
from concerto.packs.city.models import DateTimeData, DateTimeResult
from concerto.packs.city.temperature import AGENT_TIMEOUT_MS


class DateTimeAgent(CityAgent):
    """Asks the datetime MCP server (`getDateTime`) for the local time at `context.now`."""

    server = "datetime"
    info = AgentInfo(
        name="datetime",
        pack="city",
        description=(
            "Current local date and clock time in a US city, with its timezone and UTC offset "
            "(daylight saving time included)."
        ),
        capabilities=[
            "Local time of day in a US city",
            "Today's date in a US city",
            "Timezone and UTC offset of a US city",
        ],
        inputs={"city": "US city, optionally with its state: 'Seattle', 'Springfield, IL'"},
        outputs={
            "city": "City and state",
            "datetime": "Local time, ISO 8601",
            "timezone": "IANA timezone",
            "utc_offset": "UTC offset, ±HH:MM",
            "timestamp": "When it was computed (UTC)",
        },
        examples=[
            "What time is it in Seattle?",
            "What's the date today in Chicago?",
            "What timezone is Denver in?",
            "Current local time in Boston",
        ],
        default_timeout_ms=AGENT_TIMEOUT_MS,
        max_concurrency=2,
    )

    async def answer(self, context: AgentContext, city: str) -> AgentResult:
        if not 1970 <= context.now.year <= 2200:
            raise AgentFailure(
                f"The clock is set to {context.now:%Y-%m-%d}; local times are given for 1970 to 2200.",
                error_type="invalid_input",
                kind=ErrorKind.VALIDATION,
            )
        at = context.now.astimezone(UTC).isoformat()
        raw = await call_tool(context, "datetime", "getDateTime", {"city": city, "at": at})
        result = check_result(DateTimeResult, raw, "datetime", "getDateTime")
        data = check_result(
            DateTimeData,
            {
                "city": result.city or city,
                "datetime": result.datetime,
                "timezone": result.timezone,
                "utc_offset": result.utc_offset,
                "timestamp": context.now.astimezone(UTC),
            },
            "datetime",
            "getDateTime",
        )
        zone = f"{data.timezone}, UTC{data.utc_offset}"
        sentence = f"It is {_spoken(data.datetime)} in {data.city} ({zone})."
        return AgentResult(
            output=data.model_dump(mode="json"),
            summary=sentence,
            key_findings=[sentence],
            follow_up_questions=[f"What's the temperature in {data.city}?"],
            entities={"city": data.city},
        )


def _spoken(local: datetime) -> str:
    """ "3:30 PM on Sunday, March 9, 2025"."""
    hour = local.hour % 12 or 12
    return (
        f"{hour}:{local.minute:02d} {'AM' if local.hour < 12 else 'PM'} on "
        f"{local:%A}, {local:%B} {local.day}, {local.year}"
    )
