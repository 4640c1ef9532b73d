"""Backends that are missing, down, slow, or reached through Grafana's datasource proxy."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from _helpers.metrics import context_for, metrics_settings
from _services.ports import dead_url
from _services.prometheus import LocalPrometheus
from concerto.agents.base import AgentFailure
from concerto.contracts.common import ErrorKind
from concerto.nlp.embeddings import Embedder
from concerto.packs.metrics.agent import MetricsAgent
from concerto.settings import Settings
from concerto.testing import run_agent

TOKEN = "glsa_test_token"


async def _fail(settings: Settings, embedder: Embedder, question: str) -> AgentFailure:
    ctx = context_for(settings, embedder)
    try:
        with pytest.raises(AgentFailure) as info:
            await run_agent(MetricsAgent(settings, ctx.resources), ctx, question)
    finally:
        await ctx.resources.aclose()
    return info.value


async def test_no_backend_names_the_settings(tmp_path: Path, shared_embedder: Embedder) -> None:
    failure = await _fail(Settings(data_dir=tmp_path), shared_embedder, "Show CPU usage for the last hour")
    assert failure.error_type == "grafana_unavailable"
    assert failure.kind == ErrorKind.UNAVAILABLE
    assert "CONCERTO_PROMETHEUS_URL" in failure.message
    assert "CONCERTO_GRAFANA_URL" in failure.message


async def test_no_backend_still_reports_an_unsupported_operation(tmp_path: Path, shared_embedder: Embedder) -> None:
    failure = await _fail(Settings(data_dir=tmp_path), shared_embedder, "Show anomalies in CPU usage")
    assert failure.error_type == "unsupported_operation"


async def test_prometheus_down(tmp_path: Path, shared_embedder: Embedder) -> None:
    url = dead_url()
    failure = await _fail(metrics_settings(tmp_path, prometheus_url=url), shared_embedder, "CPU usage")
    assert failure.error_type == "grafana_unavailable"
    assert url in failure.message
    assert "exception" in failure.details  # for logs, not for the user
    assert "Connect" not in failure.message


async def test_prometheus_slower_than_the_timeout(tmp_path: Path, shared_embedder: Embedder, slow_server: str) -> None:
    settings = metrics_settings(tmp_path, prometheus_url=slow_server, metrics_timeout_s=0.3)
    failure = await _fail(settings, shared_embedder, "Show CPU usage for the last hour")
    assert failure.error_type == "grafana_unavailable"
    assert failure.message == "Prometheus did not answer within 0.3 s."


# --- Grafana's datasource proxy in front of the real Prometheus --------------------------


def _grafana_handler(prometheus_url: str, requests: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """Grafana's two endpoints the pack uses; the proxy forwards to the real Prometheus."""

        def do_GET(self) -> None:
            requests.append(self.path)
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._send(401, {"message": "Unauthorized"})
            if self.path == "/api/datasources":
                return self._send(
                    200,
                    [
                        {"uid": "loki1", "type": "loki", "isDefault": False},
                        {"uid": "prom1", "type": "prometheus", "isDefault": True},
                    ],
                )
            prefix = "/api/datasources/proxy/uid/prom1"
            if not self.path.startswith(prefix):
                return self._send(404, {"message": "Not found"})
            try:
                with urllib.request.urlopen(prometheus_url + self.path[len(prefix) :], timeout=10) as r:
                    return self._send(r.status, json.loads(r.read()))
            except urllib.error.HTTPError as exc:
                return self._send(exc.code, json.loads(exc.read()))

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


@pytest.fixture
def grafana(prometheus: LocalPrometheus) -> Iterator[tuple[str, list[str]]]:
    requests: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _grafana_handler(prometheus.url, requests))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()
    server.server_close()


@pytest.mark.prometheus
async def test_grafana_datasource_proxy(
    tmp_path: Path, shared_embedder: Embedder, grafana: tuple[str, list[str]]
) -> None:
    url, requests = grafana
    settings = metrics_settings(tmp_path, grafana_url=url, grafana_token=TOKEN)
    ctx = context_for(settings, shared_embedder)
    try:
        out = await run_agent(MetricsAgent(settings, ctx.resources), ctx, "CPU usage for the last hour")
    finally:
        await ctx.resources.aclose()
    assert out.output["source"] == "grafana"
    assert not out.output["is_empty"]
    assert requests[0] == "/api/datasources"
    assert any(p.startswith("/api/datasources/proxy/uid/prom1/api/v1/query_range?") for p in requests)
    assert any(p.startswith("/api/datasources/proxy/uid/prom1/api/v1/metadata") for p in requests)


@pytest.mark.prometheus
async def test_grafana_with_a_wrong_token(
    tmp_path: Path, shared_embedder: Embedder, grafana: tuple[str, list[str]]
) -> None:
    url, _ = grafana
    settings = metrics_settings(tmp_path, grafana_url=url, grafana_token="wrong")
    failure = await _fail(settings, shared_embedder, "CPU usage")
    assert failure.error_type == "grafana_unavailable"
    assert failure.suggestion is not None and "CONCERTO_GRAFANA_TOKEN" in failure.suggestion


@pytest.mark.prometheus
async def test_grafana_with_a_configured_datasource_uid(
    tmp_path: Path, shared_embedder: Embedder, grafana: tuple[str, list[str]]
) -> None:
    url, requests = grafana
    settings = metrics_settings(tmp_path, grafana_url=url, grafana_token=TOKEN, grafana_datasource_uid="prom1")
    ctx = context_for(settings, shared_embedder)
    try:
        await run_agent(MetricsAgent(settings, ctx.resources), ctx, "memory used")
    finally:
        await ctx.resources.aclose()
    assert "/api/datasources" not in requests
