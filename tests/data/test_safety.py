"""SQL safety: the sqlglot check refuses every door, and the connection keeps it shut even
for a query that got past the check (tried on the real DuckDB and PostgreSQL connections)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _helpers.data import write
from concerto.data.safety import UnsafeQuery, check_query
from concerto.data.store import QueryFailed, Store

SCHEMA = {"sales": {"region": "VARCHAR", "amount": "DOUBLE", "day": "DATE", "Company Name": "VARCHAR"}}


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT * FROM sales; DROP TABLE sales", "exactly one statement"),
        ("DROP TABLE sales", "only a SELECT"),
        ("INSERT INTO sales VALUES ('x', 1, NULL, 'y')", "only a SELECT"),
        ("UPDATE sales SET amount = 0", "only a SELECT"),
        ("DELETE FROM sales", "only a SELECT"),
        ("CREATE TABLE t AS SELECT 1", "only a SELECT"),
        ("COPY sales TO '/tmp/out.csv'", "only a SELECT"),
        ("ATTACH 'other.duckdb' AS o", "only a SELECT"),
        ("INSTALL httpfs", "only a SELECT"),
        ("LOAD httpfs", "only a SELECT"),
        ("PRAGMA database_list", "only a SELECT"),
        ("SET enable_external_access = true", "only a SELECT"),
        ("EXPORT DATABASE '/tmp/x'", "not valid SQL"),
        ("SELECT * FROM read_csv('/etc/passwd')", "reading from READ_CSV"),
        ("SELECT * FROM read_parquet('x.parquet')", "reading from"),
        ("SELECT * FROM glob('/tmp/*')", "reading from GLOB"),
        ("SELECT * FROM query('SELECT 1')", "reading from QUERY"),
        ("SELECT * FROM '/etc/passwd'", "not this source's"),
        ("SELECT read_text('/etc/hostname')", "function read_text is not allowed"),
        ("SELECT pg_read_file('/etc/passwd')", "function pg_read_file is not allowed"),
        ("SELECT getenv('HOME')", "function getenv is not allowed"),
        ("SELECT region INTO t2 FROM sales", "INTO is not allowed"),
        ("SELECT region FROM sales FOR UPDATE", "LOCK is not allowed"),
        ("SELECT region FROM main.sales", "is qualified"),
        ("SELECT s.region FROM sales s JOIN other o ON s.region = o.region", "'other' is not this source's"),
        ("SELECT revenue FROM sales", "Column 'revenue' could not be resolved; the source's columns are region"),
        ("SELECT nonsense(", "not valid SQL"),
        ("", "exactly one statement is allowed, found 0"),
    ],
)
def test_every_door_is_refused_by_the_check(sql: str, reason: str) -> None:
    with pytest.raises(UnsafeQuery, match=reason.replace("(", r"\(")):
        check_query(sql, SCHEMA, dialect="duckdb")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY total DESC",
        "WITH m AS (SELECT DATE_TRUNC('month', day) AS month, SUM(amount) AS s FROM sales GROUP BY 1) SELECT * FROM m",
        'SELECT "Company Name", amount FROM sales WHERE amount > (SELECT AVG(amount) FROM sales)',
        "SELECT region, RANK() OVER (ORDER BY SUM(amount) DESC) AS r FROM sales GROUP BY region",
        "SELECT region FROM sales UNION SELECT region FROM sales",
        "SELECT quantile_cont(amount, 0.9), stddev(amount), skewness(amount) FROM sales",
    ],
)
def test_read_only_analysis_passes(sql: str) -> None:
    check_query(sql, SCHEMA, dialect="duckdb")


WRITES = [
    "CREATE TABLE stolen AS SELECT 1 AS x",
    "DROP TABLE t",
    "INSERT INTO t SELECT * FROM t",
]


@pytest.fixture
def loaded(store: Store, tmp_path: Path) -> tuple[Store, object]:
    context = store.load(write(tmp_path, "t.csv", "region,amount\nEast,1\nWest,2\n"), "t")
    return store, context


@pytest.mark.parametrize("sql", WRITES)
def test_the_connection_refuses_writes_that_got_past_the_check(loaded, sql: str) -> None:  # type: ignore[no-untyped-def]
    """`_run` is below the check: it proves the connection alone stops a write."""
    store, context = loaded
    with pytest.raises(QueryFailed):
        store._run(context, sql)
    assert store.query(context, "SELECT count(*) AS n FROM t").data == [{"n": 2}]  # the data are unchanged


def test_the_connection_refuses_files(loaded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, context = loaded
    out = tmp_path / "leak.csv"
    attempts = (
        [f"COPY t TO '{out}'", "SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM glob('/*')"]
        if store.dialect == "duckdb"
        else [f"COPY t TO '{out}'", "SELECT pg_read_file('/etc/passwd')", "SET ROLE postgres"]
    )
    for sql in attempts:
        with pytest.raises(QueryFailed):
            store._run(context, sql)
    assert not out.exists()
