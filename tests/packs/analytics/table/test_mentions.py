"""The reader's mentions on their own: words, numbers with their comparisons, cells named in
part, and a reading's words accounted for (no store: a profile and values built here)."""

from __future__ import annotations

import pytest

from _helpers.tables import players as table
from concerto.packs.analytics.table.mentions import find_numbers, number_of, tokens
from concerto.packs.analytics.table.reader import read_table


def test_tokens_drop_accents_and_possessives() -> None:
    assert tokens("Côte d'Ivoire's 1,200 km") == ["cote", "d", "ivoire", "1,200", "km"]


@pytest.mark.parametrize(("token", "value"), [("1,200", 1200.0), ("46.8", 46.8), ("3rd", 3.0), ("twelve", 12.0)])
def test_numbers_as_written(token: str, value: float) -> None:
    assert number_of(token) == value


@pytest.mark.parametrize(
    ("question", "op", "kind"),
    [
        ("players with over 20 points", ">", "number"),
        ("players with 20 points or more", ">=", "number"),
        ("before the year 2001", "<", "year"),
        ("at least 5 points", ">=", "number"),
        ("between 5 and 30 points", "between", "number"),
    ],
)
def test_comparisons_around_numbers(question: str, op: str, kind: str) -> None:
    (found,) = [m for m in find_numbers(tokens(question), table()) if m.kind != "month"]
    assert (found.op, found.kind) == (op, kind)


def test_every_part_is_accounted_for() -> None:
    reading = read_table("how many players from France scored over 20 points after 1999?", table())
    assert reading.kind == "count"
    assert {c.text() for c in reading.conditions} == {"Nation = 'France'", "Points > 20", "Year > 1999"}
    assert not reading.conditions_missed


def test_a_number_no_column_fits_is_not_applied() -> None:
    reading = read_table("how many players from France have over 9000 followers?", table())
    assert [w.words for w in reading.conditions_missed] == ["over 9000"]
    assert reading.confidence < 0.6


def test_a_part_of_a_cell_is_read_as_written() -> None:
    reading = read_table("how many players are from ivoire?", table())
    assert [c.text() for c in reading.conditions] == ["Nation contains 'Ivoire'"]
