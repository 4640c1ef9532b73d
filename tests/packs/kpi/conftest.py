"""A KPI store with the demo data, shared by the tests of the pack (real embedded ChromaDB)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from concerto.agents.base import AgentContext
from concerto.packs.kpi.agent import KPIAgent
from concerto.packs.kpi.store import KPIStore, get_store
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import make_context

NOW = datetime(2025, 6, 15, 9, 30, tzinfo=UTC)


@pytest.fixture(scope="session")
def kpi_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kpi-store")


@pytest.fixture(scope="session")
def kpi_resources(kpi_dir: Path) -> Resources:
    settings = Settings(data_dir=kpi_dir)
    resources = Resources(settings)
    get_store(settings, resources).ensure_demo()
    return resources


@pytest.fixture(scope="session")
def store(kpi_resources: Resources) -> KPIStore:
    return get_store(kpi_resources.settings, kpi_resources)


@pytest.fixture()
def agent(kpi_resources: Resources) -> KPIAgent:
    return KPIAgent(kpi_resources.settings, kpi_resources)


@pytest.fixture()
def context(kpi_resources: Resources) -> AgentContext:
    return make_context(now=NOW, settings=kpi_resources.settings, resources=kpi_resources, agent="kpi")


@pytest.fixture()
def fresh_store(tmp_path: Path, kpi_resources: Resources) -> KPIStore:
    """An empty store in its own directory, sharing the loaded embedder."""
    return KPIStore(Settings(data_dir=tmp_path), kpi_resources.embedder)
