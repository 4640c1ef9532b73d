"""Cell text typed at load: a text column whose values are numbers, durations or dates written
for people becomes a column of numbers or dates, in DuckDB SQL (no Python loop over rows).

Read as numbers: thousands separators ("1,234"), currency ("$190,000"), percent ("12.5%"),
one unit of one word ("17 years", "5 km"), ordinals ("3rd"); as seconds: durations ("1:23:45", "1:45.3");
as dates: "1995-01-26", "January 26, 1995", "26 Jan 1995", "Jan 1995", "01/26/1995". Footnote
marks ("1,234[a]", "12*", "5†") are dropped first. A column is converted when (nearly) every
non-empty value parses (`_enough`); the values that do not become NULL, and the column's
comment (JSON, read back by profiling) records what it was: the kind, the unit or format,
an example of the text, and how many values were left empty.
"""

from __future__ import annotations

import json
import re
from typing import Any

import duckdb
from pydantic import BaseModel

# A value read as empty rather than as an unparsed one.
_EMPTY = ("", "-", "--", "—", "–", "?", "n/a", "na", "none", "null", "nan", "unknown", "tbd", "tba")
_FOOTNOTES = r"(\s*(\[[^\]]*\]|[*†‡§¹²³]))+$"
# sign, currency, integer part (with thousands separators or not), fraction, unit (% or a word or two)
_NUMBER = (
    r"^([-+−]?)\s*([$€£¥]?)\s*(\d{1,3}(?:,\d{3})+|\d*)(\.\d+)?"
    r"\s*(%|[A-Za-zµ°][A-Za-z°/²³.]*)?$"
)
_NUMBER_PARTS = "['sign', 'cur', 'int', 'frac', 'unit']"
_DURATION = r"^(\d+):([0-5]\d)(?::([0-5]\d))?(\.\d+)?$"
_DATE_FORMATS = (
    "%Y-%m-%d",
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%m/%d/%Y",
    "%d/%m/%Y",
    "%Y/%m/%d",
    "%d.%m.%Y",
    "%B %Y",
    "%b %Y",
    "%Y",
)
_ORDINALS = ("st", "nd", "rd", "th")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# Two-part durations without a fraction ("12:30") are clock times unless the name says a duration.
_DURATION_NAME = re.compile(r"(duration|length|runtime|running|lap|elapsed|^time$|_time$| time$)", re.IGNORECASE)
_DECIDE_ROWS = 100_000
_SCREEN_ROWS = 50
_PY_FOOTNOTES = re.compile(_FOOTNOTES)
_PY_NUMBER = re.compile(r"(?=.*\d)" + _NUMBER.removeprefix("^"))
_PY_DURATION = re.compile(_DURATION)
_PY_DATE = re.compile(
    r"^(\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|\d{4}|(\d{1,2} )?[A-Za-z]{3,9}\.?( \d{1,2},?)? \d{4})$"
)  # the values a decision reads at most (the first rows)


class Parsed(BaseModel):
    """What a text column was read as (stored as the column's comment)."""

    kind: str  # "number", "duration" or "date"
    unit: str | None = None  # "$", "%", "km", "ordinal", "seconds"
    text_example: str = ""  # one value as written in the file
    unparsed: int = 0  # non-empty values that did not parse (now NULL)
    unparsed_example: str | None = None

    def describe(self) -> str:
        """A short phrase: "numbers written like '$190,000' (unit $)"."""
        unit = f" (unit {self.unit})" if self.unit else ""
        example = " ".join(str(self.unparsed_example).split())[:40]
        lost = f"; {self.unparsed} other value(s) such as '{example}' are empty" if self.unparsed else ""
        return f"{self.kind}s written like '{self.text_example}'{unit}{lost}"


