"""Which columns a question asks for ("which team ...": Team; "who ...": the column of names;
"when ...": the date or year) and which column it measures ("the most points": Points).

Read from the question's head and the table's own columns and values: "who" is the column
whose cells read as names of people or things, "when" the time column, "where" a column of
places named so or the one the question's values are not in.
"""

from __future__ import annotations

import difflib
import re

from concerto.packs.analytics.table import ranker
from concerto.packs.analytics.table.mentions import Mention, Table, column_words, tokens

_HEAD = re.compile(
    r"^(?:(?:in|on|during|for|of|at|from|to|by|with|according to)\s+(?:what|which)\s+|"
    r"(?:what|which|whose|name|list|tell me|give me|find|identify|show)\s+(?:(?:is|are|was|were)\s+)?(?:the\s+)?"
    r"(?:(?:only|other|first|last|top|next|previous|same)\s+)?)"
)
_WHO = re.compile(r"^(?:who|whom|whose)\b|^(?:name|list|identify)\s+(?:the\s+|a\s+|someone|somebody|the\s+person)")
_WHEN = re.compile(r"^(?:when|what (?:year|date|day|month|season|time)|in (?:what|which) (?:year|season|month))\b")
_WHERE = re.compile(r"^(?:where|in (?:what|which) (?:city|country|place|venue|location|stadium))\b")
_MODIFIERS = frozenset(
    "name names title of the a an only other first last next previous same top main opening final latest earliest "
    "one two three".split()
)
_NAME = re.compile(r"^[A-Z][\w'.-]+(?: (?:[A-Z][\w'.-]+|de|da|van|von|del|la|le|di|of|the|and|&))*$")


def head_position(toks: list[str]) -> int | None:
    """Where the noun the question asks about starts ("which team": 1; "what is the name of the
    next venue": the venue's), or None when it opens otherwise ("who", "how many")."""
    m = _HEAD.match(" ".join(toks))
    if m is None:
        return None
    at = len(m.group(0).split())
    while at < len(toks) and toks[at] in _MODIFIERS:
        at += 1
    return at


def head_column(question: str, toks: list[str], columns: list[Mention], skip: set[str]) -> str | None:
    """The column named right after the question word ("which team", "what year", "the
    nation that ..."), when one is."""
    at = head_position(toks)
    if at is None:
        return None
    near = [c for c in columns if c.column not in skip and at <= c.start <= at + 2]
    near.sort(key=lambda c: (c.start, -c.score))
    return near[0].column if near else None


def asked_columns(question: str, toks: list[str], columns: list[Mention], table: Table, skip: set[str]) -> list[str]:
    """The column whose values answer: the learned ranker's choice over every free column, with
    the rules' choice as one of its features (`ranker.py`); the rules' alone without weights."""
    rule = rule_columns(question, toks, columns, table, skip)
    head = head_column(question, toks, columns, skip)
    if len(table.columns) > ranker.MAX_COLUMNS:  # a wide table: the rules alone (features per column)
        return rule
    chosen = ranker.best(candidates(toks, columns, table, skip, rule[0], head))
    return [chosen] if chosen else rule


def rule_columns(question: str, toks: list[str], columns: list[Mention], table: Table, skip: set[str]) -> list[str]:
    """The columns whose values answer by the rules, best first (never empty for a table with a
    column left)."""
    text = " ".join(toks)
    named = head_column(question, toks, columns, skip)
    if named:
        return [named]
    free = [c for c in table.columns if c not in skip] or table.columns
    if _WHEN.match(text):
        timely = [c for c in free if table.is_date(c) or table.is_year(c) or "date" in tokens(c) or "year" in tokens(c)]
        if timely:
            return timely[:1]
    if _WHO.match(text):
        # "who was sent home ...": a text column named right after "who was" holds the answer
        said = [c.column for c in columns if c.column in free and c.start <= 3 and table.is_text(c.column)]
        if said and re.match(r"^(?:who|whom)\s+(?:is|was|were|are|has|had)\b", text):
            return said[:1]
        people = names_column(table, free)
        if people:
            return [people]
    if _WHERE.match(text):
        places = [c for c in free if any(w in _PLACE_WORDS for w in tokens(c))]
        if places:
            return places[:1]
    text_columns = [c for c in free if table.is_text(c)]
    return [names_column(table, free) or (text_columns or free)[0]]


_PLACE_WORDS = frozenset(
    "venue location city place stadium country nation town site arena ground host where state region".split()
)


def name_share(table: Table, column: str) -> float:
    """The share of a text column's values that read as names ("Jeff Gordon", "Real Madrid"),
    once per column and loaded table (`Table.cache`)."""
    key = f"names:{column}"
    if key not in table.cache:
        values = [v for v in table.values.get(column, []) if isinstance(v, str)][:200] if table.is_text(column) else []
        table.cache[key] = sum(bool(_NAME.match(v.strip())) for v in values) / len(values) if values else 0.0
    return table.cache[key]


def names_column(table: Table, columns: list[str]) -> str | None:
    """The first text column whose cells read as names: most values capitalised words."""
    best, best_share = None, 0.0
    for column in columns:
        share = name_share(table, column)
        if share > best_share + 0.15:  # the first column wins unless a later one is clearly more name-like
            best, best_share = column, share
    return best if best_share >= 0.5 else None


