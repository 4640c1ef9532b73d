"""Profiling a loaded table: the statistics, samples and categories of every column, against a
plain query per column, on both ways of reading them (a short table unpivoted, a tall one
with an aggregate per column); and a wide table in a few queries, not one per column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from concerto.data import profile
from concerto.data.context import ProfileOverrides, jsonable
from concerto.data.load import read_file
from concerto.data.profile import profile_table

MIXED = """
CREATE TABLE "t" AS SELECT
    i AS id,
    ['a', 'b', 'c', NULL][1 + i % 4] AS "cat egory",
    i % 7 AS "value",
    CASE WHEN i % 3 = 0 THEN NULL ELSE i * 0.5 END AS amount,
    DATE '2024-01-01' + (i % 30)::INT AS day,
    i % 2 = 0 AS flag,
    repeat('long text ', 5) || (i % 3) AS notes,
    {'a': i % 4} AS st,
    [i % 3, 1] AS li,
    CASE WHEN i % 5 = 0 THEN NULL ELSE 'x' || (i % 11) END AS "name",
    'it''s' AS "quote'd",
    (i % 4)::DECIMAL(10, 2) AS price
FROM range(300) r(i)
"""


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def reference(con: duckdb.DuckDBPyConnection, column: str, sql_type: str, table: str = "t") -> dict[str, Any]:
    """What a column's profile must say, by the obvious query per statistic."""
    c, t = q(column), q(table)
    nested = sql_type.endswith("]") or sql_type.startswith("STRUCT")
    nulls, distinct, low, high = con.execute(
        f"SELECT count(*) - count({c}), {'NULL' if nested else f'count(DISTINCT {c})'}, "
        f"{'NULL' if nested else f'min({c})'}, {'NULL' if nested else f'max({c})'} FROM {t}"
    ).fetchall()[0]
    samples = con.execute(
        f"SELECT {c} FROM {t} WHERE {c} IS NOT NULL GROUP BY {c} ORDER BY count(*) DESC, {c} LIMIT 5"
    ).fetchall()
    values = con.execute(f"SELECT DISTINCT {c} FROM {t} WHERE {c} IS NOT NULL ORDER BY {c} LIMIT 50").fetchall()
    return {
        "nulls": nulls,
        "distinct": distinct or 0,
        "min": jsonable(low),
        "max": jsonable(high),
        "sample_values": [jsonable(r[0]) for r in samples],
        "values": [jsonable(r[0]) for r in values],
    }


@pytest.mark.parametrize("tall", [False, True], ids=["unpivoted", "aggregate per column"])
def test_every_statistic_matches_a_query_per_column(monkeypatch: pytest.MonkeyPatch, tall: bool) -> None:
    if tall:  # as a table of more than 50,000 rows is read
        monkeypatch.setattr(profile, "_SHORT_ROWS", 0)
    monkeypatch.setattr(profile, "_CELLS", 1000)  # groups of a few columns, as on a large table
    con = duckdb.connect()
    con.execute(MIXED)
    context = profile_table(con, "t", name="t", file_name="t.csv")
    for column, found in context.detected_types.items():
        expected = reference(con, column, found.type)
        assert (found.nulls, found.distinct, found.min, found.max) == (
            expected["nulls"],
            expected["distinct"],
            expected["min"],
            expected["max"],
        ), column
        assert found.sample_values == expected["sample_values"], column
        assert found.categories == (expected["values"] if found.role == "category" else []), column
    roles = {c: p.role for c, p in context.detected_types.items()}
    assert roles == {
        "id": "id",
        "cat egory": "category",
        "value": "measure",
        "amount": "money",
        "day": "time",
        "flag": "flag",
        "notes": "text",
        "st": "label",
        "li": "label",
        "name": "category",
        "quote'd": "category",
        "price": "money",
    }
    assert context.detected_types["amount"].mean == pytest.approx(
        con.execute('SELECT avg(amount) FROM "t"').fetchall()[0][0]
    )


