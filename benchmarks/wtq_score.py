"""WikiTableQuestions' official scoring rules (`../shared/wtq/evaluator.py`, Python 2), in Python 3.

Written from the evaluator's rules, not copied:

- A value is a number (compared by value, within 1e-6), a date (compared by its year, month and
  day, any of them possibly unknown) or a string (compared after `normalize`).
- A prediction is correct when, after removing duplicates, it has as many values as the gold
  answer and every gold value matches one of the predicted values.
- A gold value matches a predicted one when their normalised strings are equal, or both are
  numbers of the same value, or both are dates with the same three fields.

The official evaluator takes each gold value's number or date from CoreNLP's tagging of the
dataset (`targetCanon`), which `../shared/wtq` does not ship. `gold_value` stands in for it with
the two cases that tagging covers most often: plain numbers with thousands separators
("12,467" is 12467) and dates written in words ("January 26, 1995" is 1995-01-26, "May 2010" is
2010-05-xx, a year alone is a number). Money and percentages stay strings (they match a
prediction written the same way, not a bare number): stricter than CoreNLP, never looser.

Predicted values are read as the evaluator reads a prediction file: a JSON number is a number;
a string that `int`/`float` parse is a number; "yyyy-mm-dd" (with "xx" for an unknown field) is
a date; anything else is a string.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from concerto.nlp.periods import MONTHS

_CITATION = re.compile(r"((?<!^)\[[^\]]*\]|\[\d+\]|[•♦†‡*#+])*$")
_PARENTHESIS = re.compile(r"(?<!^)( \([^)]*\))*$")
_QUOTED = re.compile(r'^"([^"]*)"$')


def normalize(text: str) -> str:
    """The evaluator's string normalisation: accents removed, smart quotes and dashes made ASCII,
    trailing citations ("[1]", "†", "*") and parenthesised details removed, outer quotes and a
    final period dropped, white space collapsed, lower case."""
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) != "Mn")
    text = re.sub("[‘’´`]", "'", text)
    text = re.sub("[“”]", '"', text)
    text = re.sub("[‐‑‒–—−]", "-", text)
    while True:
        before = text
        text = _CITATION.sub("", text.strip())
        text = _PARENTHESIS.sub("", text.strip())
        text = _QUOTED.sub(r"\1", text.strip())
        if text == before:
            break
    if text.endswith("."):
        text = text[:-1]
    return re.sub(r"\s+", " ", text).lower().strip()


@dataclass(frozen=True)
class Value:
    """One value of an answer. Equality (for removing duplicates) is by `key`; `matches` is the
    evaluator's looser comparison of a gold value with a predicted one."""

    key: tuple[Any, ...]
    normalized: str = field(compare=False)

    def matches(self, other: Value) -> bool:
        if self.normalized == other.normalized:
            return True
        kind, *rest = self.key
        other_kind, *other_rest = other.key
        if kind != other_kind or kind == "s":
            return False
        if kind == "n":
            return abs(rest[0] - other_rest[0]) < 1e-6
        return rest == other_rest


def number(amount: float, original: str | None = None) -> Value:
    """A number; `original` is how it was written (its normalised form also matches)."""
    if abs(amount - round(amount)) < 1e-6:
        amount = round(amount)
    return Value(("n", amount), normalize(original) if original else str(amount))


def date(year: int, month: int, day: int, original: str | None = None) -> Value:
    """A date; -1 marks an unknown field. A year alone is a number, as in the evaluator."""
    if month == day == -1:
        return number(year, original)
    shown = "-".join("xx" if v == -1 else str(v) for v in (year, month, day))
    return Value(("d", year, month, day), normalize(original) if original else shown)


def string(text: str) -> Value:
    return Value(("s", normalize(text)), normalize(text))


def parse_number(text: str) -> float | None:
    """What the evaluator's `int()`/`float()` accept (Python 3's underscores excepted), finite."""
    if "_" in text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        amount = float(text)
    except ValueError:
        return None
    return amount if not (math.isnan(amount) or math.isinf(amount)) else None


def parse_iso_date(text: str) -> tuple[int, int, int] | None:
    """ "yyyy-mm-dd" with "xx" (or "xxxx" for the year) for unknown fields, as the evaluator reads."""
    parts = text.lower().split("-")
    if len(parts) != 3:
        return None
    try:
        year = -1 if parts[0] in ("xx", "xxxx") else int(parts[0])
        month = -1 if parts[1] == "xx" else int(parts[1])
        day = -1 if parts[2] == "xx" else int(parts[2])
    except ValueError:
        return None
    if year == month == day == -1 or not (month == -1 or 1 <= month <= 12) or not (day == -1 or 1 <= day <= 31):
        return None
    return year, month, day


