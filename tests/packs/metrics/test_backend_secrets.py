"""The metrics backend's errors name Prometheus or Grafana without the URL's password.

These check the errors as the backend raises them (`MetricsQueryFailure.error`, a metrics
model that does not scrub), so they fail if a message is built from the raw URL even though
the error contract's safety net would still mask it later.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from _services import policy
from _services.blackhole import blackhole
from _services.locked import locked_prometheus
from _services.ports import dead_url
from _services.prometheus import INSTALL_HINT
from concerto.packs.metrics.backend import PrometheusBackend, get_backend
from concerto.packs.metrics.models import MetricsQueryFailure
from concerto.packs.metrics.settings import MetricsSettings
from concerto.resources import Resources
from concerto.settings import Settings

PASSWORD = "s3cret-PASSWORD"


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus requiring basic auth (a wrong password gets its 401)."""
    running = locked_prometheus(tmp_path_factory.mktemp("locked-prometheus"))
    yield policy.start("prometheus", running.__enter__, INSTALL_HINT)
    running.__exit__(None, None, None)


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://user:{PASSWORD}@")


async def _failure(base_url: str, timeout_s: float = 5.0) -> MetricsQueryFailure:
    async with httpx.AsyncClient() as client:
        backend = PrometheusBackend(client=client, base_url=base_url, timeout_s=timeout_s)
        with pytest.raises(MetricsQueryFailure) as caught:
            await backend.catalog()
    return caught.value


async def test_a_refused_connection_names_the_url_without_its_password() -> None:
    url = _with_password(dead_url())
    failure = await _failure(url)
    text = failure.error.model_dump_json()
    assert PASSWORD not in text + str(failure)
    assert "cannot be reached" in failure.error.message and "user:***@127.0.0.1" in failure.error.message
    assert failure.error.details["url"].startswith("http://user:***@127.0.0.1")


async def test_a_backend_that_never_answers_times_out_without_the_password() -> None:
    with blackhole() as hole:
        failure = await _failure(_with_password(hole.url), timeout_s=0.5)
    assert "did not answer within 0.5 s" in failure.error.message
    assert PASSWORD not in failure.error.model_dump_json() + str(failure)


async def test_prometheus_refusing_the_password_is_reported_without_it(locked: str) -> None:
    failure = await _failure(_with_password(locked))
    assert failure.error.details["status"] == 401  # Prometheus's own refusal
    assert "refused the request (HTTP 401)" in failure.error.message
    assert PASSWORD not in failure.error.model_dump_json()


async def test_grafana_errors_name_it_without_the_password(tmp_path: Path) -> None:
    url = _with_password(dead_url())
    settings = Settings(data_dir=tmp_path).using(MetricsSettings(grafana_url=url, grafana_token="glsa_token_123456"))
    resources = Resources(settings)
    try:
        with pytest.raises(MetricsQueryFailure) as caught:
            await get_backend(settings, resources)
    finally:
        await resources.aclose()
    error = caught.value.error
    assert "Grafana at http://user:***@127.0.0.1" in error.message
    assert PASSWORD not in error.model_dump_json() and "glsa_token_123456" not in error.model_dump_json()
