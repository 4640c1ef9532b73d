"""The reading of a question against one table (`TableReading`), with every word accounted for.

The question's mentions (`mentions.py`) are read in one of a few forms, tried in order: a
difference between two rows, a choice between named rows, a count, an aggregate, the row
with the most of something, the row before or after another, the first or last row, and
otherwise a lookup of the rows the conditions select. Values and numbers the form does not
take as its own become conditions; what is left is recorded as not applied.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from datetime import date
from typing import cast

from concerto.contracts.reading import Aggregate, Condition, Op, TableReading, WordUse
from concerto.packs.analytics.table.answer import (
    ADJECTIVES,
    adjective_measure,
    asked_columns,
    head_column,
    measure_near,
)
from concerto.packs.analytics.table.mentions import (
    Mention,
    Table,
    find_columns,
    find_numbers,
    find_values,
    tokens,
)

ANSWERED_BY = "sql_analytics"

_MORE = r"(?:more|bigger|larger|higher|greater|longer|taller|heavier|better|farther|further|later|most)"
_LESS = r"(?:less|fewer|smaller|lower|shorter|lighter|worse|earlier|least|sooner)"
_DIFFERENCE = re.compile(rf"\bdifference\b|\bhow (?:many|much) (?:{_MORE}|{_LESS})\b|\b(?:{_MORE}|{_LESS}) than\b")
_SUPER_MOST = re.compile(
    r"\b(?:the )?(most|highest|largest|biggest|greatest|maximum|max|top|longest|tallest|heaviest|latest|newest|"
    r"youngest|slowest|deepest|richest|most populous)\b"
)
_SUPER_LEAST = re.compile(
    r"\b(?:the )?(least|lowest|fewest|smallest|minimum|min|shortest|lightest|oldest|earliest|fastest|worst)\b"
)
_SUPERLATIVE_OF = {"larger": "largest", "bigger": "biggest", "higher": "highest", "greater": "greatest",
                   "longer": "longest", "taller": "tallest", "heavier": "heaviest", "more": "most",
                   "smaller": "smallest", "lower": "lowest", "shorter": "shortest", "lighter": "lightest",
                   "fewer": "fewest", "less": "least"}  # fmt: skip
_THE_MORE = re.compile(r"\bthe (larger|bigger|higher|greater|longer|taller|heavier|more)\b")
_THE_LESS = re.compile(r"\bthe (smaller|lower|shorter|lighter|fewer|less)\b")
_FIRST = re.compile(r"\b(first|earliest|top|opening|initial)\b")
_LAST = re.compile(r"\b(last|latest|final|most recent|bottom|closing)\b")
_NEXT = re.compile(r"\b(after|next|following|behind|below|succeeded|subsequent|then)\b")
_PREVIOUS = re.compile(r"\b(before|previous|preceding|prior to|above|ahead of|preceded)\b")
_AGGREGATE: list[tuple[re.Pattern[str], Aggregate]] = [
    (re.compile(r"\b(average|avg|mean)\b"), "avg"),
    (re.compile(r"\bmedian\b"), "median"),
    (re.compile(r"\b(total|sum|combined|altogether|in all|cumulative)\b"), "sum"),
]
_YES_NO = re.compile(r"^(?:is|was|are|were|does|did|do|has|have|had|can|could)\b")
_COUNT = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b|\btotal number of\b")
# "the highest number of fans": a superlative of the column after it, not a count
_EXTREME_NUMBER = re.compile(
    r"\b(?:highest|largest|greatest|biggest|lowest|smallest|most|least|top|maximum|minimum) number of\b"
)
_DISTINCT = re.compile(r"\b(different|distinct|unique|separate)\b")


@dataclass
class _State:
    """One question's mentions while a form is chosen; `used` collects the mentions taken."""

    question: str
    toks: list[str]
    text: str
    table: Table
    columns: list[Mention]
    values: list[Mention]
    numbers: list[Mention]
    used: list[Mention] = field(default_factory=list)

    def words_of(self, m: Mention) -> str:
        return m.words(self.toks)