def type_cells(con: duckdb.DuckDBPyConnection, table: str, types: dict[str, str]) -> list[str]:
    """Convert the text columns of `table` whose values parse; return notes on what changed."""
    quoted = _quote(table)
    texts = _candidates(con, quoted, [c for c, t in types.items() if t == "VARCHAR"])
    if not texts:
        return []
    parts = [a for c in texts for a in _counts(_clean(_quote(c)))]
    found = con.execute(f"SELECT {', '.join(parts)} FROM (SELECT * FROM {quoted} LIMIT {_DECIDE_ROWS})").fetchall()[0]
    width = len(parts) // len(texts)
    chosen: dict[str, tuple[str, Parsed]] = {}
    for i, column in enumerate(texts):
        decided = _decide(column, found[i * width : (i + 1) * width])
        if decided is not None:
            chosen[column] = decided
    if not chosen:
        return []
    replaced = ", ".join(f"{expr} AS {_quote(c)}" for c, (expr, _) in chosen.items())
    con.execute(f"CREATE OR REPLACE TABLE {quoted} AS SELECT * REPLACE ({replaced}) FROM {quoted}")
    notes = []
    for column, (_, parsed) in chosen.items():
        con.execute(f"COMMENT ON COLUMN {quoted}.{_quote(column)} IS {_literal(parsed.model_dump_json())}")
        notes.append(f"column '{column}': {parsed.describe()}, loaded as {parsed.kind}s")
    return notes


def _candidates(con: duckdb.DuckDBPyConnection, table: str, texts: list[str]) -> list[str]:
    """The text columns whose first values look like numbers, durations or dates (in Python, over
    a few values): the full test is one SQL aggregate of about twenty regular expressions per
    column, whose planning alone costs about 25 ms a column; most text columns are names."""
    if not texts:
        return []
    columns = ", ".join(_quote(c) for c in texts)
    rows = con.execute(f"SELECT {columns} FROM {table} LIMIT {_SCREEN_ROWS}").fetchall()
    out = []
    for i, column in enumerate(texts):
        values = [_PY_FOOTNOTES.sub("", str(r[i]).strip()).strip() for r in rows if r[i] is not None]
        values = [v for v in values if v.lower() not in _EMPTY]
        looks = sum(1 for v in values if _PY_NUMBER.match(v) or _PY_DURATION.match(v) or _PY_DATE.match(v))
        if values and looks >= 0.8 * len(values):
            out.append(column)
    return out


def parsed(comments: dict[str, str | None]) -> dict[str, Parsed]:
    """What `type_cells` recorded on the columns, from their comments (column → comment)."""
    out = {}
    for name, comment in comments.items():
        if not comment:
            continue
        try:
            out[name] = Parsed.model_validate(json.loads(comment))
        except ValueError:
            continue  # a comment that is not ours
    return out


def parsed_columns(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, Parsed]:
    """What `type_cells` recorded on the table's columns."""
    return parsed({c: comment for c, (_, comment) in columns_and_comments(con, table).items()})


def _clean(q: str) -> str:
    """The value trimmed, without footnote marks."""
    return f"trim(regexp_replace(trim({q}), '{_FOOTNOTES}', ''))"


def _empty(v: str) -> str:
    return f"(lower({v}) IN ({', '.join(_literal(e) for e in _EMPTY)}))"


def _unit(v: str) -> str:
    """The unit of a number's text, normalized: lower case, no plural 's', ordinals as one."""
    raw = f"lower(regexp_extract({v}, '{_NUMBER}', 5))"
    return (
        f"CASE WHEN {raw} IN ({', '.join(_literal(o) for o in _ORDINALS)}) THEN 'ordinal' "
        f"WHEN regexp_full_match({raw}, '[a-z]{{3,}}s') AND NOT regexp_matches({raw}, '(ss|ies)$') "
        f"THEN regexp_replace({raw}, 's$', '') "
        f"ELSE {raw} END"
    )


def _counts(v: str) -> list[str]:
    """The aggregates `_decide` reads, over one column's cleaned values `v`."""
    present = f"({v} IS NOT NULL AND NOT {_empty(v)})"
    number = f"({present} AND regexp_full_match({v}, '{_NUMBER}') AND regexp_matches({v}, '\\d'))"
    duration = f"({present} AND regexp_full_match({v}, '{_DURATION}'))"
    date = f"({present} AND {_strptime(v)} IS NOT NULL)"
    currency = f"regexp_extract({v}, '{_NUMBER}', 2)"
    return [
        f"count_if({present})",
        f"count_if({number})",
        f"count(DISTINCT {_unit(v)}) FILTER (WHERE {number} AND {_unit(v)} <> '')",
        f"min({_unit(v)}) FILTER (WHERE {number} AND {_unit(v)} <> '')",
        f"count(DISTINCT {currency}) FILTER (WHERE {number} AND {currency} <> '')",
        f"min({currency}) FILTER (WHERE {number} AND {currency} <> '')",
        f"count_if({number} AND regexp_extract({v}, '{_NUMBER}', 4) <> '')",
        f"count_if({number} AND regexp_full_match({v}, '0\\d+'))",
        f"count_if({duration})",
        f"count_if({duration} AND regexp_full_match({v}, '\\d+:\\d\\d'))",  # "12:30": maybe a clock time
        f"count_if({date})",
        f"count_if({date} AND NOT regexp_full_match({v}, '\\d{{4}}'))",
        f"min({v}) FILTER (WHERE {number})",
        f"min({v}) FILTER (WHERE {duration})",
        f"min({v}) FILTER (WHERE {date} AND NOT regexp_full_match({v}, '\\d{{4}}'))",
        f"min({v}) FILTER (WHERE {present} AND NOT {number})",
        f"min({v}) FILTER (WHERE {present} AND NOT {duration})",
        f"min({v}) FILTER (WHERE {present} AND NOT {date})",
    ]


