"""Prometheus HTTP API client, direct or through Grafana's datasource proxy.

One `httpx.AsyncClient` per orchestrator is kept in `Resources` (the spec asks for
connection reuse); the metric catalog (names, type, help text) is cached for
`metrics_cache_ttl_s` (5 minutes by default). Every failure becomes a
`MetricsQueryFailure` with the spec's error type, so the node never sees httpx errors.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import httpx

from concerto.packs.metrics.models import MetricsQueryFailure
from concerto.packs.metrics.settings import MetricsSettings
from concerto.redact import mask_url, scrub

if TYPE_CHECKING:
    from concerto.resources import Resources
    from concerto.settings import Settings

HTTP_CLIENT_KEY = "metrics.http_client"
NO_BACKEND_MESSAGE = (
    "No metrics backend is configured: set CONCERTO_PROMETHEUS_URL (e.g. http://127.0.0.1:9090) "
    "or CONCERTO_GRAFANA_URL with CONCERTO_GRAFANA_TOKEN."
)


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """What Prometheus says about one metric: its type, help text and unit."""

    name: str
    type: str = "unknown"
    help: str = ""
    unit: str = ""


@dataclass(slots=True)
class Series:
    """One series of a range query: its labels and (unix seconds, value) samples."""

    labels: dict[str, str]
    samples: list[tuple[float, float]]


@dataclass(slots=True)
class _Catalog:
    metrics: dict[str, MetricInfo]
    loaded_at: float


@dataclass
class PrometheusBackend:
    """The Prometheus HTTP API at `base_url` (a Prometheus, or Grafana's proxy to one)."""

    client: httpx.AsyncClient
    base_url: str
    source: Literal["prometheus", "grafana"] = "prometheus"
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 5.0
    cache_ttl_s: float = 300.0
    _catalog: _Catalog | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _labels: dict[str, tuple[float, list[str]]] = field(default_factory=dict)

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET `path` and return the `data` of a successful Prometheus response. Errors name
        the URL without its password (`shown`)."""
        url = f"{self.base_url}{path}"
        shown = mask_url(url)
        where = "Grafana" if self.source == "grafana" else "Prometheus"
        try:
            resp = await self.client.get(url, params=params, headers=self.headers, timeout=self.timeout_s)
        except httpx.TimeoutException as exc:
            raise MetricsQueryFailure(
                "grafana_unavailable",
                f"{where} did not answer within {self.timeout_s:g} s.",
                suggestion="Try again, ask for a shorter time range, or raise CONCERTO_METRICS_TIMEOUT_S.",
                details={"url": shown, "exception": scrub(repr(exc))},
            ) from exc
        except httpx.HTTPError as exc:
            raise MetricsQueryFailure(
                "grafana_unavailable",
                f"{where} at {mask_url(self.base_url)} cannot be reached.",
                suggestion=f"Check that {where} is running and that CONCERTO_"
                f"{'GRAFANA' if self.source == 'grafana' else 'PROMETHEUS'}_URL points to it.",
                details={"url": shown, "exception": scrub(repr(exc))},
            ) from exc
        return _unwrap(resp, where, shown)

    async def catalog(self) -> dict[str, MetricInfo]:
        """Metric names with type and help text, cached for `cache_ttl_s`."""
        async with self._lock:
            cached = self._catalog
            if cached is not None and time.monotonic() - cached.loaded_at < self.cache_ttl_s:
                return cached.metrics
            names, metadata = await asyncio.gather(
                self._get("/api/v1/label/__name__/values"), self._get("/api/v1/metadata")
            )
            metrics: dict[str, MetricInfo] = {}
            for name in names or []:
                entries = (metadata or {}).get(name) or [{}]
                meta = entries[0]
                metrics[name] = MetricInfo(
                    name=name,
                    type=meta.get("type", "unknown") or "unknown",
                    help=meta.get("help", "") or "",
                    unit=meta.get("unit", "") or "",
                )
            # Histogram and summary families are listed in metadata under their base name.
            for name, entries in (metadata or {}).items():
                if (
                    name not in metrics
                    and entries
                    and any(f"{name}{suffix}" in metrics for suffix in ("_bucket", "_count", "_sum"))
                ):
                    meta = entries[0]
                    metrics[name] = MetricInfo(
                        name=name,
                        type=meta.get("type", "unknown"),
                        help=meta.get("help", ""),
                        unit=meta.get("unit", ""),
                    )
            self._catalog = _Catalog(metrics=metrics, loaded_at=time.monotonic())
            return metrics

    async def query_range(self, promql: str, start: datetime, end: datetime, step_s: int) -> list[Series]:
        """Run a range query; returns one `Series` per result series."""
        data = await self._get(
            "/api/v1/query_range",
            {
                "query": promql,
                "start": f"{start.timestamp():.3f}",
                "end": f"{end.timestamp():.3f}",
                "step": f"{step_s}s",
            },
        )
        return [
            Series(
                labels=item.get("metric", {}),
                samples=[(float(t), float(v)) for t, v in item.get("values", [])],
            )
            for item in data.get("result", [])
        ]

    async def query(self, promql: str, at: datetime) -> list[Series]:
        """Run an instant query; each series has one sample."""
        data = await self._get("/api/v1/query", {"query": promql, "time": f"{at.timestamp():.3f}"})
        out = []
        for item in data.get("result", []):
            t, v = item.get("value", (at.timestamp(), "NaN"))
            out.append(Series(labels=item.get("metric", {}), samples=[(float(t), float(v))]))
        return out

    async def labels_of(self, metrics: list[str]) -> dict[str, list[str]]:
        """The label names each metric's series carry (without `__name__`), cached like the catalog.

        A histogram's base name is looked up through its `_bucket` series, without `le`.
        """
        now = time.monotonic()
        wanted = [
            m for m in dict.fromkeys(metrics) if not (m in self._labels and now - self._labels[m][0] < self.cache_ttl_s)
        ]

        async def one(metric: str) -> tuple[str, list[str]]:
            catalog = self._catalog.metrics if self._catalog else {}
            series = f"{metric}_bucket" if metric not in catalog and f"{metric}_bucket" in catalog else metric
            names = await self._get("/api/v1/labels", {"match[]": series})
            hidden = {"__name__"} if series == metric else {"__name__", "le"}
            return metric, sorted(str(n) for n in names or [] if n not in hidden)

        for metric, names in await asyncio.gather(*(one(m) for m in wanted)):
            self._labels[metric] = (now, names)
        return {m: self._labels[m][1] for m in dict.fromkeys(metrics) if m in self._labels}

    async def data_start(self) -> datetime | None:
        """The earliest sample this server holds, if it says (Prometheus's own
        `prometheus_tsdb_lowest_timestamp_seconds`, when it scrapes itself); else None."""
        try:
            data = await self._get("/api/v1/query", {"query": "min(prometheus_tsdb_lowest_timestamp_seconds)"})
        except MetricsQueryFailure:
            return None
        result = (data or {}).get("result") or []
        if not result:
            return None
        try:
            return datetime.fromtimestamp(float(result[0]["value"][1]), UTC)
        except (KeyError, IndexError, TypeError, ValueError):
            return None

    async def retention(self) -> str | None:
        """How long the server keeps data ("15d"), from `/api/v1/status/runtimeinfo`; None if unknown."""
        try:
            data = await self._get("/api/v1/status/runtimeinfo")
        except MetricsQueryFailure:
            return None
        value = (data or {}).get("storageRetention")
        return str(value) if value else None

    async def label_values(self, label: str, match: str | None = None) -> list[str]:
        """Values a label takes, optionally among the series matching a selector."""
        params = {"match[]": match} if match else None
        values = await self._get(f"/api/v1/label/{label}/values", params)
        return [str(v) for v in values or []]


def _unwrap(resp: httpx.Response, where: str, url: str) -> Any:
    """Turn a Prometheus JSON envelope into its data, or the spec's error type (`url` as shown
    in errors: masked)."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    details = {"url": url, "status": resp.status_code, "body": scrub(resp.text[:500])}
    if isinstance(body, dict) and body.get("status") == "success":
        return body.get("data")
    if resp.status_code in (400, 422) and isinstance(body, dict):
        raise MetricsQueryFailure(
            "invalid_query",
            f"{where} rejected the query: {body.get('error', 'bad request')}",
            suggestion="Rephrase the question or name the metric exactly.",
            details=details,
        )
    if resp.status_code in (401, 403):
        raise MetricsQueryFailure(
            "grafana_unavailable",
            f"{where} refused the request (HTTP {resp.status_code}).",
            suggestion="Check CONCERTO_GRAFANA_TOKEN: it needs permission to query the data source.",
            details=details,
        )
    raise MetricsQueryFailure(
        "grafana_unavailable",
        f"{where} answered HTTP {resp.status_code}"
        + (f": {body.get('error')}" if isinstance(body, dict) and body.get("error") else "."),
        suggestion=f"Check that {where} is healthy, then ask again.",
        details=details,
    )