def read_table(question: str, table: Table) -> TableReading:
    """The one reading of `question` against `table`."""
    toks = tokens(question)
    columns = find_columns(toks, table)
    values = _best_values(find_values(toks, table), columns)
    numbers = [n for n in find_numbers(toks, table) if not any(_overlaps(n, v) for v in values)]
    st = _State(question, toks, " ".join(toks), table, columns, values, numbers)
    for form in (_difference, _choice, _neighbour, _count, _aggregate, _extreme, _order):
        reading = form(st)
        if reading is not None:
            break
    else:
        reading = _lookup(st)
    reading.words = _accounted(st, reading) + _analyses(st)
    if reading.conditions_missed:
        reading.confidence = min(reading.confidence, 0.5)
    return reading


# -- the forms ------------------------------------------------------------------------------


def _difference(st: _State) -> TableReading | None:
    if not _DIFFERENCE.search(st.text):
        return None
    options = _pair(st, joined=("and", "or", "to", "vs", "versus", "from", "than"))
    if options is None:
        return None
    first, second = options
    skip = {first.column, second.column}
    measure = measure_near(st.columns, st.table, 0, skip)
    if measure is None and first.kind == "number" and not first.column:
        return None
    st.used += [first, second]
    conditions = _conditions(st, skip=set())
    read = _reading(st, "difference", measure=measure, conditions=conditions, confidence=0.7)
    read.options = [_equals(st, first), _equals(st, second)]
    read.aggregate = "sum" if measure else "count"
    return read


def _choice(st: _State) -> TableReading | None:
    """ "which game had a bigger crowd, week 4 or week 9?": two named rows joined by "or"."""
    if _COUNT.search(st.text) or not re.search(rf"^(?:which|who|what|whose)\b|\b{_MORE}\b|\b{_LESS}\b", st.text):
        return None
    options = _pair(st, joined=("or",))
    if options is None:
        return None
    first, second = options
    st.used += [first, second]
    skip = {first.column}
    less = re.search(rf"\b{_LESS}\b", st.text) is not None
    by_order = re.search(r"\b(first|earlier|sooner|before|later|last|after)\b", st.text) is not None
    measure = None if by_order else _comparative_measure(st, skip)
    read = _reading(st, "choice", measure=measure, answer=[first.column], confidence=0.75)
    read.descending = not less if not by_order else re.search(r"\b(later|last|after)\b", st.text) is not None
    read.options = [_equals(st, first), _equals(st, second)]
    read.conditions = _conditions(st, skip=skip)
    return read


def _neighbour(st: _State) -> TableReading | None:
    """ "what team comes before Hank Stein?", "who finished after Great Britain?"."""
    for m in st.values:
        before = " ".join(st.toks[max(0, m.start - 3) : m.start])
        nxt, prev = _NEXT.search(before), _PREVIOUS.search(before)
        if not (nxt or prev) or re.search(r"\b(first|last)\b", before):
            continue
        return _neighbour_of(st, m, nxt, prev)
    # "what is the next year after 1967?", "the order after 1010": a number as the anchor, when
    # the question says next/previous or the number is a row's key (a value of an id column)
    adjacent = re.search(r"\b(next|previous|preceding|following|immediately|right|just|directly)\b", st.text)
    for n in st.numbers:
        if n.op in (">", "<") and n.op_start is not None and n.kind in ("number", "year"):
            column = st.table.key_column(n.value) or (_number_column(st, n) if adjacent else None)
            if column is not None:
                n.column, n.op = column, "="
                return _neighbour_of(st, n, st.toks[n.op_start] != "before", None)
    return None


def _neighbour_of(st: _State, m: Mention, nxt: object, prev: object) -> TableReading:
    st.used.append(m)
    skip = {m.column}
    answer = asked_columns(st.question, st.toks, st.columns, st.table, set())
    read = _reading(st, "neighbour", answer=answer, confidence=0.7, measure=_time_named(st, skip))
    later = bool(nxt) and (not prev or nxt.start() > prev.start())  # type: ignore[attr-defined]
    read.anchor, read.offset = _equals(st, m), (1 if later else -1)
    read.conditions = _conditions(st, skip=skip)
    return read


