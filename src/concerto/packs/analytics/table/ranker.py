"""A learned choice of the column a question asks for (issue 28 item 7): a logistic model over
features of each candidate column (built by `answer.candidates`), trained on WikiTableQuestions' training split by
`python -m scripts.train_column_ranker` and shipped as `column_ranker.json` (a few dozen numbers).

The rules of `answer.py` stay: what they pick is one feature among others (the column named
after the question word, a column of names for "who", of dates for "when", the column's
kind, position and values), and without the weights file the rules decide alone. No model is
downloaded and nothing runs but a dot product per column.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

WEIGHTS = Path(__file__).with_name("column_ranker.json")
MAX_COLUMNS = 200  # wider tables are left to the rules: features are computed for every column
FEATURES = (
    "rule_pick", "head_named", "mentioned", "mentioned_early", "first_column", "position", "first_text",
    "is_text", "is_number", "is_time", "names_share", "distinct_share",
    "who_names", "when_time", "how_number", "which_text", "where_place", "near_head", "noun_likeness",
)  # fmt: skip


@dataclass(frozen=True)
class Candidate:
    """One column and its features."""

    column: str
    features: dict[str, float]


@functools.lru_cache(maxsize=1)
def weights() -> dict[str, float] | None:
    """The trained weights, or None when the file is absent or was fitted on other features
    (the rules then decide: refit with `python -m scripts.train_column_ranker`)."""
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
