"""Settings of the metrics pack: where the metrics live and how long to wait for them."""

from __future__ import annotations

from pydantic import Field, SecretStr

from concerto.settings import PackSettings


class MetricsSettings(PackSettings):
    """Read from `CONCERTO_PROMETHEUS_URL`, `CONCERTO_GRAFANA_*` and `CONCERTO_METRICS_*`."""

    prometheus_url: str | None = Field(None, description="Prometheus base URL, e.g. http://127.0.0.1:9090")
    grafana_url: str | None = Field(None, description="Grafana base URL (datasource proxy)")
    grafana_token: SecretStr | None = Field(None, description="Grafana service-account token")
    grafana_datasource_uid: str | None = Field(None, description="Prometheus datasource UID in Grafana")
    metrics_timeout_s: float = Field(5.0, gt=0, description="Timeout of one Prometheus/Grafana request")
    metrics_cache_ttl_s: float = Field(300.0, ge=0, description="How long the metric list is cached")
