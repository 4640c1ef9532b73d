"""The ChromaDB store and CSV ingestion: validation, line numbers, nothing half-written."""

from __future__ import annotations

from pathlib import Path

import pytest

from concerto.packs.kpi.demo import DEPARTMENTS, KPIS, demo_records
from concerto.packs.kpi.months import Month
from concerto.packs.kpi.records import CSVError, KPIRecord, read_csv, write_csv
from concerto.packs.kpi.store import KPIStore

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