def predicted_value(item: Any) -> Value:
    """A value of `answer_values` read as the evaluator reads a prediction."""
    if isinstance(item, bool):  # JSON true/false: written out as text, matching no number
        return string(str(item).lower())
    if isinstance(item, int | float) and math.isfinite(item):
        return number(item)
    text = "" if item is None else str(item)
    amount = parse_number(text)
    if amount is not None:
        return number(amount, text)
    ymd = parse_iso_date(text)
    if ymd is not None:
        return date(*ymd, original=text)
    return string(text)


_MONTHS = MONTHS  # English month names and their short forms (the product's own table: data, not a rule)
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_GROUPED = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$")
_WORD_DATES = [
    re.compile(rf"^{_MONTH} (?P<day>\d{{1,2}}),? (?P<year>\d{{3,4}})$"),  # January 26, 1995
    re.compile(rf"^(?P<day>\d{{1,2}}) {_MONTH},? (?P<year>\d{{3,4}})$"),  # 26 January 1995
    re.compile(rf"^{_MONTH},? (?P<year>\d{{3,4}})$"),  # May 2010
    re.compile(rf"^{_MONTH} (?P<day>\d{{1,2}})$"),  # May 5
    re.compile(rf"^(?P<day>\d{{1,2}}) {_MONTH}$"),  # 5 May
]


def gold_value(raw: str) -> Value:
    """A gold answer's value, standing in for CoreNLP's `targetCanon` (see the module's note)."""
    text = raw.strip()
    amount = parse_number(text)
    if amount is None and _GROUPED.match(text):
        amount = parse_number(text.replace(",", ""))
    if amount is not None:
        return number(amount, raw)
    ymd = parse_iso_date(text)
    if ymd is None:
        ymd = _word_date(text)
    if ymd is not None:
        return date(*ymd, original=raw)
    return string(raw)


def _word_date(text: str) -> tuple[int, int, int] | None:
    lowered = text.lower()
    for pattern in _WORD_DATES:
        m = pattern.match(lowered)
        if m is None:
            continue
        found = m.groupdict()
        day = int(found["day"]) if found.get("day") else -1
        if not 1 <= day <= 31 and day != -1:
            return None
        year = int(found["year"]) if found.get("year") else -1
        return year, _MONTHS[found["month"]], day
    return None


def unescape(text: str) -> str:
    """The dataset's TSV escapes: `\\n` newline, `\\p` vertical bar, `\\\\` backslash."""
    return text.replace(r"\n", "\n").replace(r"\p", "|").replace("\\\\", "\\")


def gold_values(target: str) -> list[str]:
    """The gold answer column (`targetValue`): values separated by `|`, unescaped."""
    return [unescape(part) for part in target.split("|")]


def _distinct(values: list[Value]) -> list[Value]:
    return list(dict.fromkeys(values))


def correct(gold: list[str], predicted: list[Any] | None) -> bool:
    """The official check: same number of distinct values, every gold value matched."""
    if predicted is None:
        return False
    targets = _distinct([gold_value(g) for g in gold])
    answers = _distinct([predicted_value(p) for p in predicted])
    if len(targets) != len(answers):
        return False
    return all(any(t.matches(p) for p in answers) for t in targets)


_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?")


def contained_in(gold: list[str], text: str) -> bool:
    """Whether every gold value appears somewhere in `text` (the answer's prose): its normalised
    string as whole words, or, for a number, a number of the same value written in the text.
    A looser measure than `correct`: the issue's "contain the right answer somewhere"."""
    flat = normalize(text.replace("\n", " "))
    numbers: set[float] = set()
    for token in _NUMBER_IN_TEXT.findall(text):
        amount = parse_number(token.replace(",", "")) if _GROUPED.match(token) or "," not in token else None
        if amount is not None:
            numbers.add(round(float(amount), 6))
    for raw in gold:
        value = gold_value(raw)
        if value.normalized and re.search(rf"(?<!\w){re.escape(value.normalized)}(?!\w)", flat):
            continue
        if value.key[0] == "n" and round(float(value.key[1]), 6) in numbers:
            continue
        return False
    return True
