"""The same store against a real ChromaDB server (`chroma run`), through `CONCERTO_CHROMA_URL`."""

from __future__ import annotations

from pathlib import Path

import pytest

from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import KPIRecord
from concerto.packs.kpi.settings import KPISettings
from concerto.packs.kpi.store import KPIStore
from concerto.resources import Resources
from concerto.settings import Settings


@pytest.mark.slow
def test_store_on_a_chroma_server(chroma_server: str, tmp_path: Path, kpi_resources: Resources) -> None:
    settings = Settings(data_dir=tmp_path).using(KPISettings(chroma_url=chroma_server))
    store = KPIStore(settings, kpi_resources.embedder)
    assert store.location == chroma_server
    store.add(
        [KPIRecord("attrition-rate", "home-loan", Month(2025, m), 3.0 + m / 10, "%", f"m{m}") for m in range(1, 7)]
    )
    got = store.query("attrition-rate", "home-loan", Month(2025, 2), Month(2025, 4))
    assert [(r.month.month, r.value) for r in got] == [(2, 3.2), (3, 3.3), (4, 3.4)]
    assert not (tmp_path / "chroma").exists()  # nothing embedded was created