def _count(st: _State) -> TableReading | None:
    m = _COUNT.search(st.text)
    if m is None:
        return None
    after = len(st.text[: m.end()].split())
    if re.search(r"\b(average|avg|mean|median)\b", st.text) or _EXTREME_NUMBER.search(st.text):
        return None  # "the average number of X", "the highest number of X": an aggregate or extreme
    measure = _counted_measure(st, after)
    if measure is not None and (_FIRST.search(st.text) or _LAST.search(st.text)) and not st.values:
        # "how many laps did the last place finisher complete?": the value in the first/last row
        read = _order(st)
        if read is not None:
            read.answer = [measure]
            return read
    if measure is not None:  # "how many points did X score": the total of a numeric column
        read = _reading(st, "aggregate", measure=measure, confidence=0.7)
        read.aggregate = "sum"
        read.conditions = _conditions(st, skip=set())
        return read
    read = _reading(st, "count", confidence=0.75)
    read.aggregate = "count"
    counted = next((c for c in st.columns if c.start == after and not st.table.is_number(c.column)), None)
    if counted is not None and not st.values and not st.numbers:  # "how many firms are there?": distinct firms
        read.aggregate, read.answer = "count_distinct", [counted.column]
    elif _DISTINCT.search(st.text):
        named = measure_near(st.columns, st.table, after, set(), numeric=False)
        if named:
            read.aggregate, read.answer = "count_distinct", [named]
    read.conditions = _conditions(st, skip=set())
    return read


def _aggregate(st: _State) -> TableReading | None:
    for pattern, kind in _AGGREGATE:
        m = pattern.search(st.text)
        if m is None:
            continue
        after = len(st.text[: m.start()].split())
        measure = measure_near(st.columns, st.table, after, set())
        if measure is None:
            continue
        read = _reading(st, "aggregate", measure=measure, confidence=0.75)
        read.aggregate = kind
        read.conditions = _conditions(st, skip=set())
        return read
    return None


def _extreme(st: _State) -> TableReading | None:
    most, least = _SUPER_MOST.search(st.text), _SUPER_LEAST.search(st.text)
    if not (most or least):
        # "which division had the larger area?": a comparative over all the rows is a superlative
        most, least = _THE_MORE.search(st.text), _THE_LESS.search(st.text)
        if not (most or least):
            return None
    found = min((x for x in (most, least) if x), key=lambda x: x.start())
    descending = found is most
    word = _SUPERLATIVE_OF.get(found.group(1), found.group(1))
    after = len(st.text[: found.start()].split())
    measure = measure_near(st.columns, st.table, after, set())
    if measure is None and word in ADJECTIVES:
        measure = adjective_measure(word, st.table, set())
        descending = ADJECTIVES[word][0] if measure is not None and not st.table.is_date(measure) else descending
        if measure is not None and (st.table.is_date(measure) or st.table.is_year(measure)):
            descending = word in ("latest", "newest", "youngest", "most recent")
    answer = asked_columns(st.question, st.toks, st.columns, st.table, {measure} if measure else set())
    if measure is None:
        if word not in ("most", "least", "fewest", "top"):
            return None
        read = _reading(st, "mode", answer=answer, confidence=0.6)
    elif _asks_value(st, measure, answer):  # "what is the highest score": the value itself
        read = _reading(st, "aggregate", measure=measure, confidence=0.7)
        read.aggregate = "max" if descending else "min"
        read.conditions = _conditions(st, skip=set())
        return read
    else:
        read = _reading(st, "extreme", measure=measure, answer=answer, confidence=0.7)
    read.descending = descending
    read.limit = _limit(st)
    read.conditions = _conditions(st, skip=set())
    return read


