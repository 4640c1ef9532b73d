"""The weather client's errors name the provider without the password of CONCERTO_WEATHER_URL."""

from __future__ import annotations

import pytest

from _services.blackhole import blackhole
from _services.ports import dead_url
from concerto.packs.city.cities import resolve
from concerto.packs.city.weather import WeatherError, current_temperature

PASSWORD = "s3cret-PASSWORD"


async def test_an_unreachable_provider_is_named_without_its_password() -> None:
    url = dead_url().replace("http://", f"http://user:{PASSWORD}@")
    with pytest.raises(WeatherError, match=r"provider at http://user:\*\*\*@127\.0\.0\.1:\d+ cannot be reached") as err:
        await current_temperature(resolve("Boston"), url)
    assert PASSWORD not in str(err.value)


async def test_a_provider_that_never_answers_is_named_without_its_password() -> None:
    with blackhole() as hole, pytest.raises(WeatherError, match=r"did not answer within 0\.3 s") as err:
        url = hole.url.replace("http://", f"http://user:{PASSWORD}@")
        await current_temperature(resolve("Boston"), url, timeout_s=0.3)
    assert PASSWORD not in str(err.value) and "user:***@" in str(err.value)
