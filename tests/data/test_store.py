"""Both stores: load, profile, query under the row cap and time limit, reload, drop, the demo."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from _helpers.data import write
from concerto.data.context import ProfileOverrides
from concerto.data.load import LoadError
from concerto.data.sources import choose
from concerto.data.store import DEMO, QueryFailed, SourceError, Store, source_name, valid_name

SALES = "id,region,amount,day\n" + "".join(
    f"{i},{['East', 'West', 'North'][i % 3]},{i * 1.5},2024-{1 + i % 12:02d}-01\n" for i in range(1, 121)
)


def test_load_profile_and_query(store: Store, tmp_path: Path) -> None:
    context = store.load(write(tmp_path, "sales.csv", SALES), "sales")
    assert (context.name, context.row_count, context.columns) == ("sales", 120, ["id", "region", "amount", "day"])
    roles = {c: p.role for c, p in context.detected_types.items()}
    assert roles == {"id": "id", "region": "category", "amount": "money", "day": "time"}
    assert context.semantic_profile.time_column == "day" and context.semantic_profile.entity_key == "id"
    assert context.field_mappings["amount"].target == '"amount"'
    result = store.query(context, "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region")
    totals = {r: sum(i * 1.5 for i in range(1, 121) if ["East", "West", "North"][i % 3] == r) for r in ("East", "West")}
    assert [row["region"] for row in result.data] == ["East", "North", "West"]
    assert result.data[0]["total"] == totals["East"] and result.data[2]["total"] == totals["West"]
    assert store.contexts()[0].name == "sales" and store.context("sales") == context


def test_rows_are_capped_and_the_cut_is_said(store: Store, tmp_path: Path) -> None:
    context = store.load(write(tmp_path, "sales.csv", SALES), "sales")
    capped = store.query(context, "SELECT id FROM sales ORDER BY id DESC")
    assert capped.row_count == 50 and capped.truncated and capped.data[0] == {"id": 120}
    small = store.query(context, "SELECT id FROM sales ORDER BY id LIMIT 3")
    assert [r["id"] for r in small.data] == [1, 2, 3] and not small.truncated


def test_a_slow_query_is_stopped_at_the_time_limit(store: Store, tmp_path: Path) -> None:
    context = store.load(write(tmp_path, "sales.csv", SALES), "sales")
    slow = (
        "SELECT count(*) AS n FROM sales a CROSS JOIN sales b CROSS JOIN sales c CROSS JOIN sales d CROSS JOIN sales e"
    )
    with pytest.raises(QueryFailed, match="did not finish within 2 s"):
        store.query(context, slow)


def test_reload_replaces_and_drop_removes(store: Store, tmp_path: Path) -> None:
    context = store.load(write(tmp_path, "sales.csv", SALES), "sales")
    again = store.load(write(tmp_path, "fewer.csv", "id,region\n1,East\n"), "sales")
    assert again.row_count == 1 and store.query(again, "SELECT count(*) AS n FROM sales").data == [{"n": 1}]
    store.drop("sales")
    with pytest.raises(SourceError, match="no data source named 'sales'"):
        store.context("sales")
    with pytest.raises(SourceError):
        store.query(context, "SELECT count(*) AS n FROM sales")  # dropped while a question was planned


def test_a_failed_load_leaves_the_existing_source_alone(store: Store, tmp_path: Path) -> None:
    store.load(write(tmp_path, "sales.csv", SALES), "sales")
    with pytest.raises(ValueError, match="line 3"):
        store.load(write(tmp_path, "bad.csv", "a,b\n1,2\n3\n"), "sales")
    assert store.context("sales").row_count == 120


def test_overrides_and_what_they_name(store: Store, tmp_path: Path) -> None:
    overrides = ProfileOverrides(
        domain="retail", entity_name="store", field_descriptions={"amount": "Takings in euros", "nope": "x"}
    )
    context = store.load(write(tmp_path, "sales.csv", SALES), "sales", overrides=overrides)
    assert context.semantic_profile.domain == "retail" and context.describe("amount") == "Takings in euros"
    assert any("no column 'nope'" in n for n in context.notes)


def test_the_demo_answers_on_a_fresh_install_and_yields_to_a_users_source(store: Store, tmp_path: Path) -> None:
    demo = choose(store)
    assert demo.name == DEMO and demo.row_count == 7200 and demo.semantic_profile.entity_key == "customer_id"
    mine = store.load(write(tmp_path, "sales.csv", SALES), "sales")
    assert choose(store) == mine and choose(store, "demo").name == DEMO
    store.load(write(tmp_path, "more.csv", SALES), "more")
    with pytest.raises(SourceError, match=r"several data sources are loaded \(sales, more\)"):
        choose(store)


def test_names(store: Store, tmp_path: Path) -> None:
    """A file's name is made into a source name; a chosen name is taken as it is or refused,
    never made into another (which would replace that other source's data)."""
    assert source_name("Q3 Sales (final)") == "q3_sales_final" and source_name("2024") == "t_2024"
    assert store.load(write(tmp_path, "q.csv", SALES), "q3_sales_final").name == "q3_sales_final"
    for chosen, suggested in [("../../x", "x"), ("../x", "x"), ("x;DROP TABLE demo", "x_drop_table_demo"), ("X", "x")]:
        with pytest.raises(SourceError, match=rf"'{re.escape(chosen)}' cannot name a source: use lower-case letters"):
            store.load(write(tmp_path, "x.csv", SALES), chosen)
        with pytest.raises(SourceError, match=rf"e\.g\. '{suggested}'$"):
            valid_name(chosen)
    for unusable in ("!!!", "x\n", "", "a" * 64):
        with pytest.raises(SourceError, match="cannot name a source"):
            valid_name(unusable)
    assert [c.name for c in store.contexts()] == ["q3_sales_final"]


def test_two_duckdb_stores_in_one_process_share_the_locked_file(tmp_path: Path) -> None:
    """DuckDB gives a second connection to the same file the first one's (locked) instance."""
    from concerto.data.duckdb_store import DuckDBStore

    first = DuckDBStore(tmp_path / "sources", row_cap=10, timeout_s=5, max_file_bytes=2**30)
    context = first.load(write(tmp_path, "sales.csv", SALES), "sales")
    rows = first.query(context, 'SELECT COUNT(*) AS n FROM "sales"').data
    second = DuckDBStore(tmp_path / "sources", row_cap=10, timeout_s=5, max_file_bytes=2**30)
    assert second.query(context, 'SELECT COUNT(*) AS n FROM "sales"').data == rows == [{"n": context.row_count}]
    with pytest.raises(duckdb.PermissionException):
        second._reader("sales").execute("SELECT * FROM read_csv('/etc/passwd')").fetchall()
    first.close()
    second.close()


def test_a_tiny_source_is_a_small_file(tmp_path: Path) -> None:
    """A 12-byte upload was a 536 KB database file (DuckDB's 256 KB blocks); small files get
    16 KB blocks. A large one keeps the default (measured: smaller and faster there)."""
    from concerto.data.duckdb_store import DuckDBStore

    store = DuckDBStore(tmp_path / "sources", row_cap=10, timeout_s=5, max_file_bytes=2**30)
    path = write(tmp_path, "tiny.csv", "a,b\n1,2\n3,4\n")
    assert path.stat().st_size == 12
    context = store.load(path, "tiny")
    assert (tmp_path / "sources" / "tiny.duckdb").stat().st_size < 64 * 1024
    assert store.query(context, 'SELECT sum(a + b) AS s FROM "tiny"').data == [{"s": 10}]
    assert store.load(path, "tiny").notes[-1].startswith("replaces the source 'tiny' loaded from tiny.csv at ")
    store.close()


def test_a_wide_table_loads_or_is_refused_with_the_reason(store: Store, tmp_path: Path) -> None:
    """2,000 columns: DuckDB takes them (profiled in a few queries, tests/data/test_profile.py);
    PostgreSQL allows 1,600 a table, and the message says so, without a server path."""
    header = ",".join(f"m_{n}" for n in range(2000))
    path = write(tmp_path, "wide.csv", header + "\n" + ",".join(str(n % 7) for n in range(2000)) + "\n")
    if store.dialect == "duckdb":
        assert len(store.load(path, "wide").columns) == 2000
        return
    with pytest.raises(LoadError, match=r"^wide\.csv could not be stored in PostgreSQL: .*1600 columns") as refused:
        store.load(path, "wide")
    assert str(tmp_path) not in str(refused.value)
