"""Cell text typed at load: each way people write numbers, durations and dates becomes a number
or a date, with what it was recorded; text that only looks like it stays text."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
import pytest

from _helpers.data import write
from concerto.data.cells import parsed_columns
from concerto.data.load import column_types, read_file


def loaded(tmp_path: Path, header: str, cells: list[str]) -> tuple[str, list[Any], list[str], Any]:
    """Load one column of `cells` (quoted CSV) beside a name column; its type, values, notes, record."""
    body = "".join(f'n{i},"{cell}"\n' for i, cell in enumerate(cells))
    con = duckdb.connect()
    notes = read_file(con, "t", write(tmp_path, "t.csv", f"name,{header}\n{body}"), max_bytes=2**30)
    values = [r[0] for r in con.execute(f'SELECT "{header}" FROM "t" ORDER BY name').fetchall()]
    return column_types(con, "t")[header], values, notes, parsed_columns(con, "t").get(header)


@pytest.mark.parametrize(
    ("cells", "sql_type", "values", "unit"),
    [
        (["1,234", "12,345,678", "7", "-1,000"], "BIGINT", [1234, 12345678, 7, -1000], None),
        (["$190,000", "$1,200.50", "$5", "n/a"], "DOUBLE", [190000.0, 1200.5, 5.0, None], "$"),
        (["€3.5", "€12"], "DOUBLE", [3.5, 12.0], "€"),
        (["12.5%", "3%", "100 %"], "DOUBLE", [12.5, 3.0, 100.0], "%"),
        (["17 years", "1 year", "40 years"], "BIGINT", [17, 1, 40], "year"),
        (["5 km", "0.5 km", "12 km"], "DOUBLE", [5.0, 0.5, 12.0], "km"),
        (["1st", "2nd", "3rd", "4th"], "BIGINT", [1, 2, 3, 4], "ordinal"),
        (["1,234[a]", "12*", "5†", "8 [note 2]"], "BIGINT", [1234, 12, 5, 8], None),
        (["—", "1,5", "2"], "VARCHAR", ["—", "1,5", "2"], None),  # "1,5" is not a thousands separator
    ],
    ids=["thousands", "currency", "euro", "percent", "years", "km", "ordinal", "footnotes", "not a number"],
)
def test_numbers_written_for_people(
    tmp_path: Path, cells: list[str], sql_type: str, values: list[Any], unit: str | None
) -> None:
    found_type, found, notes, record = loaded(tmp_path, "v", cells)
    assert (found_type, found) == (sql_type, values)
    if sql_type == "VARCHAR":
        assert record is None and notes == []
    else:
        assert record.kind == "number" and record.unit == unit
        assert notes and "'v'" in notes[0]


def test_durations_become_seconds(tmp_path: Path) -> None:
    found_type, found, _, record = loaded(tmp_path, "time", ["1:45.32", "2:01", "1:02:03", "—"])
    assert (found_type, found) == ("DOUBLE", [105.32, 121.0, 3723.0, None])
    assert (record.kind, record.unit) == ("duration", "seconds")


def test_clock_times_are_not_durations(tmp_path: Path) -> None:
    found_type, _, _, record = loaded(tmp_path, "kickoff", ["12:30", "15:00", "20:45", "—"])
    assert found_type == "VARCHAR" and record is None


def test_dates_in_the_common_formats(tmp_path: Path) -> None:
    cells = ["January 26, 1995", "26 Jan 1995", "1995-01-26", "Feb 3, 2001", "1995", "4 July 1776[a]"]
    found_type, found, _, record = loaded(tmp_path, "day", cells)
    assert found_type == "DATE" and record.kind == "date"
    d = dt.date
    assert found == [d(1995, 1, 26), d(1995, 1, 26), d(1995, 1, 26), d(2001, 2, 3), d(1995, 1, 1), d(1776, 7, 4)]


def test_nearly_every_value_is_enough_and_the_rest_is_said(tmp_path: Path) -> None:
    cells = [f"{n:,}" for n in range(1000, 10000, 1000)] + ["unknown", "about 5"]
    found_type, found, notes, record = loaded(tmp_path, "v", cells)
    assert found_type == "BIGINT" and found.count(None) == 2
    assert record.unparsed == 1 and record.unparsed_example == "about 5"
    assert "about 5" in notes[0]


@pytest.mark.parametrize(
    "cells",
    [
        ["007", "012", "103"],  # codes with leading zeros
        ["3 Doors Down", "Blink 182", "Widget"],  # names with numbers
        ["$5 million", "$3 million"],  # a scale word, not a unit
        ["5 km", "300 m", "2 km"],  # two units
        ["Smith", "Jones", "Brown"],
    ],
)
def test_text_stays_text(tmp_path: Path, cells: list[str]) -> None:
    found_type, found, notes, _ = loaded(tmp_path, "v", cells)
    assert (found_type, found, notes) == ("VARCHAR", cells, [])
