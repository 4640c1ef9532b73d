"""Helpers of the metrics pack's tests: settings and agent contexts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concerto.agents.base import AgentContext
from concerto.nlp.embeddings import Embedder
from concerto.packs.metrics.settings import MetricsSettings
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import make_context


def metrics_settings(tmp_path: Path, **values: Any) -> Settings:
    """Core settings with these metrics-pack settings (`prometheus_url=...`, ...)."""
    return Settings(data_dir=tmp_path).using(MetricsSettings(**values))


def context_for(
    settings: Settings, embedder: Embedder, question: str = "metrics question", **kwargs: Any
) -> AgentContext:
    """An agent context whose resources share the session's embedder."""
    resources = Resources(settings)
    resources.put("embedder", embedder)
    return make_context(question, settings=settings, resources=resources, **kwargs)