def _order(st: _State) -> TableReading | None:
    first, last = _FIRST.search(st.text), _LAST.search(st.text)
    if not (first or last):
        return None
    answer = asked_columns(st.question, st.toks, st.columns, st.table, set())
    read = _reading(st, "order", answer=answer, confidence=0.6, measure=_time_named(st, set(answer)))
    read.descending = last is not None and (first is None or last.start() < first.start())
    read.limit = _limit(st)
    read.conditions = _conditions(st, skip=set())
    return read


def _time_named(st: _State, skip: set[str]) -> str | None:
    """The date or year column the question names ("who was hired first": hired), which orders
    its rows; None: the table's own order."""
    return next(
        (
            c.column
            for c in st.columns
            if c.column not in skip and (st.table.is_date(c.column) or st.table.is_year(c.column))
        ),
        None,
    )


def _lookup(st: _State) -> TableReading:
    conditions = _conditions(st, skip=set())
    skip = {c.column for c in conditions}
    answer = asked_columns(st.question, st.toks, st.columns, st.table, skip)
    if not answer_named(st) and conditions and all(c.op == "contains" for c in conditions):
        answer = [conditions[0].column]  # "list the Chevrolet models": the cells that hold it
    if _YES_NO.match(st.text) and conditions:
        read = _reading(st, "yes_no", answer=answer, confidence=0.5)
    else:
        # rows named only by a part of a cell or a demonym ("the Japanese cars") are a search
        # by meaning (the semantic agents'); a count or total of them is read here
        inexact = (
            bool(st.values) and len(conditions) == len(st.values) and all(not m.exact or m.score < 1 for m in st.values)
        )
        confidence = 0.55 if inexact else 0.65 if conditions else 0.2
        read = _reading(st, "lookup", answer=answer, confidence=confidence)
    read.conditions = conditions
    return read


# -- parts ----------------------------------------------------------------------------------


def answer_named(st: _State) -> bool:
    """Whether the question names the column it asks for right after its question word."""
    return head_column(st.question, st.toks, st.columns, set()) is not None


def _reading(
    st: _State,
    kind: str,
    *,
    measure: str | None = None,
    answer: list[str] | None = None,
    conditions: list[Condition] | None = None,
    confidence: float = 0.5,
) -> TableReading:
    return TableReading(
        source=st.table.context.name,
        kind=kind,
        measure=measure,
        answer=answer or [],
        conditions=conditions or [],
        answered_by=ANSWERED_BY,
        confidence=confidence,
    )


def _asks_value(st: _State, measure: str, answer: list[str]) -> bool:
    """Whether a superlative asks for the measure's value, not a row: the measure is the column
    asked for, the question is "how many/much ...", or the measure follows "what is the
    highest ..." ("what was the longest time")."""
    if answer == [measure] or re.match(r"^how\s+(?:is|was|were|are|many|much)\b", st.text):
        return True
    head = re.match(r"^(?:what|which)\s+(?:(?:is|was|were|are)\s+)?the\s+(?:\w+\s+){1,2}", st.text)
    named = next((c for c in st.columns if c.column == measure), None)
    return head is not None and named is not None and named.start <= len(head.group(0).split()) + 1


def _limit(st: _State) -> int | None:
    """ "the top 3", "which 5 countries": a count of rows (the number is then used)."""
    m = re.search(
        r"\b(?:top|first|last|bottom|which|what|the|name|list)\s+(\d+|two|three|four|five|six|seven|eight|nine|ten)\b",
        st.text,
    )
    if m is None:
        return None
    at = len(st.text[: m.start(1)].split())
    number = next((n for n in st.numbers if n.start == at and n.op == "=" and n.kind == "number"), None)
    if number is None or not isinstance(number.value, float) or number.value > 100:
        return None
    st.used.append(number)
    return int(number.value)


