"""What a question names of one table: columns, cell values, numbers with their comparisons,
years and months, each with the span of words it was read from.

Everything is found against the table itself: a column is named when the words of its name
are in the question (up to plurals and typos); a value when the words of a cell are (the
whole cell, or a distinctive part of a longer one); a number is placed on the column named
beside it, else on the one whose values hold it. The small vocabularies here are grammar
(what "at least" or "before" means), never names of data.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal, cast

from concerto.contracts.reading import Op
from concerto.data.context import DataContext
from concerto.nlp.numbers import word_number
from concerto.nlp.periods import MONTHS
from concerto.nlp.terms import NEAR, stem, word_score

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*(?:st|nd|rd|th)?|[^\W\d_]+", re.U)
STOP = frozenset(
    """a an the of in on at to for from by with and or is are was were be been being do does did has have had
    what which who whom whose when where how many much that this these those it its as than then there their
    they he she his her him i you we our your me my us not no""".split()
)
# Words too general to name a cell on their own (a cell "Total" or "Other" is named only in full).
_WEAK = STOP | frozenset(
    """total number numbers first last other others more most less least one two three year years time times
    all each every after before next previous same only team teams game games name names""".split()
)
TEXT_TYPES = ("VARCHAR", "TEXT", "CHAR", "STRING")
_PART_CELL_WORDS = 8  # longer cells (notes, descriptions) are not named by a part of them


def tokens(text: str) -> list[str]:
    """Lower-case words and numbers of `text`, accents removed, a possessive 's dropped
    ("Japan's 1,200 km" → ["japan", "1,200", "km"])."""
    plain = unicodedata.normalize("NFKD", text.replace("’", "'").lower())
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch))
    plain = re.sub(r"'s\b", "", plain)
    return _TOKEN.findall(plain)


def number_of(token: str) -> float | None:
    """The number a token writes ("1,200", "46.8", "3rd", "twelve"), else None."""
    digits = re.fullmatch(r"(\d+(?:[.,]\d+)*)(?:st|nd|rd|th)?", token)
    if digits:
        text = digits.group(1)
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+", text):
            text = text.replace(",", "")
        try:
            return float(text.replace(",", "."))
        except ValueError:
            return None
    found = word_number(token)
    return float(found) if found is not None else None


MentionKind = Literal["column", "value", "number", "year", "month", "date"]


@dataclass
class Mention:
    """One thing the question names, and the span of its tokens [start, end)."""

    kind: MentionKind
    start: int
    end: int
    column: str = ""  # "" until a number is placed on a column
    value: object = None
    score: float = 1.0
    exact: bool = True  # a value: the whole cell (False: a part of a longer cell)
    op: Op = "="
    op_start: int | None = None  # where the comparison's words start (numbers, years)
    high: object = None  # between: the upper bound
    candidates: list[str] = field(default_factory=list)  # numbers: the columns it could be on

    @property
    def span(self) -> range:
        return range(self.op_start if self.op_start is not None else self.start, self.end)

    def words(self, toks: list[str]) -> str:
        return " ".join(toks[i] for i in self.span)


@dataclass
class Table:
    """The table as the reader sees it: its profile and the distinct values of its columns."""

    context: DataContext
    values: dict[str, list[object]]
    cache: dict[str, float] = field(default_factory=dict)  # what is read once from the values (names_share)

    def is_text(self, column: str) -> bool:
        return self.context.detected_types[column].type.upper().startswith(TEXT_TYPES)

    def is_number(self, column: str) -> bool:
        kind = self.context.detected_types[column].type.upper()
        return kind.startswith(
            ("BIGINT", "INT", "DOUBLE", "DECIMAL", "FLOAT", "REAL", "SMALLINT", "HUGEINT", "TINYINT")
        )

    def is_date(self, column: str) -> bool:
        return self.context.detected_types[column].type.upper().startswith(("DATE", "TIMESTAMP"))

    def is_year(self, column: str) -> bool:
        """A whole-number column of years (named so, or every value between 1000 and 2100)."""
        profile = self.context.detected_types[column]
        if not self.is_number(column):
            return False
        low, high = profile.min, profile.max
        if not isinstance(low, int | float) or not isinstance(high, int | float):
            return False
        named_year = any(w in ("year", "years", "season", "yr") for w in tokens(column))
        if named_year:
            return 1000 <= low <= high <= 2100
        return profile.role not in ("id", "measure", "money") and 1800 <= low <= high <= 2100 and profile.distinct >= 2

    @property
    def columns(self) -> list[str]:
        return self.context.columns

    def role(self, column: str) -> str:
        return self.context.detected_types[column].role

    def key_column(self, value: object) -> str | None:
        """The id column `value` is a key of ("order 1003": order_id), if any: such a number
        names a row, not a year or an amount."""
        return next((c for c in self.columns if self.role(c) == "id" and value in self.values.get(c, ())), None)


# -- columns --------------------------------------------------------------------------------

_ABBREVIATIONS = {"avg": "average", "no": "number", "pts": "points", "pos": "position", "pop": "population",
                  "apps": "appearances", "gp": "games", "pct": "percentage", "yds": "yards", "att": "attendance",
                  "km": "kilometres", "mi": "miles", "ft": "feet", "m": "metres", "hp": "horsepower"}  # fmt: skip


def column_words(column: str) -> list[str]:
    """The words naming a column, abbreviations spelled out, units in brackets dropped
    ("Avg. Attendance" → average attendance; "Height (m)" → height)."""
    name = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", column) if re.sub(r"\([^)]*\)", "", column).strip() else column
    out = [_ABBREVIATIONS.get(w, w) for w in tokens(name.replace("_", " "))]
    return [w for w in out if w not in STOP] or out


def find_columns(toks: list[str], table: Table) -> list[Mention]:
    """Columns whose name words are in the question: each column once, at its best span."""
    found = []
    stems_at = [stem(t) for t in toks]
    for column in table.columns:
        name = column_words(column)
        if not name:
            continue
        hits = []
        for word in name:
            positions = [i for i, t in enumerate(toks) if t not in STOP and _same_word(word, t, stems_at[i])]
            if positions:
                hits.append(positions[0])
        if not hits:
            continue
        share = len(hits) / len(name)
        content = [w for w in name if len(w) >= 3]
        if share < 0.5 or (len(name) > 1 and share < 1 and not any(len(name[i]) >= 4 for i in range(len(name)))):
            continue
        if not content and share < 1:
            continue
        start, end = min(hits), max(hits) + 1
        if end - start > len(name) + 2:  # the words are scattered over the question
            continue
        found.append(Mention("column", start, end, column=column, score=share))
    return found


def _same_word(word: str, token: str, token_stem: str) -> bool:
    if word == token or stem(word) == token_stem:
        return True
    return len(word) >= 5 and len(token) >= 5 and word_score(word, [token]) >= NEAR


# -- values ---------------------------------------------------------------------------------


def find_values(toks: list[str], table: Table) -> list[Mention]:
    """Cells of text columns the question names: whole cells first; a part of a longer cell
    when it is distinctive (a word of 4+ letters that is not grammar), e.g. "beijing" for
    "Beijing, China"."""
    grams: dict[tuple[str, ...], list[int]] = {}
    for n in range(1, 9):
        for i in range(len(toks) - n + 1):
            grams.setdefault(tuple(toks[i : i + n]), []).append(i)
    plural = {t.removesuffix("s"): i for i, t in enumerate(toks) if t.endswith("s")}
    found: list[Mention] = []
    for column, options in table.values.items():
        if not table.is_text(column):
            continue
        for value in options:
            if not isinstance(value, str):
                continue
            cell = tuple(tokens(value))
            if not cell or all(w in _WEAK for w in cell):
                continue
            for i in grams.get(cell, ()):
                found.append(Mention("value", i, i + len(cell), column=column, value=value))
            if len(cell) == 1 and len(cell[0]) >= 5 and not cell[0].isdigit():  # "Japanese" for Japan
                for i, t in enumerate(toks):
                    if t.startswith(cell[0]) and 2 <= len(t) - len(cell[0]) <= 3 and not t.endswith("s"):
                        found.append(Mention("value", i, i + 1, column=column, value=value, score=0.9))
            if len(cell) == 1 and cell[0] in plural and len(cell[0]) >= 4:
                i = plural[cell[0]]
                found.append(Mention("value", i, i + 1, column=column, value=value, score=0.95))
            if 1 < len(cell) <= _PART_CELL_WORDS and "\n" not in value:
                found += _parts(cell, grams, column, value)
    return found


def _parts(cell: tuple[str, ...], grams: dict[tuple[str, ...], list[int]], column: str, value: str) -> list[Mention]:
    """The longest run of the cell's words the question holds, when distinctive."""
    for n in range(len(cell) - 1, 0, -1):
        for i in range(len(cell) - n + 1):
            part = cell[i : i + n]
            if part in grams and any(len(w) >= 4 and w not in _WEAK and not w.isdigit() for w in part):
                start = grams[part][0]
                written = _written(value, part)
                if written is None:
                    return []
                return [
                    Mention("value", start, start + n, column=column, value=written, score=n / len(cell), exact=False)
                ]
    return []


