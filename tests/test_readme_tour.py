"""The README's tour runs after its two commands: the sample files it names ship in examples/
and load, `demo.sh` installs the extras the tour uses, and `test.sh` says why a test skipped."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from concerto.data.duckdb_store import DuckDBStore
from concerto.packs.kpi.records import CSVFile

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_sample_file_the_tour_names_ships_and_is_described() -> None:
    named = set(re.findall(r"examples/([\w.]+\.csv)", README))
    assert named == {"sales.csv", "my_kpis.csv", "jtrain3.csv"}
    described = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    for name in named:
        assert (ROOT / "examples" / name).stat().st_size < 200_000, name  # small
        assert f"`{name}`" in described, f"examples/README.md says nothing of {name} (origin, licence)"
    assert not re.search(r"[ @](sales|my_kpis|jtrain3)\.csv", README), "a tour line names a file outside examples/"


def test_the_sample_tables_load(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "sources", row_cap=50, timeout_s=5.0, max_file_bytes=2**30)
    try:
        sales = store.load(ROOT / "examples" / "sales.csv", "sales")
        assert sales.row_count == 44 and {"region", "amount"} <= set(sales.columns)
        jtrain3 = store.load(ROOT / "examples" / "jtrain3.csv", "jtrain3")
        assert jtrain3.row_count == 2675 and {"train", "re78"} <= set(jtrain3.columns)
    finally:
        store.close()
    kpis = CSVFile(ROOT / "examples" / "my_kpis.csv").validate()
    assert kpis.records == 18 and kpis.units == {"contractor-headcount": "people"}


def test_demo_sh_installs_the_extras_the_tour_uses() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(r.startswith("a2a-sdk") for r in extras["a2a"]) and any(r.startswith("openai") for r in extras["tour"])
    assert "concerto[a2a]" in extras["tour"]  # the a2a extra itself, not a copy of its list (pip reads it)
    assert "bash scripts/setup.sh tour\n" in (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    assert "pip install -e '.[ray]'" in README  # the one extra the tour names instead (240 MB), from the checkout


def test_test_sh_prints_the_reason_of_every_skip() -> None:
    pytest_line = next(line for line in (ROOT / "scripts" / "test.sh").read_text().splitlines() if "-m pytest" in line)
    assert " -rfEs " in pytest_line  # failures and errors listed too: -r replaces the default