def _http_client(metrics: MetricsSettings) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=metrics.metrics_timeout_s,
        limits=httpx.Limits(max_connections=20, max_keepalive_connections=10),
        headers={"Accept": "application/json", "User-Agent": "concerto-metrics"},
    )


async def get_backend(settings: Settings, resources: Resources) -> PrometheusBackend:
    """The configured backend, created once per orchestrator and shared via `resources`.

    Grafana (URL + token) wins over a direct Prometheus URL because it is the spec's
    primary backend; with neither, `grafana_unavailable` names the settings to set.
    """
    metrics = MetricsSettings.of(settings)
    client = resources.get(HTTP_CLIENT_KEY, lambda: _http_client(metrics))
    token = metrics.grafana_token.get_secret_value() if metrics.grafana_token else ""
    if metrics.grafana_url and token:
        base = metrics.grafana_url.rstrip("/")
        key = f"metrics.backend:grafana:{base}:{metrics.grafana_datasource_uid or ''}"
        backend: PrometheusBackend | None = resources.get(key, lambda: None)
        if backend is None:
            headers = {"Authorization": f"Bearer {token}"}
            uid = metrics.grafana_datasource_uid or await _grafana_datasource_uid(
                client, base, headers, metrics.metrics_timeout_s
            )
            backend = PrometheusBackend(
                client=client,
                base_url=f"{base}/api/datasources/proxy/uid/{uid}",
                source="grafana",
                headers=headers,
                timeout_s=metrics.metrics_timeout_s,
                cache_ttl_s=metrics.metrics_cache_ttl_s,
            )
            resources.put(key, backend)
        return backend
    if metrics.prometheus_url:
        base = metrics.prometheus_url.rstrip("/")
        return resources.get(
            f"metrics.backend:prometheus:{base}",
            lambda: PrometheusBackend(
                client=client,
                base_url=base,
                timeout_s=metrics.metrics_timeout_s,
                cache_ttl_s=metrics.metrics_cache_ttl_s,
            ),
        )
    raise MetricsQueryFailure(
        "grafana_unavailable",
        NO_BACKEND_MESSAGE,
        suggestion="Set CONCERTO_PROMETHEUS_URL to your Prometheus base URL and ask again.",
        details={"prometheus_url": None, "grafana_url": mask_url(metrics.grafana_url or "") or None},
    )