def _strptime(v: str) -> str:
    """The value read as a date in one of the common formats; digits alone only as a year."""
    formats = "[" + ", ".join(_literal(f) for f in _DATE_FORMATS) + "]"
    return f"CASE WHEN NOT regexp_full_match({v}, '\\d{{1,3}}|\\d{{5,}}') THEN try_strptime({v}, {formats}) END"


def _enough(parsed: int, present: int) -> bool:
    """(Nearly) every non-empty value: all but 5 %, or all but one of eight or more."""
    return present > 0 and (parsed >= 0.95 * present or (present >= 8 and present - parsed <= 1))


def _decide(column: str, counts: tuple[Any, ...]) -> tuple[str, Parsed] | None:
    """The SQL expression that reads `column` and what it was read as; None: it stays text."""
    (present, number, units, unit, currencies, currency, fractions, leading_zero) = (
        c if i in (3, 5) else c or 0 for i, c in enumerate(counts[:8])
    )
    (duration, clock, date, full_date) = (c or 0 for c in counts[8:12])
    (number_ex, duration_ex, date_ex, not_number, not_duration, not_date) = counts[12:]
    v = _clean(_quote(column))
    month = unit is not None and str(unit).rstrip(".")[:3] in _MONTHS  # "1 July": a day, not 1 of a unit
    if _enough(number, present) and units <= 1 and currencies <= 1 and not leading_zero and not month:
        if currency and unit:
            return None  # "$5 million": a scale word, not a unit; left as text
        sql_type = "DOUBLE" if fractions else "BIGINT"
        parts = f"regexp_extract({v}, '{_NUMBER}', {_NUMBER_PARTS})"
        text = f"replace({parts}.sign, '−', '-') || replace({parts}.int, ',', '') || {parts}.frac"
        expr = f"TRY_CAST(CASE WHEN regexp_matches({v}, '\\d') THEN {text} END AS {sql_type})"
        shown = currency or unit or None
        return expr, Parsed(
            kind="number", unit=shown, text_example=number_ex, unparsed=present - number, unparsed_example=not_number
        )
    if _enough(duration, present) and (clock < duration or _DURATION_NAME.search(column)):
        groups = [f"regexp_extract({v}, '{_DURATION}', {i})" for i in (1, 2, 3, 4)]
        hours_first = f"{groups[2]} <> ''"
        seconds = (
            f"CASE WHEN {hours_first} THEN {groups[0]}::DOUBLE * 3600 + {groups[1]}::DOUBLE * 60 + {groups[2]}::DOUBLE "
            f"ELSE {groups[0]}::DOUBLE * 60 + {groups[1]}::DOUBLE END + coalesce(TRY_CAST({groups[3]} AS DOUBLE), 0)"
        )
        expr = f"CASE WHEN regexp_full_match({v}, '{_DURATION}') THEN {seconds} END"
        return expr, Parsed(
            kind="duration",
            unit="seconds",
            text_example=duration_ex,
            unparsed=present - duration,
            unparsed_example=not_duration,
        )
    if _enough(date, present) and full_date:
        expr = f"{_strptime(v)}::DATE"
        return expr, Parsed(
            kind="date", unit=None, text_example=date_ex, unparsed=present - date, unparsed_example=not_date
        )
    return None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def columns_and_comments(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, tuple[str, str | None]]:
    """The table's columns with their SQL types and comments (what `cells` recorded), in order."""
    rows = con.execute(
        "SELECT column_name, data_type, comment FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = current_schema() AND table_name = $1 ORDER BY column_index",
        [table],
    ).fetchall()
    return {name: (str(sql_type), comment) for name, sql_type, comment in rows}
