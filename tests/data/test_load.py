"""Reading files into tables: every format, and every malformed file refused with what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from _helpers.data import write
from concerto.data.load import LoadError, read_file

SALES = 'id,region,amount,day\n1,East,10.5,2024-01-02\n2,West,,2024-02-03\n3,"North, upper",7,2024-03-04\n'


def load(path: Path, max_bytes: int = 2**30) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    con = duckdb.connect()
    notes = read_file(con, "t", path, max_bytes=max_bytes)
    return con, notes


def columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute('DESCRIBE "t"').fetchall()]


def test_csv_is_typed_by_duckdb(tmp_path: Path) -> None:
    con, notes = load(write(tmp_path, "s.csv", SALES))
    assert columns(con) == [("id", "BIGINT"), ("region", "VARCHAR"), ("amount", "DOUBLE"), ("day", "DATE")]
    assert con.execute('SELECT region FROM "t" WHERE id = 3').fetchall() == [("North, upper",)]
    assert notes == []


def test_semicolons_tabs_parquet_json_and_excel(tmp_path: Path) -> None:
    con, _ = load(write(tmp_path, "s.csv", SALES.replace(",", ";").replace('"North; upper"', '"North, upper"')))
    assert [c for c, _ in columns(con)] == ["id", "region", "amount", "day"]
    con, _ = load(write(tmp_path, "s.tsv", SALES.replace(",", "\t").replace('"North\t upper"', "North upper")))
    assert con.execute('SELECT count(*) FROM "t"').fetchall() == [(3,)]
    rows = [{"id": 1, "name": "a", "score": 1.5}, {"id": 2, "name": "b", "score": None}]
    con, _ = load(write(tmp_path, "s.json", json.dumps(rows)))
    assert columns(con) == [("id", "BIGINT"), ("name", "VARCHAR"), ("score", "DOUBLE")]
    con, _ = load(write(tmp_path, "s.jsonl", "\n".join(json.dumps(r) for r in rows)))
    assert con.execute('SELECT count(*) FROM "t"').fetchall() == [(2,)]
    duckdb.connect().execute(f"COPY (SELECT 1 AS a, 'x' AS b) TO '{tmp_path / 's.parquet'}'")
    con, _ = load(tmp_path / "s.parquet")
    assert columns(con) == [("a", "INTEGER"), ("b", "VARCHAR")]
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in (["name", "units", "when"], ["a", 3, "2024-01-01"], ["b", 5, "2024-02-01"]):
        sheet.append(row)
    book.save(tmp_path / "s.xlsx")
    con, _ = load(tmp_path / "s.xlsx")
    assert con.execute('SELECT name, units FROM "t" ORDER BY name').fetchall() == [("a", 3.0), ("b", 5.0)]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", "", "is empty"),
        ("header.csv", "a,b\n", "has a header but no data rows"),
        ("short.csv", "a,b,c\n1,2,3\n4,5\n", "line 3 has 2 field(s), the header has 3"),
        ("long.csv", "a,b,c\n1,2,3\n4,5,6,7\n", "line 3 has 4 field(s), the header has 3"),
        ("latin.csv", "name,city\nJos\xe9,M\xe1laga\n".encode("latin-1"), "is not UTF-8 text (line 2)"),
        ("notes.docx", "x", "unsupported file type '.docx'"),
        ("broken.json", "{not json", "could not be loaded as JSON"),
        ("broken.parquet", "not parquet at all", "could not be loaded as PARQUET"),
        ("broken.xlsx", "not a workbook", "could not be read as an Excel workbook"),
        ("cr.csv", b"\r\x00\r\n", "line 2 has 1 field(s), the header has 0"),  # was csv.Error: a 500 on upload
    ],
)
def test_bad_files_are_refused_with_the_reason(tmp_path: Path, name: str, content: str | bytes, message: str) -> None:
    with pytest.raises(LoadError, match=message.replace("(", r"\(").replace(")", r"\)")) as refused:
        load(write(tmp_path, name, content))
    assert str(tmp_path.parent) not in str(refused.value), "a client of the server sees it: no server paths"


def test_no_server_path_in_any_message(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as missing:
        load(tmp_path / "gone.csv")
    assert str(missing.value) == "gone.csv: no such file"


def test_lines_ended_by_a_lone_cr_are_lines(tmp_path: Path) -> None:
    """Old Mac files end lines with CR alone: the header is read as the csv module reads files."""
    con, _ = load(write(tmp_path, "mac.csv", b"region,amount\rNorth,10\rSouth,20\r"))
    assert con.execute('SELECT * FROM "t" ORDER BY region').fetchall() == [("North", 10), ("South", 20)]


def test_too_large_is_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match=r"is 0 MB; the limit is 0 MB \(CONCERTO_DATA_MAX_FILE_MB\)"):
        load(write(tmp_path, "s.csv", SALES), max_bytes=10)


def test_repeated_blank_and_sql_like_names(tmp_path: Path) -> None:
    con, notes = load(write(tmp_path, "s.csv", 'a,a,,select,"""; drop table x; --"\n1,2,3,4,5\n'))
    assert [c for c, _ in columns(con)] == ["a", "a_1", "column2", "select", '"; drop table x; --']
    assert notes == [
        "column 2 'a' is called 'a_1' (the name was repeated)",
        "column 3 has no name in the file; it is called 'column2'",
    ]


def test_a_large_file_streams_with_progress(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    duckdb.connect().execute(
        f"COPY (SELECT i AS id, i % 7 AS k, random() AS v FROM range(2000000) t(i)) TO '{path}' (HEADER)"
    )
    seen: list[float] = []
    con = duckdb.connect()
    read_file(con, "t", path, max_bytes=2**31, progress=seen.append)
    assert con.execute('SELECT count(*) FROM "t"').fetchall() == [(2000000,)]
    assert seen and seen[-1] == 100.0
