"""Open-Meteo client against the replay server: units, descriptions, validation, failures."""

from __future__ import annotations

import pytest

from _services.ports import free_port
from _services.weather import Replay, forecast, recording
from concerto.packs.city.cities import resolve
from concerto.packs.city.weather import WeatherError, current_temperature, describe, parse_forecast


async def test_current_temperature(provider: Replay) -> None:
    result = await current_temperature(resolve("Seattle"), provider.url)
    assert (result.temperature, result.unit, result.description) == (72.5, "F", "partly cloudy")


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (0, "clear sky"),
        (3, "overcast"),
        (65, "heavy rain"),
        (95, "thunderstorms"),
        (42, "weather code 42"),
    ],
)
def test_wmo_codes(code: int, words: str) -> None:
    assert describe(code) == words


@pytest.mark.parametrize("value", [-100.0, 150.0, -40.2, 0])
def test_temperatures_in_range(value: float) -> None:
    assert parse_forecast(200, forecast(value), resolve("Fairbanks")).temperature == value


@pytest.mark.parametrize("value", [-100.1, 150.1, 999])
def test_implausible_temperatures_are_refused(value: float) -> None:
    with pytest.raises(WeatherError, match="implausible") as err:
        parse_forecast(200, forecast(value), resolve("Phoenix"))
    assert err.value.code == 502


@pytest.mark.parametrize(
    "body", [b"not json", b"{}", b'{"current": {"temperature_2m": "warm"}}', forecast(None), b"[]"]
)
def test_malformed_provider_answers(body: bytes) -> None:
    with pytest.raises(WeatherError, match="without a current temperature"):
        parse_forecast(200, body, resolve("Boston"))


async def test_provider_error_status(provider: Replay) -> None:
    provider.set(recording("open_meteo_error.json"), status=400)
    with pytest.raises(WeatherError, match=r"HTTP 400: Latitude must be in range") as err:
        await current_temperature(resolve("Boston"), provider.url)
    assert err.value.code == 502


async def test_offline_provider() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(WeatherError, match="cannot be reached") as err:
        await current_temperature(resolve("Boston"), url)
    assert err.value.code == 503


async def test_slow_provider(provider: Replay) -> None:
    provider.set(delay_s=1.0)
    with pytest.raises(WeatherError, match=r"did not answer within 0\.2 s") as err:
        await current_temperature(resolve("Boston"), provider.url, timeout_s=0.2)
    assert err.value.code == 504
