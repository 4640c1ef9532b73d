"""The `temperature` agent of 002_*.txt: current temperature and conditions of a US city."""

from __future__ import annotations

from datetime import UTC

from concerto.agents.base import AgentContext, AgentInfo, AgentResult
from concerto.packs.city.calls import CityAgent, call_tool, check_result
from concerto.packs.city.models import TemperatureData, WeatherResult

# Connection (2 s) plus request (5 s) by default, so the pack's own clearer timeout
# messages arrive before the executor's.
AGENT_TIMEOUT_MS = 7500


class TemperatureAgent(CityAgent):
    """Asks the weather MCP server (`getTemperature`) for a US city's current temperature."""

    server = "weather"
    info = AgentInfo(
        name="temperature",
        pack="city",
        description=(
            "Current outdoor temperature in degrees Fahrenheit and the weather conditions "
            "(clear, cloudy, rain, snow) right now in a US city."
        ),
        capabilities=[
            "Current temperature of a US city in Fahrenheit",
            "Current weather conditions: sunny, cloudy, rain, snow, fog, storms",
            "How hot or cold it is outside in a city right now",
        ],
        inputs={"city": "US city, optionally with its state: 'Seattle', 'Springfield, IL'"},
        outputs={
            "city": "City and state",
            "temperature": "Temperature value",
            "unit": "F",
            "description": "Weather description",
            "timestamp": "When it was fetched (UTC)",
            "source": "Data source",
        },
        # The same cities as the datetime agent's examples, so that the city in a
        # question does not pull the router towards one agent.
        examples=[
            "What's the temperature in Seattle?",
            "How hot is it in Chicago right now?",
            "Is it cold outside in Denver?",
            "What's the weather like in Boston?",
        ],
        default_timeout_ms=AGENT_TIMEOUT_MS,
        max_concurrency=2,
    )

    async def answer(self, context: AgentContext, city: str) -> AgentResult:
        raw = await call_tool(context, "weather", "getTemperature", {"city": city})
        result = check_result(WeatherResult, raw, "weather", "getTemperature")
        data = TemperatureData(
            city=result.city or city,
            temperature=result.temperature,
            unit=result.unit,
            description=result.description,
            timestamp=context.now.astimezone(UTC),
            source=result.source or "weather-mcp",
        )
        sentence = f"It is {data.temperature:g}°{data.unit} and {data.description} in {data.city}."
        return AgentResult(
            output=data.model_dump(mode="json"),
            summary=sentence,
            key_findings=[sentence],
            follow_up_questions=[f"What time is it in {data.city}?"],
            entities={"city": data.city},
        )