def _counted_measure(st: _State, after: int) -> str | None:
    """The numeric column "how many X" names right after it (X: points, goals, wins), if any."""
    lead = 1 if after < len(st.toks) and st.toks[after] in ("total", "of", "the", "more", "different") else 0
    near = [
        c
        for c in st.columns
        if st.table.is_number(c.column)
        and after <= c.start <= after + lead
        and not st.table.is_year(c.column)
        and st.table.role(c.column) != "id"
    ]
    return near[0].column if near else None


def _comparative_measure(st: _State, skip: set[str]) -> str | None:
    named = measure_near(st.columns, st.table, 0, skip)
    if named:
        return named
    for word in re.findall(r"\b\w+(?:er|est)\b", st.text):
        base = {"bigger": "biggest", "larger": "largest", "taller": "tallest", "longer": "longest",
                "older": "oldest", "heavier": "heaviest", "shorter": "shortest"}.get(word)  # fmt: skip
        if base and (found := adjective_measure(base, st.table, skip)):
            return found
    numeric = [c for c in st.table.columns if st.table.is_number(c) and not st.table.is_year(c) and c not in skip]
    return numeric[0] if len(numeric) == 1 else None


def _pair(
    st: _State, joined: tuple[str, ...] = ("and", "or", "to", "vs", "versus", "from")
) -> tuple[Mention, Mention] | None:
    """Two values (or two numbers) of the same column named together ("A and B", "A or B")."""
    items = sorted(
        [m for m in st.values if m.exact or m.score >= 0.5] + [n for n in st.numbers if n.op == "="],
        key=lambda m: m.start,
    )
    for a, b in itertools.pairwise(items):
        between = st.toks[a.end : b.start]
        if not between or not set(between) & set(joined) or len(between) > 3:
            continue
        if a.kind == "value" and b.kind == "value" and a.column == b.column:
            return a, b
        if a.kind != "value" and b.kind != "value":
            column = _number_column(st, a) or _number_column(st, b)
            if column is None:
                continue
            a.column = b.column = column
            return a, b
    return None


def _equals(st: _State, m: Mention) -> Condition:
    value = m.value
    if m.kind in ("number", "year") and isinstance(value, float) and value.is_integer():
        value = int(value)
    op: Op = "=" if m.exact else "contains"
    return Condition(column=m.column, op=op, values=[value], words=st.words_of(m))


_NEGATION = re.compile(
    r"\b(?:not|other than|besides|except|excluding|apart from|aside from|but|never|no|without|outside|n't)\s*$"
)


def _conditions(st: _State, *, skip: set[str]) -> list[Condition]:
    """Every value and number not taken by the form, as a condition (each mention once); values
    after "not", "other than", "besides" are excluded; several values of one column are
    alternatives ("A and B", "A or B": either)."""
    out: list[Condition] = []
    for m in st.values:
        if m in st.used or m.column in skip:
            continue
        st.used.append(m)
        condition = _equals(st, m)
        before = " ".join(st.toks[max(0, m.start - 4) : m.start]).replace(" t ", " n't ")
        if _NEGATION.search(" ".join(w for w in before.split() if w not in _FILLER_WORDS)):
            condition = condition.model_copy(update={"op": "!=" if condition.op == "=" else "not contains"})
        out.append(condition)
    out = _merged(out) + _flags(st, skip)
    for n in st.numbers:
        if n in st.used:
            continue
        placed = _number_condition(st, n)
        if placed is not None:
            st.used.append(n)
            out.append(placed)
    return out


_FILLER_WORDS = frozenset("the a an by from in of to for with".split())


def _flags(st: _State, skip: set[str]) -> list[Condition]:
    """A yes/no column the question names is a condition ("how many workers are married?"),
    false after "not" or "un-"."""
    out = []
    for c in st.columns:
        if c.column in skip or st.table.role(c.column) != "flag":
            continue
        before = " ".join(st.toks[max(0, c.start - 2) : c.start])
        negated = re.search(r"\b(not|never|no)$", before) is not None or st.toks[c.start].startswith("un")
        out.append(Condition(column=c.column, op="=", values=[not negated], words=st.words_of(c)))
    return out


