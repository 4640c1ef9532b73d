"""A learned choice of the column a question asks for (issue 28 item 7): a logistic model over
features of each candidate column, trained on WikiTableQuestions' training split by
`scripts/train_column_ranker.py` and shipped as `column_ranker.json` (a few dozen numbers).

The rules of `answer.py` stay: what they pick is one feature among others (the column named
after the question word, a column of names for "who", of dates for "when", the column's
kind, position and values), and without the weights file the rules decide alone. No model is
downloaded and nothing runs but a dot product per column.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from concerto.packs.analytics.table.mentions import Mention, Table

WEIGHTS = Path(__file__).with_name("column_ranker.json")
FEATURES = (
    "rule_pick", "head_named", "mentioned", "mentioned_early", "first_column", "position", "first_text",
    "is_text", "is_number", "is_time", "names_share", "distinct_share",
    "who_names", "when_time", "how_number", "which_text", "where_place", "near_head", "noun_likeness",
)  # fmt: skip
_PLACE = frozenset("venue location city place stadium country nation town site arena ground host state region".split())


@dataclass(frozen=True)
class Candidate:
    """One column and its features."""

    column: str
    features: dict[str, float]


def candidates(
    toks: list[str], columns: list[Mention], table: Table, skip: set[str], rule: str, head: str | None
) -> list[Candidate]:
    """Every column the answer could come from (those not used by the reading's conditions),
    with its features."""
    from concerto.packs.analytics.table.answer import head_position, name_share
    from concerto.packs.analytics.table.mentions import column_words

    at = head_position(toks)
    noun = toks[at : at + 2] if at is not None else []

    text = " ".join(toks)
    who = re.match(r"^(?:who|whom|whose)\b", text) is not None
    when = re.match(r"^(?:when|what (?:year|date|day|month|season|time))\b", text) is not None
    how = re.match(r"^how (?:many|much|long|far|old|tall|big)\b", text) is not None
    which = re.match(r"^(?:which|what|name|list)\b", text) is not None
    where = re.match(r"^(?:where|in (?:what|which) (?:city|country|place|venue))\b", text) is not None
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
        place = any(w in _PLACE for w in re.findall(r"[a-z]+", column.lower()))
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
        out.append(Candidate(column, f))
    return out


def _likeness(noun: list[str], name: list[str]) -> float:
    """How alike the asked noun and a column's name are, letter by letter (0-1): "nation" and
    "nationality", "song" and "songs"."""
    if not noun or not name:
        return 0.0
    return max(difflib.SequenceMatcher(None, a, b).ratio() for a in noun for b in name)


@functools.lru_cache(maxsize=1)
def weights() -> dict[str, float] | None:
    """The trained weights, or None when the file is absent or was fitted on other features
    (the rules then decide: refit with scripts/train_column_ranker.py)."""
    if not WEIGHTS.exists():
        return None
    data = json.loads(WEIGHTS.read_text(encoding="utf-8"))
    if set(data["weights"]) != set(FEATURES):
        return None
    return {name: float(data["weights"][name]) for name in FEATURES} | {"bias": float(data["bias"])}


def score(candidate: Candidate, w: dict[str, float]) -> float:
    """The model's probability that this column holds the answer."""
    z = w["bias"] + sum(w[name] * candidate.features[name] for name in FEATURES)
    return 1 / (1 + math.exp(-z))


def best(found: list[Candidate]) -> str | None:
    """The column the model ranks first; None without weights or candidates."""
    w = weights()
    if w is None or not found:
        return None
    return max(found, key=lambda c: score(c, w)).column
