"""Fixtures of the metrics tests: the real Prometheus (node exporter + Prometheus, started once for
the session), contexts on it, and a server too slow to answer."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from _helpers.metrics import context_for, metrics_settings
from _services import policy
from _services.prometheus import INSTALL_HINT, LocalPrometheus
from _services.threaded_http import serve_in_thread
from concerto.agents.base import AgentContext
from concerto.nlp.embeddings import Embedder, default_embedder
from concerto.settings import Settings


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPrometheus]:
    """Node exporter + Prometheus on free loopback ports, 1 s scrapes, data already there."""
    local = LocalPrometheus(scrape_interval_s=1, workdir=tmp_path_factory.mktemp("prometheus"))
    policy.start("prometheus", lambda: local.start(wait_for_data_s=60, settle_s=3), INSTALL_HINT)
    yield local
    local.stop()


@pytest.fixture(scope="session")
def shared_embedder() -> Embedder:
    """One embedder for the session: the model loads once and its cache stays warm."""
    return default_embedder()


@pytest.fixture
def prom_settings(prometheus: LocalPrometheus, tmp_path: Path) -> Settings:
    """Settings pointing at the session's Prometheus."""
    return metrics_settings(tmp_path, prometheus_url=prometheus.url, metrics_timeout_s=5)


@pytest_asyncio.fixture(loop_scope="function")
async def prom_context(prom_settings: Settings, shared_embedder: Embedder) -> AsyncIterator[AgentContext]:
    """A context on the real Prometheus; its HTTP client is closed after the test."""
    ctx = context_for(prom_settings, shared_embedder, now=datetime.now(UTC))
    yield ctx
    await ctx.resources.aclose()


class _SlowHandler(BaseHTTPRequestHandler):
    delay_s = 2.0

    def do_GET(self) -> None:
        time.sleep(self.delay_s)
        body = b'{"status":"success","data":[]}'
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (that is the point of the test)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def slow_server() -> Iterator[str]:
    """An HTTP server on loopback that answers every request after 2 s."""
    with serve_in_thread(_SlowHandler) as url:
        yield url