def _merged(conditions: list[Condition]) -> list[Condition]:
    """Equalities on one column become one `in` (and exclusions one `not in`)."""
    out: list[Condition] = []
    for c in conditions:
        same = next((o for o in out if o.column == c.column and {o.op, c.op} <= {"=", "in"}), None)
        if c.op in ("=", "in") and same is not None:
            merged = same.model_copy(
                update={"op": "in", "values": [*same.values, *c.values], "words": f"{same.words}, {c.words}"}
            )
            out[out.index(same)] = merged
            continue
        out.append(c)
    return out


def _number_condition(st: _State, n: Mention) -> Condition | None:
    words = st.words_of(n)
    if n.kind == "month":
        return _month_condition(st, n, words)
    column = _number_column(st, n)
    if column is None:
        return None
    value = int(n.value) if isinstance(n.value, float) and n.value.is_integer() else n.value
    if st.table.is_text(column):  # a year inside text cells ("2005-06 season")
        return Condition(column=column, op="contains", values=[str(value)], words=words)
    if st.table.is_date(column):
        year = int(value)  # type: ignore[call-overload]
        bounds = {">": date(year, 12, 31), ">=": date(year, 1, 1), "<": date(year, 1, 1), "<=": date(year, 12, 31)}
        if n.op in bounds:
            return Condition(column=column, op=n.op, values=[bounds[n.op]], words=words)
        return Condition(column=column, op="year", values=[year], words=words)
    if n.op == "between":
        high = int(n.high) if isinstance(n.high, float) and n.high.is_integer() else n.high
        return Condition(column=column, op="between", values=[value, high], words=words)
    return Condition(column=column, op=n.op, values=[value], words=words)


def _month_condition(st: _State, n: Mention, words: str) -> Condition | None:
    month, year, day = cast(tuple[int, int | None, int | None], n.value)
    dates = [c for c in st.table.columns if st.table.is_date(c)]
    if not dates:
        return None
    if year and day:
        return Condition(column=dates[0], op="=", values=[date(year, month, day)], words=words)
    values: list[int] = [month] + ([year] if year else [])
    return Condition(column=dates[0], op="month", values=values, words=words)


def _number_column(st: _State, n: Mention) -> str | None:
    """The column a number is about: a numeric column named beside it, else the one whose
    values hold it; a year goes to the year or date column, or text cells that hold it."""
    table = st.table
    start = n.op_start if n.op_start is not None else n.start
    numeric = [
        c
        for c in st.columns
        if (table.is_number(c.column) or table.is_date(c.column))
        and (n.op == "=" or table.role(c.column) != "id")  # no "over 5" on an id
    ]
    beside = [c for c in numeric if n.end <= c.start <= n.end + 2 or start - 5 <= c.start < start]
    if n.kind == "year":
        years = [c for c in table.columns if table.is_year(c)] + [c for c in table.columns if table.is_date(c)]
        named = [c.column for c in beside if c.column in years]
        if named or years:
            return (named or years)[0]
        holding = [c for c in table.columns if table.is_text(c) and _holds_token(table, c, str(int(n.value)))]  # type: ignore[call-overload]
        return holding[0] if holding else None
    if beside:
        beside.sort(key=lambda c: min(abs(c.start - n.end), abs(start - c.end)))
        return beside[0].column
    value = n.value
    holding = [
        c for c in table.columns if table.is_number(c) and not table.is_year(c) and value in table.values.get(c, ())
    ]
    if n.op == "=":
        return holding[0] if len(holding) == 1 else None
    in_range = [
        c
        for c in table.columns
        if table.is_number(c)
        and not table.is_year(c)
        and _within(table.context.detected_types[c].min, table.context.detected_types[c].max, value)
    ]
    return in_range[0] if len(in_range) == 1 else (holding[0] if len(holding) == 1 else None)