def _written(cell: str, part: tuple[str, ...]) -> str | None:
    """The part of `cell` its words `part` come from, as the cell writes it ("E-Swift" in
    "E-Swift, Tha Alkaholiks" for ("e", "swift"))."""
    pattern = r"\W+".join(re.escape(w) for w in part)
    plain = unicodedata.normalize("NFKD", cell)
    kept = "".join(ch for ch in plain if not unicodedata.combining(ch))
    m = re.search(rf"(?<![^\W_]){pattern}(?![^\W_])", kept, re.I)
    return kept[m.start() : m.end()] if m else None


# -- numbers, years, months -------------------------------------------------------------------

_COMPARE: list[tuple[re.Pattern[str], Op]] = [
    (re.compile(r"(?:at least|no less than|no fewer than|a minimum of|minimum of)$"), ">="),
    (re.compile(r"(?:at most|no more than|up to|a maximum of|maximum of|not more than)$"), "<="),
    (re.compile(r"(?:more than|over|above|greater than|higher than|larger than|bigger than|exceeding|exceeded|"
                r"longer than|taller than|heavier than|older than|after|later than|beyond|past|excess of)$"), ">"),
    (re.compile(r"(?:less than|fewer than|under|below|lower than|smaller than|shorter than|lighter than|"
                r"younger than|before|prior to|earlier than|within)$"), "<"),
    (re.compile(r"(?:since)$"), ">="),
    (re.compile(r"(?:until|till|through)$"), "<="),
]  # fmt: skip
_FILLER = frozenset("the a an year years season the of".split())
_AFTER: dict[str, Op] = {
    "or more": ">=", "or higher": ">=", "or greater": ">=", "or above": ">=", "plus": ">=",
    "or less": "<=", "or fewer": "<=", "or lower": "<=", "or below": "<=", "or under": "<=",
}  # fmt: skip


