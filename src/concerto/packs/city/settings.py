"""Settings of the city pack (002_*.txt limits and the weather provider)."""

from __future__ import annotations

from pydantic import Field

from concerto.settings import PackSettings


class CitySettings(PackSettings):
    """Read from `CONCERTO_WEATHER_URL` and `CONCERTO_CITY_*`."""

    weather_url: str = Field("https://api.open-meteo.com", description="Weather provider base URL")
    city_max_concurrency: int = Field(2, ge=1, description="Concurrent sub-agent requests")
    city_request_timeout_ms: int = Field(5000, ge=1, description="Sub-agent request timeout")