def _within(low: object, high: object, value: object) -> bool:
    try:
        return float(low) <= float(value) <= float(high)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _holds_token(table: Table, column: str, token: str) -> bool:
    return any(isinstance(v, str) and token in tokens(v) for v in table.values.get(column, ()))


def _best_values(found: list[Mention], columns: list[Mention]) -> list[Mention]:
    """One value per span: whole cells before parts, longer spans before shorter; the same words
    in several columns read in the column the question names, else the first."""
    named = {c.column for c in columns}
    ranked = sorted(found, key=lambda m: (not m.exact, -(m.end - m.start), -m.score, m.column not in named))
    out: list[Mention] = []
    for m in ranked:
        if any(_overlaps(m, kept) for kept in out):
            continue
        # a single word that also names a column ("which nation ...") is the column, not a cell
        if m.end - m.start == 1 and any(c.start == m.start and c.score >= 1 for c in columns) and not m.exact:
            continue
        out.append(m)
    return sorted(out, key=lambda m: m.start)


def _overlaps(a: Mention, b: Mention) -> bool:
    return a.start < b.end and b.start < a.end


_GROUPING = re.compile(r"\b(?:by|per|each|every|across|broken down by|grouped by)\s+(?:the\s+)?(\w+)")
_ANALYSIS = re.compile(
    r"\b(trends?|over time|monthly|weekly|quarterly|yearly|annually|segments?|segmentation|clusters?|correlat\w*|"
    r"forecast\w*|predict\w*|risks?|anomal\w*|outliers?|similar|distribution|breakdown|effect|impact|scenario|"
    r"what if|what would|would happen|if we|suppose|compare|compared|comparison|versus|vs|growth|drivers?|patterns?|"
    r"above average|below average|percentile|grew|grow|growing|losing|project|projected|historically|baseline|"
    r"like the|warning|top and bottom|highest and lowest|stopped|recently|heavy|cheap|expensive|"
    r"trend\w*|changed the most|search for|look for)\b"
)


_QUALIFIER = re.compile(r"\b(?:high|low)-\w+")  # "high-wage workers": a tier of rows, the segmentation's


def _analyses(st: _State) -> list[WordUse]:
    """Breakdowns ("by region", "per month") and analyses ("trend", "segments") that no reading
    form answers: marked not applied, so the reading is not taken as the whole question (the
    agents that group, trend or segment answer it)."""
    out = []
    for m in _GROUPING.finditer(st.text):
        at = len(st.text[: m.start(1)].split())
        if any(c.start == at for c in st.columns) or m.group(1) in ("month", "year", "quarter", "week", "day"):
            out.append(WordUse(words=m.group(0), kind="grouping", read_as="a breakdown", used=False))
    out += [
        WordUse(words=m.group(0), kind="analysis", read_as="an analysis", used=False)
        for m in [*_ANALYSIS.finditer(st.text), *_QUALIFIER.finditer(st.question.lower())]
    ]
    return out


def _accounted(st: _State, reading: TableReading) -> list[WordUse]:
    """Each part of the question that carries meaning, what it was read as, and whether it was used."""
    taken = {*reading.answer, *(c.column for c in reading.conditions), *(o.column for o in reading.options)}
    if reading.measure:
        taken.add(reading.measure)
    if reading.anchor:
        taken.add(reading.anchor.column)
    out: list[WordUse] = []
    conditions = {
        c.words: c for c in [*reading.conditions, *reading.options, *([reading.anchor] if reading.anchor else [])]
    }
    for m in sorted(st.values + st.numbers, key=lambda m: m.start):
        words = st.words_of(m)
        used = m in st.used
        kind = (
            "value"
            if m.kind == "value"
            else "date"
            if m.kind in ("year", "month")
            else ("comparison" if m.op != "=" else "number")
        )
        shown = conditions[words].text() if words in conditions else ("a count of rows" if used else "")
        out.append(WordUse(words=words, kind=kind, read_as=shown, used=used))
    for c in st.columns:
        out.append(WordUse(words=st.words_of(c), kind="column", read_as=c.column, used=c.column in taken))
    return out