def find_numbers(toks: list[str], table: Table) -> list[Mention]:
    """Numbers with the comparison before or after them ("over 200", "3 or more", "between 5
    and 9"); years (1000-2100 written alone) as years."""
    found: list[Mention] = []
    skip: set[int] = set()
    for i, tok in enumerate(toks):
        if i in skip:
            continue
        value = number_of(tok)
        if value is None or (tok.isalpha() and tok == "one"):  # "one" is as often "which one" as 1
            continue
        start, op = i, cast(Op, "=")
        lead = toks[max(0, i - 6) : i]
        while lead and lead[-1] in _FILLER:
            lead = lead[:-1]
        before = " ".join(lead[-4:])
        for pattern, compare in _COMPARE:
            m = pattern.search(before)
            if m:
                op = compare
                start = max(0, i - 6) + len(lead) - len(m.group(0).split())
                break
        mention = Mention("number", i, i + 1, value=value, op=op, op_start=start if start != i else None)
        if toks[i - 1 : i] == ["between"] and i + 2 < len(toks) and toks[i + 1] in ("and", "to"):
            high = number_of(toks[i + 2])
            if high is not None:
                mention.op, mention.high, mention.end, mention.op_start = "between", high, i + 3, i - 1
                skip.add(i + 2)
        for gap in (0, 1):  # "20 or more", "20 points or more"
            after = " ".join(toks[mention.end + gap : mention.end + gap + 2])
            if after in _AFTER and mention.op == "=":
                mention.op, mention.end = _AFTER[after], mention.end + gap + 2
                break
        is_year = tok.isdigit() and len(tok) == 4 and 1000 <= value <= 2100 and table.key_column(value) is None
        if is_year:
            mention.kind = "year"
        found.append(mention)
    months = _months(toks, found)
    found = [n for n in found if not any(m.start <= n.start < m.end for m in months)]  # "March 2024": one date
    return found + months


def _months(toks: list[str], numbers: list[Mention]) -> list[Mention]:
    """Month names ("in July", "July 2015", "9 May 2006"): a month, with its year and day when written."""
    out = []
    for i, tok in enumerate(toks):
        month = MONTHS.get(tok) if (len(tok) >= 3 and tok != "may") or _may_is_month(toks, i) else None
        if month is None:
            continue
        year = next((m for m in numbers if m.kind == "year" and m.start == i + 1), None)
        day = next(
            (m for m in numbers if m.kind == "number" and m.start == i - 1 and _whole(m.value) is not None),
            None,
        )
        day_number = _whole(day.value) if day else None
        if day_number is not None and not 1 <= day_number <= 31:
            day, day_number = None, None
        start, end = (day.start if day else i), (year.end if year else i + 1)
        when = (month, _whole(year.value) if year else None, day_number)
        out.append(Mention("month", start, end, value=when))
    return out


def _whole(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def _may_is_month(toks: list[str], i: int) -> bool:
    return toks[i] == "may" and (
        (i + 1 < len(toks) and toks[i + 1].isdigit())
        or (i > 0 and (toks[i - 1] in ("in", "of") or toks[i - 1].isdigit()))
    )


def cell_date(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return None
