"""A KPI store with the demo data, shared by the tests of the pack (real embedded ChromaDB), and a
real ChromaDB server for the tests of the server mode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from _helpers.kpi import NOW
from _services import policy
from _services.chroma import HINT, running_chroma
from concerto.agents.base import AgentContext
from concerto.packs.kpi.agent import KPIAgent
from concerto.packs.kpi.store import KPIStore, get_store
from concerto.resources import Resources
from concerto.settings import Settings
from concerto.testing import make_context


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a real ChromaDB server (`chroma run`)."""
    running = running_chroma(tmp_path_factory.mktemp("chroma-server"))
    url = policy.start("chroma", running.__enter__, HINT)
    yield url
    running.__exit__(None, None, None)


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
