"""The KPI demo records are declared as first-use work (`Agent.first_use`) for an empty embedded
store, so the orchestrator loads them before the KPI agent's task, outside its timeout."""

from __future__ import annotations

from pathlib import Path

from concerto.packs.kpi.agent import KPIAgent
from concerto.packs.kpi.settings import KPISettings
from concerto.resources import Resources
from concerto.settings import Settings


def test_the_demo_records_until_the_store_holds_data(tmp_path: Path, kpi_resources: Resources) -> None:
    settings = Settings(data_dir=tmp_path)
    resources = Resources(settings)
    resources.put("embedder", kpi_resources.embedder)
    agent = KPIAgent(settings, resources)
    work = agent.first_use()
    assert work is not None and (work.key, work.title) == ("kpi.demo", "the KPI demo records")
    work.run()
    assert agent.first_use() is None


def test_never_for_a_chromadb_server(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path).using(KPISettings(chroma_url="http://127.0.0.1:1"))
    assert KPIAgent(settings, Resources(settings)).first_use() is None  # its data is the user's
