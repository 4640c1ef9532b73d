"""The ChromaDB store and CSV ingestion: validation, line numbers, nothing half-written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _helpers.kpi import NOW
from concerto.agents.loader import load_registry
from concerto.contracts.orchestrator import OrchestratorOutput
from concerto.orchestrator.engine import Orchestrator
from concerto.packs.kpi.demo import DEPARTMENTS, KPIS, demo_records
from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import CSVError, KPIRecord, read_csv, write_csv
from concerto.packs.kpi.store import KPIStore, get_store
from concerto.resources import Resources
from concerto.settings import Settings

GOOD = """kpi,department,month,value,unit,notes
attrition-rate,home-loan,2025-05,4.1,%,Spring resignations
attrition-rate,home-loan,2025-06-01,4.3,%,
headcount,home-loan,2025-05,120,employees,"Hiring, slower than planned"
"""


def test_demo_data_shape() -> None:
    records = demo_records()
    assert len(DEPARTMENTS) >= 6 and len(KPIS) >= 8 and "home-loan" in DEPARTMENTS
    assert {r.month for r in records} == {Month(2023, 1).shift(i) for i in range(48)}
    assert len(records) == len(DEPARTMENTS) * len(KPIS) * 48
    assert all(0 <= r.value <= 100 for r in records if r.unit == "%")
    assert demo_records() == records  # deterministic


def test_demo_loaded_on_first_use(store: KPIStore) -> None:
    catalog = store.catalog()
    assert set(catalog.names("department")) == set(DEPARTMENTS)
    assert catalog.units["attrition-rate"] == "%"
    assert store.span("attrition-rate", "home-loan") == (Month(2023, 1), Month(2026, 12))


def test_query_filters_kpi_department_and_inclusive_months(store: KPIStore) -> None:
    got = store.query("revenue", "credit-card", Month(2024, 11), Month(2025, 2))
    assert [r.month for r in got] == [Month(2024, 11), Month(2024, 12), Month(2025, 1), Month(2025, 2)]
    assert {(r.kpi, r.department) for r in got} == {("revenue", "credit-card")}
    assert store.query("revenue", "nowhere", Month(2024, 1), Month(2024, 2)) == []


def test_load_csv_merges_and_replaces(tmp_path: Path, fresh_store: KPIStore) -> None:
    path = tmp_path / "k.csv"
    path.write_text(GOOD)
    assert fresh_store.add(read_csv(path)) == 3
    fresh_store.add([KPIRecord("attrition-rate", "home-loan", Month(2025, 5), 4.2, "%", "fixed")])
    got = fresh_store.query("attrition-rate", "home-loan", Month(2025, 1), Month(2025, 12))
    assert [(r.month, r.value, r.notes) for r in got] == [(Month(2025, 5), 4.2, "fixed"), (Month(2025, 6), 4.3, "")]
    headcount = fresh_store.query("headcount", "home-loan", Month(2025, 5), Month(2025, 5))
    assert headcount[0].notes == "Hiring, slower than planned"
    assert fresh_store.catalog().units == {"attrition-rate": "%", "headcount": "employees"}


def test_csv_round_trip(tmp_path: Path) -> None:
    records = demo_records()[:100]
    write_csv(tmp_path / "d.csv", records)
    assert read_csv(tmp_path / "d.csv") == records


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("kpi,department,month,value\nattrition-rate,home-loan,2025-05,4.1\n", 1, "missing column(s): unit"),
        ("department,month,value,unit\nhome-loan,2025-05,4.1,%\n", 1, "kpi"),
        (GOOD + "attrition-rate,home-loan,2025-07,high,%,x\n", 5, "'high' is not a number"),
        (GOOD + "attrition-rate,home-loan,2025-07,nan,%,x\n", 5, "not a finite number"),
        (GOOD + "attrition-rate,home-loan,2025-13,4,%,x\n", 5, "month must be 01..12"),
        (GOOD + "attrition-rate,home-loan,2025-02-30,4,%,x\n", 5, "day must be 01..28"),
        (GOOD + "attrition-rate,Home Loan,2025-07,4,%,x\n", 5, "department 'Home Loan'"),
        (GOOD + "attrition-rate,home-loan,2025-07,4,ratio,x\n", 5, "unit 'ratio' differs"),
        (GOOD + "attrition-rate,home-loan,2025-07\n", 5, "expected 6 fields, found 3"),
    ],
)
def test_bad_csv_reports_the_line_and_writes_nothing(
    tmp_path: Path, fresh_store: KPIStore, body: str, line: int, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(CSVError) as info:
        read_csv(path)
    assert info.value.errors[0][0] == line
    assert message in info.value.errors[0][1]
    assert "nothing was loaded" in str(info.value)
    assert fresh_store.count_entries() == 0


def test_unit_must_match_the_store(tmp_path: Path) -> None:
    path = tmp_path / "k.csv"
    path.write_text(GOOD)
    with pytest.raises(CSVError, match="differs"):
        read_csv(path, known_units={"attrition-rate": "ratio"})


HEADCOUNT = "kpi-headcount department-home-loan month-2025-05-01"
CONTRACTORS = "kpi,department,month,value,unit,notes\n" + "".join(
    f"contractor-headcount,home-loan,2025-{m:02d},{10 + m},people,\n" for m in range(1, 6)
)


async def test_a_running_orchestrator_sees_kpis_loaded_by_another_process(
    tmp_path: Path, kpi_resources: Resources
) -> None:
    """`concerto kpi load` in a subprocess while an orchestrator answers in this one: the next
    question finds the new KPI (before, the cached catalog answered it with `headcount`)."""
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    resources = Resources(settings)
    resources.put("embedder", kpi_resources.embedder)
    get_store(settings, resources).add(
        [KPIRecord("headcount", "home-loan", Month(2025, m), 100 + m, "employees") for m in range(1, 6)]
    )

    async def asked(question: str) -> str:
        result = await orch.ask(question, now=NOW)
        assert isinstance(result, OrchestratorOutput), result
        return str(result.agent_results[0].output["structured_query"])

    async with Orchestrator(settings, registry=load_registry(), resources=resources) as orch:
        assert await asked("headcount of home-loan in May 2025") == HEADCOUNT
        csv = tmp_path / "contractors.csv"
        csv.write_text(CONTRACTORS, encoding="utf-8")
        loaded = subprocess.run(
            [sys.executable, "-c", "from concerto.cli import main; main()", "kpi", "load", str(csv)],
            env={**os.environ, "CONCERTO_DATA_DIR": str(data)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert loaded.returncode == 0, loaded.stderr
        assert await asked("contractor-headcount of home-loan in May 2025") == (
            "kpi-contractor-headcount department-home-loan month-2025-05-01"
        )
        assert await asked("headcount of home-loan in May 2025") == HEADCOUNT


def test_the_catalog_is_checked_with_a_stat_not_a_store_read(store: KPIStore) -> None:
    """Noticing other processes' writes costs microseconds per question, not a ChromaDB read."""
    catalog = store.catalog()
    calls = 2000
    started = time.perf_counter()
    for _ in range(calls):
        assert store.catalog() is catalog
    assert (time.perf_counter() - started) / calls < 0.001
