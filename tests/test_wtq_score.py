"""The WikiTableQuestions scorer (`benchmarks/wtq_score.py`) on cases from the official
evaluator's rules (`../shared/wtq/evaluator.py`'s docstring)."""

from __future__ import annotations

import pytest

from benchmarks.wtq_score import contained_in, correct, gold_values, normalize


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Café", "cafe"),  # diacritics removed
        ("Ärzte", "arzte"),
        ("‘Hello’", "'hello'"),  # smart quotes made ASCII
        ("“Hi”", "hi"),  # ... then the outermost quotation marks removed
        ("1990–1995", "1990-1995"),  # dashes made ASCII
        ("Paris[1]", "paris"),  # citations removed
        ("Paris†", "paris"),
        ("Paris*", "paris"),
        ("Paris (France)", "paris"),  # a trailing parenthesis removed
        ("Paris (France) [2]", "paris"),  # repeatedly
        ("St.", "st"),  # a final period removed
        ("  New   York ", "new york"),  # white space collapsed
        ("NEW YORK", "new york"),
        ("(1990)", "(1990)"),  # a parenthesis that is the whole text stays
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_numbers_compare_by_value() -> None:
    assert correct(["1,234"], [1234])
    assert correct(["1,234"], ["1234"])
    assert correct(["1,234"], ["1,234"])  # the same string
    assert correct(["12"], [12.0])
    assert correct(["2.5"], [2.5000000001])
    assert not correct(["12"], [13])
    assert not correct(["1,234"], [1.234])


def test_dates_compare_by_fields() -> None:
    assert correct(["January 26, 1995"], ["1995-01-26"])
    assert correct(["26 January 1995"], ["1995-01-26"])
    assert correct(["May 2010"], ["2010-05-xx"])
    assert not correct(["May 2010"], ["2010-05-01"])  # an unknown day is not day 1
    assert not correct(["January 26, 1995"], ["1995-01-27"])
    assert not correct(["January 12"], ["1990-01-12"])  # xx-01-12 and 1990-01-12 differ
    assert correct(["January 12"], ["xx-01-12"])


def test_a_year_alone_is_a_number() -> None:
    assert correct(["1995"], [1995])
    assert correct(["1995"], ["1995-xx-xx"])


def test_strings_after_normalising() -> None:
    assert correct(["Wolfe Tones"], ["wolfe tones"])
    assert correct(["José Martí"], ["Jose Marti"])
    assert correct(["Gold Coast (Queensland)"], ["Gold Coast"])
    assert not correct(["Wolfe Tones"], ["Wolfe Tone"])


def test_list_sizes_must_agree() -> None:
    gold = gold_values("Siim Ennemuist|Andri Aganits")
    assert gold == ["Siim Ennemuist", "Andri Aganits"]
    assert correct(gold, ["Andri Aganits", "Siim Ennemuist"])  # order does not matter
    assert not correct(gold, ["Siim Ennemuist"])  # too few
    assert not correct(gold, ["Siim Ennemuist", "Andri Aganits", "Kreek"])  # too many
    assert not correct(["3"], [3, 4])
    assert correct(["3"], [3, 3.0])  # duplicates count once


def test_missing_answer_values_are_wrong() -> None:
    assert not correct(["3"], None)
    assert not correct(["3"], [])


def test_true_and_false_are_not_numbers() -> None:
    assert not correct(["1"], [True])


def test_tsv_escapes() -> None:
    assert gold_values(r"a\pb|c") == ["a|b", "c"]


def test_contained_in_text() -> None:
    assert contained_in(["12,467"], "Passengers differ by 12467 between the two.")
    assert contained_in(["12467"], "The difference is 12,467 passengers.")
    assert contained_in(["Wolfe Tones"], "The team before Crettyard was Wolfe Tones (2005).")
    assert not contained_in(["Wolfe Tones"], "Orders: 120.")
    assert not contained_in(["12"], "There are 120 rows.")  # not part of another number
    assert contained_in(["Siim Ennemuist", "Andri Aganits"], "Siim Ennemuist and Andri Aganits")
    assert not contained_in(["Siim Ennemuist", "Andri Aganits"], "Siim Ennemuist only")
