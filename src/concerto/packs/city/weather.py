"""Current temperature from Open-Meteo (no key), in Fahrenheit with a WMO description.

`CONCERTO_WEATHER_URL` sets the base URL, so tests point it at a local server that
replays recorded responses. Every failure becomes a `WeatherError` whose message says
what to do; the weather MCP server turns it into an `MCPError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from concerto.packs.city.models import WeatherResult
from concerto.redact import mask_url

if TYPE_CHECKING:
    import httpx

    from concerto.packs.city.cities import City

SOURCE = "open-meteo"
FORECAST_PATH = "/v1/forecast"

# WMO weather interpretation codes, as Open-Meteo documents them.
WMO_CODES: dict[int, str] = {
    0: "clear sky",
    1: "mainly clear",
    2: "partly cloudy",
    3: "overcast",
    45: "foggy",
    48: "foggy with rime",
    51: "light drizzle",
    53: "drizzle",
    55: "dense drizzle",
    56: "light freezing drizzle",
    57: "freezing drizzle",
    61: "light rain",
    63: "rain",
    65: "heavy rain",
    66: "light freezing rain",
    67: "freezing rain",
    71: "light snow",
    73: "snow",
    75: "heavy snow",
    77: "snow grains",
    80: "light rain showers",
    81: "rain showers",
    82: "violent rain showers",
    85: "light snow showers",
    86: "heavy snow showers",
    95: "thunderstorms",
    96: "thunderstorms with light hail",
    99: "thunderstorms with heavy hail",
}


class WeatherError(RuntimeError):
    """The provider could not give a usable temperature; `code` is the MCP error code."""

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def describe(code: int) -> str:
    """Plain words for a WMO weather code."""
    return WMO_CODES.get(code, f"weather code {code}")


async def current_temperature(
    city: City, base_url: str, *, timeout_s: float = 4.0, client: httpx.AsyncClient | None = None
) -> WeatherResult:
    """Ask the provider for the city's current temperature and weather code (errors name the
    provider's URL without its password)."""
    import httpx

    url = base_url.rstrip("/") + FORECAST_PATH
    params = {
        "latitude": f"{city.latitude:.4f}",
        "longitude": f"{city.longitude:.4f}",
        "current": "temperature_2m,weather_code",
        "temperature_unit": "fahrenheit",
    }
    own = client is None
    http = client or httpx.AsyncClient(timeout=timeout_s)
    try:
        response = await http.get(url, params=params, timeout=timeout_s)
    except httpx.TimeoutException:
        raise WeatherError(
            f"The weather provider at {mask_url(base_url)} did not answer within {timeout_s:g} s. "
            "Try again in a moment.",
            code=504,
        ) from None
    except httpx.HTTPError as exc:
        raise WeatherError(
            f"The weather provider at {mask_url(base_url)} cannot be reached ({type(exc).__name__}); "
            "check the network connection or set CONCERTO_WEATHER_URL.",
            code=503,
        ) from None
    finally:
        if own:
            await http.aclose()
    return parse_forecast(response.status_code, response.content, city)


def parse_forecast(status: int, body: bytes, city: City) -> WeatherResult:
    """Turn an Open-Meteo `/v1/forecast` answer into a checked `WeatherResult`."""
    import json

    try:
        data: Any = json.loads(body)
    except ValueError:
        data = None
    if status >= 400:
        reason = data.get("reason") if isinstance(data, dict) else None
        raise WeatherError(
            f"The weather provider refused the request (HTTP {status}" + (f": {reason}" if reason else "") + ").",
            code=502,
        )
    try:
        current = data["current"]
        value = float(current["temperature_2m"])
        code = int(current["weather_code"])
        unit_text = str(data.get("current_units", {}).get("temperature_2m", "°F"))
    except (TypeError, KeyError, ValueError):
        raise WeatherError(
            "The weather provider sent an answer without a current temperature; try again later.",
            code=502,
        ) from None
    unit = "C" if "C" in unit_text else "F"
    try:
        return WeatherResult(
            temperature=round(value, 1),
            unit=unit,
            description=describe(code),
            city=city.label,
            source=SOURCE,
        )
    except ValueError:
        raise WeatherError(
            f"The weather provider reported an implausible {value}°{unit} for {city.label} (valid: -100 to 150 °F).",
            code=502,
        ) from None