def measure_near(
    columns: list[Mention], table: Table, after: int, skip: set[str], *, numeric: bool = True
) -> str | None:
    """The numeric column named at or after token `after` (else before it, nearest first)."""
    usable = [
        c
        for c in columns
        if c.column not in skip and (not numeric or (table.is_number(c.column) and table.role(c.column) != "id"))
    ]
    later = sorted((c for c in usable if c.start >= after), key=lambda c: (c.start, -c.score))
    if later:
        return later[0].column
    earlier = sorted((c for c in usable if c.start < after), key=lambda c: (-c.start, -c.score))
    return earlier[0].column if earlier else None


# Adjectives that say which way a measure is read, and what kind of column they measure.
ADJECTIVES: dict[str, tuple[bool, tuple[str, ...]]] = {
    "longest": (True, ("length", "time", "duration", "long", "distance", "km", "miles", "days", "years", "laps")),
    "shortest": (False, ("length", "time", "duration", "distance", "km", "miles", "days", "years", "laps")),
    "tallest": (True, ("height", "tall", "feet", "ft", "metres", "m", "floors", "elevation")),
    "highest": (True, ("height", "elevation", "altitude", "score", "points", "rank", "rating")),
    "heaviest": (True, ("weight", "mass", "kg", "lbs", "tonnage", "tons")),
    "lightest": (False, ("weight", "mass", "kg", "lbs", "tonnage", "tons")),
    "oldest": (False, ("year", "born", "date", "founded", "established", "built", "opened", "age")),
    "earliest": (False, ("year", "date", "time", "born", "founded", "established", "opened", "season")),
    "latest": (True, ("year", "date", "time", "season")),
    "newest": (True, ("year", "date", "built", "opened", "founded")),
    "youngest": (True, ("year", "born", "date", "age")),
    "fastest": (False, ("time", "duration")),
    "slowest": (True, ("time", "duration")),
    "biggest": (True, ("size", "area", "capacity", "population", "attendance")),
    "largest": (True, ("size", "area", "capacity", "population", "attendance")),
    "smallest": (False, ("size", "area", "capacity", "population", "attendance")),
    "most populous": (True, ("population",)),
    "deepest": (True, ("depth",)),
    "richest": (True, ("wealth", "worth", "income", "gdp")),
}


def adjective_measure(word: str, table: Table, skip: set[str]) -> str | None:
    """The numeric (or date) column an adjective measures ("tallest": Height), by its name."""
    hints = ADJECTIVES.get(word, (True, ()))[1]
    for column in table.columns:
        if column in skip or not (table.is_number(column) or table.is_date(column)):
            continue
        if any(w in hints or w.rstrip("s") in hints for w in tokens(column)):
            return column
    return None


# -- the learned ranker's features (ranker.py) -------------------------------------------


def candidates(
    toks: list[str], columns: list[Mention], table: Table, skip: set[str], rule: str, head: str | None
) -> list[ranker.Candidate]:
    """Every column the answer could come from (those not used by the reading's conditions),
    with its features."""
    at = head_position(toks)
    noun = toks[at : at + 2] if at is not None else []

    text = " ".join(toks)
    who, when, where = (pattern.match(text) is not None for pattern in (_WHO, _WHEN, _WHERE))
    how = re.match(r"^how (?:many|much|long|far|old|tall|big)\b", text) is not None
    which = re.match(r"^(?:which|what|name|list)\b", text) is not None
    free = [c for c in table.columns if c not in skip] or table.columns
    first_text = next((c for c in free if table.is_text(c)), None)
    rows = max(table.context.row_count, 1)
    out = []
    for i, column in enumerate(table.columns):
        if column not in free:
            continue
        said = [m.start for m in columns if m.column == column]
        time = table.is_date(column) or table.is_year(column)
        names = name_share(table, column)
        place = any(w in _PLACE_WORDS for w in re.findall(r"[a-z]+", column.lower()))
        f = {
            "rule_pick": float(column == rule),
            "head_named": float(column == head),
            "mentioned": float(bool(said)),
            "mentioned_early": 1 / (1 + min(said)) if said else 0.0,
            "first_column": float(i == 0),
            "position": i / max(len(table.columns) - 1, 1),
            "first_text": float(column == first_text),
            "is_text": float(table.is_text(column)),
            "is_number": float(table.is_number(column)),
            "is_time": float(time),
            "names_share": names,
            "distinct_share": min(table.context.detected_types[column].distinct / rows, 1.0),
            "who_names": names if who else 0.0,
            "when_time": float(when and time),
            "how_number": float(how and table.is_number(column)),
            "which_text": float(which and table.is_text(column)),
            "where_place": float(where and place),
            "near_head": float(at is not None and any(at <= s <= at + 3 for s in said)),
            "noun_likeness": _likeness(noun, column_words(column)),
        }
        out.append(ranker.Candidate(column, f))
    return out


def _likeness(noun: list[str], name: list[str]) -> float:
    """How alike the asked noun and a column's name are, letter by letter (0-1): "nation" and
    "nationality", "song" and "songs"."""
    if not noun or not name:
        return 0.0
    return max(difflib.SequenceMatcher(None, a, b).ratio() for a in noun for b in name)