class Counting:
    """A connection that counts the statements run on it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.statements = con, 0

    def execute(self, *args: Any) -> Any:
        self.statements += 1
        return self.con.execute(*args)


def test_a_wide_table_is_profiled_in_a_few_queries() -> None:
    """2,000 columns: about a dozen statements (it was three per column, and 10,000 columns
    took 137 s of a 140 s load)."""
    con = duckdb.connect()
    columns = ", ".join(f"(i * {n}) % 97 AS m_{n}" for n in range(2000))
    con.execute(f"CREATE TABLE \"wide\" AS SELECT {columns}, 'x' || (i % 3) AS kind FROM range(20) r(i)")
    counting = Counting(con)
    context = profile_table(counting, "wide", name="wide", file_name="wide.csv")  # type: ignore[arg-type]
    assert counting.statements <= 16
    assert len(context.columns) == 2001 and context.detected_types["kind"].categories == ["x0", "x1", "x2"]
    for column in ("m_0", "m_5", "m_1999"):
        assert context.detected_types[column].sample_values == reference(con, column, "BIGINT", "wide")["sample_values"]


def orders_csv(tmp_path: Path) -> Path:
    """The issue's orders.csv: 120 orders, amounts whole numbers from 10 to 299, all different."""
    amounts = [10 + (i * 149) % 290 for i in range(120)]  # 149 and 290 coprime: 120 different values
    assert len(set(amounts)) == 120
    regions, products = ("North", "South", "East"), ("A", "B")
    rows = "".join(f"{i + 1},{regions[i % 3]},{products[i % 2]},{a}\n" for i, a in enumerate(amounts))
    path = tmp_path / "orders.csv"
    path.write_text("order_id,region,product,amount\n" + rows)
    return path


def test_an_amount_whose_values_all_differ_is_a_measure_not_an_identifier(tmp_path: Path) -> None:
    con = duckdb.connect()
    read_file(con, "orders", orders_csv(tmp_path), max_bytes=2**30)
    context = profile_table(con, "orders", name="orders", file_name="orders.csv")
    types = context.detected_types
    assert types["amount"].role in ("money", "measure") and "amount" in types["amount"].role_reason
    assert types["order_id"].role == "id" and types["order_id"].role_reason == "named like an identifier"
    assert (types["order_id"].distinct, types["amount"].distinct) == (120, 120)  # exact, not ~121
    assert context.columns_with("measure", "money") == ["amount"]
    assert all(p.role_reason for p in types.values())


@pytest.mark.parametrize(
    ("name", "values", "role"),
    [
        ("points", [10 + (i * 7) % 97 for i in range(60)], "measure"),  # all different, not named an id
        ("no", list(range(1, 61)), "id"),  # named like a number, consecutive
        ("number", [7, 23, 9, 11] * 15, "measure"),  # jersey numbers: not consecutive, not fixed width
        ("code", [1000 + i * 3 for i in range(60)], "id"),  # fixed width
        ("calls", list(range(60)), "measure"),  # consecutive, but not named like a number or code
        ("year", [1990 + i % 30 for i in range(60)], "category"),
        ("sku_text", [f"S{i:04d}" for i in range(60)], "id"),  # fixed-width codes, one per row
        ("city", [f"City {i}" for i in range(60)], "label"),
    ],
)
def test_the_role_comes_from_name_type_and_values(name: str, values: list[Any], role: str) -> None:
    con = duckdb.connect()
    con.execute(f'CREATE TABLE "t" AS SELECT unnest($1) AS "{name}"', [values])
    found = profile_table(con, "t", name="t", file_name="t.csv").detected_types[name]
    assert found.role == role, found.role_reason
    assert found.role_reason


def test_the_unit_and_the_text_as_written_reach_the_profile(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text('name,salary,share\na,"$190,000",12.5%\nb,"$1,200",3%\nc,$5,100%\n')
    con = duckdb.connect()
    read_file(con, "p", path, max_bytes=2**30)
    types = profile_table(con, "p", name="p", file_name="p.csv").detected_types
    assert (types["salary"].role, types["salary"].unit, types["salary"].written_as) == ("money", "$", "$1,200")
    assert (types["share"].role, types["share"].unit) == ("measure", "%")
    assert "written with a currency" in types["salary"].role_reason


def test_the_user_corrects_a_kind_and_the_time_column_follows() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE \"t\" AS SELECT i AS id, 'x' || i AS stamp, i * 2 AS amount FROM range(20) r(i)")
    said = ProfileOverrides(kinds={"id": "measure", "stamp": "time", "nope": "id"})
    context = profile_table(con, "t", name="t", file_name="t.csv", overrides=said)
    found = context.detected_types["id"]
    assert found.role == "measure" and "set by the user" in found.role_reason
    assert context.semantic_profile.time_column == "stamp"
    assert context.semantic_profile.entity_key != "id"
    assert any("no column 'nope'" in note for note in context.notes)
