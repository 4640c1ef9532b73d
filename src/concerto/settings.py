"""Settings read from the environment (prefix CONCERTO_) or an optional `concerto.env` file.

Every setting has an embedded default so that a fresh install answers with no set-up;
the real backends are switched on by setting their URL.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("concerto", appauthor=False))


class Settings(BaseSettings):
    """Effective configuration of one orchestrator; `concerto config` prints it."""

    model_config = SettingsConfigDict(
        env_prefix="CONCERTO_",
        env_file=os.environ.get("CONCERTO_SETTINGS_FILE", "concerto.env"),
        env_file_encoding="utf-8",
        extra="ignore",
    )

    data_dir: Path = Field(default_factory=_default_data_dir, description="Where demo data, stores and logs live")
    agents: str | None = Field(None, description="Comma-separated agent or pack names to load (default: all)")

    # LLM (none by default: deterministic routing, extraction and synthesis)
    llm_base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    llm_model: str | None = Field(None, description="Model id sent to the endpoint")
    llm_api_key: SecretStr | None = Field(None, description="API key (OPENAI_API_KEY also honoured)")
    llm_timeout_s: float = Field(30.0, gt=0, description="Timeout of one LLM call")
    llm_json_mode: Literal["json_object", "json_schema", "none"] = Field(
        "json_object", description="How structured output is requested from the endpoint"
    )
    llm_max_retries: int = Field(1, ge=0, le=5, description="Extra attempts when the LLM returns invalid output")

    # Orchestration
    max_concurrency: int = Field(8, ge=1, le=1024, description="Agent tasks running at once per query")
    default_timeout_ms: int = Field(30000, ge=1, description="Task timeout when a plan gives none")
    semantic_threshold: float = Field(0.35, ge=0, le=1, description="Minimum similarity for the semantic router")
    intents_file: Path | None = Field(None, description="Extra intent table (YAML) for the planner")
    store_events: bool = Field(True, description="Append every event to events.sqlite in the data dir")
    max_events: int = Field(1000, ge=10, description="Events kept in memory per query")

    # Real backends
    prometheus_url: str | None = Field(None, description="Prometheus base URL, e.g. http://127.0.0.1:9090")
    grafana_url: str | None = Field(None, description="Grafana base URL (datasource proxy)")
    grafana_token: SecretStr | None = Field(None, description="Grafana service-account token")
    grafana_datasource_uid: str | None = Field(None, description="Prometheus datasource UID in Grafana")
    metrics_timeout_s: float = Field(5.0, gt=0, description="Timeout of one Prometheus/Grafana request")
    metrics_cache_ttl_s: float = Field(300.0, ge=0, description="How long the metric list is cached")
    weather_url: str = Field("https://api.open-meteo.com", description="Weather provider base URL")
    chroma_url: str | None = Field(None, description="ChromaDB server URL (default: embedded)")
    database_url: str | None = Field(None, description="PostgreSQL URL (default: embedded DuckDB)")

    # City pack (002_*.txt limits)
    mcp_servers_file: Path | None = Field(None, description="YAML list of external MCP servers")
    city_max_concurrency: int = Field(2, ge=1, description="Concurrent sub-agent requests")
    city_request_timeout_ms: int = Field(5000, ge=1, description="Sub-agent request timeout")
    mcp_connect_timeout_ms: int = Field(2000, ge=1, description="MCP server connection timeout")
    mcp_startup_timeout_ms: int = Field(
        10000, ge=0, description="Extra time a stdio MCP server process gets to start (Python start-up, imports)"
    )

    @field_validator("llm_api_key", mode="before")
    @classmethod
    def _openai_key(cls, value: Any) -> Any:
        return value or os.environ.get("OPENAI_API_KEY") or None

    @property
    def llm_configured(self) -> bool:
        """An LLM is used only when a model and an endpoint (or a key for OpenAI) are set."""
        return bool(self.llm_model and (self.llm_base_url or self.llm_api_key))

    def masked(self) -> dict[str, Any]:
        """Settings as JSON-able values with secrets masked, for `concerto config`."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "********" if value.get_secret_value() else None
            elif isinstance(value, Path):
                value = str(value)
            out[name] = value
        return out
