"""Test-wide isolation: a temporary data dir and no real LLM unless a test configures one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets the session's temporary data dir and no LLM from the environment."""
    data_dir = tmp_path_factory.getbasetemp() / "concerto-data"
    monkeypatch.setenv("CONCERTO_DATA_DIR", str(data_dir))
    for name in (
        "CONCERTO_LLM_BASE_URL",
        "CONCERTO_LLM_MODEL",
        "CONCERTO_LLM_API_KEY",
        "OPENAI_API_KEY",
        "CONCERTO_AGENTS",
        "CONCERTO_PROMETHEUS_URL",
        "CONCERTO_GRAFANA_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    yield data_dir