async def _grafana_datasource_uid(
    client: httpx.AsyncClient, base: str, headers: dict[str, str], timeout_s: float
) -> str:
    """The UID of Grafana's Prometheus data source (the default one when there are several)."""
    url = f"{base}/api/datasources"
    shown = mask_url(url)
    try:
        resp = await client.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise MetricsQueryFailure(
            "grafana_unavailable",
            f"Grafana at {mask_url(base)} cannot be reached.",
            suggestion="Check that Grafana is running and CONCERTO_GRAFANA_URL points to it.",
            details={"url": shown, "exception": scrub(repr(exc))},
        ) from exc
    if resp.status_code != 200:
        raise MetricsQueryFailure(
            "grafana_unavailable",
            f"Grafana refused to list data sources (HTTP {resp.status_code}).",
            suggestion="Check CONCERTO_GRAFANA_TOKEN, or set CONCERTO_GRAFANA_DATASOURCE_UID.",
            details={"url": shown, "status": resp.status_code, "body": scrub(resp.text[:500])},
        )
    sources = [s for s in resp.json() if s.get("type") == "prometheus"]
    if not sources:
        raise MetricsQueryFailure(
            "grafana_unavailable",
            "Grafana has no Prometheus data source.",
            suggestion="Add one in Grafana, or set CONCERTO_PROMETHEUS_URL to query Prometheus directly.",
            details={"url": shown},
        )
    sources.sort(key=lambda s: not s.get("isDefault", False))
    return str(sources[0]["uid"])
