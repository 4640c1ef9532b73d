"""Which columns of a source a question (or a payload) means: the treatment, the outcome,
the covariates, a segment or the time column, checked against the source's data context.

A name given in the payload must be a column (its logical name or its exact name); a
phrase of the question ("increased sampling", "prescriptions", "by specialty") is matched
to the column whose name or description shares the most words with it.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from concerto.agents.base import AgentFailure
from concerto.contracts.common import ErrorKind

if TYPE_CHECKING:
    from concerto.data.context import DataContext

# Words of the trade that column names abbreviate.
_SYNONYMS = {
    "prescription": "rx",
    "prescriptions": "rx",
    "script": "rx",
    "scripts": "rx",
    "nrx": "rx",
    "trx": "rx",
    "sample": "samples",
    "sampling": "samples",
    "detail": "calls",
    "details": "calls",
    "detailing": "calls",
    "visit": "calls",
    "visits": "calls",
    "email": "emails",
    "doctor": "hcp",
    "doctors": "hcp",
    "physician": "hcp",
    "physicians": "hcp",
    "hcps": "hcp",
    "earnings": "re78",
}
_STOP = frozenset(
    "a an and the of on in for to by with per what whats what's is are was were how much many does do did "
    "effect impact influence increase increased more higher our my their its it this that these those "
    "over across between from at as be been".split()
)


def _stem(word: str) -> str:
    word = _SYNONYMS.get(word, word)
    if word.endswith("ies") and len(word) > 4:  # territories → territory, specialties → specialty
        return word[:-3] + "y"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def words_of(text: str) -> list[str]:
    """The content words of `text`, singular, with trade abbreviations (prescriptions → rx)."""
    return [_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower().replace("_", " ")) if w not in _STOP]


def column_words(source: DataContext, column: str) -> set[str]:
    """Words naming a column: its own and its description's before the colon."""
    described = source.describe(column).split(":")[0]
    return set(words_of(column)) | set(words_of(described))


def match_phrase(source: DataContext, phrase: str, columns: list[str] | None = None) -> str | None:
    """The column of `columns` (default: all) that `phrase` names best, or None."""
    wanted = set(words_of(phrase))
    if not wanted:
        return None
    best: tuple[float, str] | None = None
    for column in columns if columns is not None else source.columns:
        have = column_words(source, column)
        own = set(words_of(column))
        score = len(wanted & have) + 0.5 * len(wanted & own) - 0.01 * len(have - wanted)
        if wanted & have and (best is None or score > best[0]):
            best = (score, column)
    return best[1] if best else None


def resolve(source: DataContext, name: str, role: str) -> str:
    """The column `name` (exact or logical) of `source`, or an `unknown_column` failure naming
    the closest columns."""
    found = source.column_of(name) or source.column_of(name.strip().lower().replace(" ", "_"))
    if found is not None:
        return found
    close = difflib.get_close_matches(name.lower(), source.columns, n=3, cutoff=0.5)
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    raise AgentFailure(
        f"the {role} '{name}' is not a column of {source.name}.{hint}",
        error_type="unknown_column",
        kind=ErrorKind.VALIDATION,
        suggestion=f"Columns of {source.name}: {', '.join(source.columns)}",
        details={"role": role, "column": name, "source": source.name},
    )


def numeric(source: DataContext, column: str, role: str) -> str:
    """`column` if it holds numbers, else an `invalid_column` failure saying so."""
    profile = source.detected_types[column]
    if profile.role not in ("measure", "money", "flag") and not _numeric_type(profile.type):
        raise AgentFailure(
            f"the {role} '{column}' holds {profile.type.lower()} values ({profile.role}), not numbers",
            error_type="invalid_column",
            kind=ErrorKind.VALIDATION,
            suggestion=f"Choose a numeric {role}: {', '.join(numeric_columns(source)) or 'none in this source'}",
            details={"role": role, "column": column},
        )
    return column


def numeric_columns(source: DataContext) -> list[str]:
    return [
        c
        for c in source.columns
        if source.detected_types[c].role in ("measure", "money", "flag") or _numeric_type(source.detected_types[c].type)
    ]


def category_columns(source: DataContext) -> list[str]:
    return [c for c in source.columns if source.detected_types[c].role in ("category", "label", "flag")]


def _numeric_type(sql_type: str) -> bool:
    return any(t in sql_type.upper() for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "NUMERIC", "REAL"))


_CAUSE = re.compile(
    r"\b(?:effect|impact|influence|lift|uplift|causal effect)\s+(?:of|from)\s+(?P<t>.+?)\s+"
    r"(?:on|upon)\s+(?P<y>.+?)(?:\s+(?:for|in|among|across|adjust\w*|control\w*|by|per|among)\b|[?.!,]|$)",
    re.IGNORECASE,
)
_DOES = re.compile(
    r"\b(?:does|do|did|will|would)\s+(?P<t>.+?)\s+(?:increase|raise|lift|drive|affect|change|improve|boost|cause)\s+"
    r"(?P<y>.+?)(?:\s+(?:for|in|among|across|by|per)\b|[?.!,]|$)",
    re.IGNORECASE,
)
_ADJUST = re.compile(
    r"\b(?:adjust\w*|control\w*|accounting)\s+(?:for\s+)?(?P<c>.+?)(?:[?.!]|$)",
    re.IGNORECASE,
)
_BY = re.compile(
    r"\b(?:by|per|across|for each|for every|among)\s+(?P<s>[a-z][a-z _-]*?)(?:\b(?:and|with|in|for)\b|[?.!,]|$)",
    re.IGNORECASE,
)


def cause_and_effect(text: str) -> tuple[str, str] | None:
    """("increased sampling", "Kisqali prescriptions") from "impact of increased sampling on
    Kisqali prescriptions", or None when the question has no such phrase."""
    m = _CAUSE.search(text) or _DOES.search(text)
    return (m.group("t").strip(), m.group("y").strip()) if m else None


def adjusted_for(text: str) -> list[str]:
    """The phrases after "adjusting for" / "controlling for" ("decile and specialty" → two)."""
    m = _ADJUST.search(text)
    if not m:
        return []
    return [p.strip() for p in re.split(r",|\band\b", m.group("c")) if p.strip()]


def segment_phrase(text: str) -> str | None:
    """The breakdown a question asks for ("by specialty", "per territory"), or None."""
    m = _BY.search(text)
    return m.group("s").strip() if m else None
