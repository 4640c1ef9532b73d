"""How `heterogeneous_optimizer` reads a question: the treatment, outcome and covariates as
`causal_impact` reads them (the caller's `treatment`, `outcome`, `covariates`; else the
question's "effect of X on Y" and "adjusting for ..."; else the built-in data's increased
sampling → new Rx adjusted for decile and specialty), the segment from the caller's
`segment`, the question's "by specialty" or a segment column it names, else specialty; and
the estimator asked for.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.data import BRANDS, CONFOUNDERS
from concerto.packs.commercial.base.errors import invalid

if TYPE_CHECKING:
    from concerto.data.context import DataContext
    from concerto.packs.commercial.base.agent import Work

_RESPOND = re.compile(
    r"\b(?:respon\w*|react\w*|benefit\w*|gain\w*)\s+(?:\w+\s+)?(?:to|from)\s+(?P<t>.+?)"
    r"(?:\s+(?:for|in|among|across|by|per|on)\b|[?.!,]|$)",
    re.IGNORECASE,
)
_EFFECTS = re.compile(
    r"\b(?:cates?|effects|treatment effects?|uplift|lift)\s+(?:of|from)\s+(?P<t>.+?)\s+on\s+(?P<y>.+?)"
    r"(?:\s+(?:for|in|among|across|by|per)\b|[?.!,]|$)",
    re.IGNORECASE,
)
_FOCUS = re.compile(r"\b(?:focus|target|prioriti[sz]e)\s+(?P<t>.+?)\s+(?:for|on|in|among|at)\b", re.IGNORECASE)
_ECONML = re.compile(r"\b(?:econml|double machine learning|dml)\b", re.IGNORECASE)


def treatment_and_outcome(work: Work) -> tuple[str, str]:
    """The treatment (preferring 0/1 columns) and the outcome the payload or question names."""
    source, text = work.source, work.request
    pair = cols.cause_and_effect(text)
    m = _EFFECTS.search(text)
    t_phrase = (m.group("t") if m else None) or (pair[0] if pair else None)
    y_phrase = (m.group("y") if m else None) or (pair[1] if pair else None)
    explicit = t_phrase is not None  # "effect of X on Y": a phrase naming no column is an error, not a default
    if t_phrase is None:
        found = _RESPOND.search(text) or _FOCUS.search(text)
        t_phrase = found.group("t") if found else None
    treatment = work.given("treatment")
    if treatment is not None:
        t_col: str | None = cols.resolve(source, str(treatment), "treatment")
    else:
        binary = [c for c in cols.numeric_columns(source) if source.detected_types[c].distinct == 2]
        t_col = (
            (cols.match_phrase(source, t_phrase, binary) or cols.match_phrase(source, t_phrase)) if t_phrase else None
        )
        if t_col is None and explicit:
            _unmatched(work, "treatment", str(t_phrase))
        t_col = t_col or work.column("treatment", None, default="increased_sampling")
    if work.given("outcome") is None and y_phrase and cols.match_phrase(source, y_phrase) is None:
        _unmatched(work, "outcome", y_phrase)
    y_col = work.column("outcome", y_phrase, default="new_rx")
    if t_col is None or y_col is None:
        role = "treatment" if t_col is None else "outcome"
        raise invalid(
            f"the question names no {role} column of {source.name}",
            f"Say it as 'effect of <treatment> on <outcome> by <segment>', or set '{role}' to one of: "
            f"{', '.join(cols.numeric_columns(source))}",
            error_type="missing_column",
            role=role,
        )
    if t_col == y_col:
        raise invalid(
            f"the treatment and the outcome are the same column ({t_col})",
            "Name a different outcome, e.g. 'effect of sampling on new Rx'.",
            error_type="invalid_column",
        )
    return t_col, y_col


def _unmatched(work: Work, role: str, phrase: str) -> None:
    """Refuse a phrase that names no column (unless it only names the brand: "sampling on Kisqali")."""
    brand = work.source.detected_types.get("brand")
    brands = {str(b).lower() for b in [*BRANDS, *(brand.categories if brand else [])]}
    content = [w for w in cols.words_of(phrase) if w not in brands]
    if content:
        raise invalid(
            f"no column of {work.source.name} matches the {role} '{phrase}'",
            f"Name the {role} as a column: {', '.join(cols.numeric_columns(work.source))}",
            error_type="unknown_column",
            role=role,
        )


def _segment_candidates(source: DataContext, exclude: set[str]) -> list[str]:
    """Columns a segment can be: categories, and numbers with few values (deciles)."""
    out = []
    for c in source.columns:
        p = source.detected_types[c]
        if c in exclude or p.role in ("id", "time", "text"):
            continue
        if p.role in ("category", "label", "flag") or (p.distinct and p.distinct <= 12):
            out.append(c)
    return out


def segment_of(work: Work, exclude: set[str]) -> str:
    """The payload's `segment`, else the breakdown the question asks for, else specialty."""
    source = work.source
    if work.given("segment") is not None:
        return cols.resolve(source, str(work.given("segment")), "segment")
    candidates = _segment_candidates(source, exclude)
    phrase = cols.segment_phrase(work.request)
    if phrase:
        found = cols.match_phrase(source, _singular(phrase), candidates)
        if found is not None:
            return found
    words = set(re.findall(r"[a-z0-9]+", work.request.lower().replace("-", " ")))
    for c in candidates:
        name = c.replace("_", " ")
        if {name, name + "s", name[:-1] + "ies" if name.endswith("y") else name} & words:
            return c
    default = "specialty" if "specialty" in candidates else next(iter(candidates), None)
    if default is None:
        raise invalid(
            f"{source.name} has no column to segment by",
            "Set 'segment' to a category column of the source.",
            error_type="missing_column",
            role="segment",
        )
    return default


def _singular(phrase: str) -> str:
    return re.sub(r"ies\b", "y", phrase)


def covariates_of(work: Work, exclude: set[str]) -> list[str]:
    """The payload's covariates, else the question's "adjusting for ...", else the built-in
    confounders, else every other numeric or category column (said in the notes)."""
    source = work.source
    given = work.given("covariates")
    if given is not None:
        names = [s.strip() for s in given.split(",")] if isinstance(given, str) else [str(g) for g in given]
        return [c for c in (cols.resolve(source, n, "covariate") for n in names if n) if c not in exclude]
    phrases = cols.adjusted_for(work.request)
    if phrases:
        found = [cols.match_phrase(source, p) for p in phrases]
        missing = [p for p, f in zip(phrases, found, strict=True) if f is None]
        if missing:
            raise invalid(
                f"no column of {source.name} matches {', '.join(repr(m) for m in missing)}",
                f"Adjust for columns of the source: {', '.join(source.columns)}",
                error_type="unknown_column",
            )
        return [f for f in dict.fromkeys(found) if f is not None and f not in exclude]
    known = [c for c in CONFOUNDERS if c in source.columns and c not in exclude]
    if known:
        return known
    others = [
        c
        for c in source.columns
        if c not in exclude and source.detected_types[c].role in ("measure", "money", "flag", "category", "label")
    ]
    work.notes.append(f"no covariates named: adjusted for every other column ({', '.join(others)})")
    return others


def method_asked(work: Work) -> tuple[str, str]:
    """The estimator asked for (the caller's `method`, else econml when the question names it,
    else dr_learner) and the nuisance models (linear, or boosting when asked for)."""
    wanted = str(work.given("method") or ("econml" if _ECONML.search(work.request) else "dr_learner")).lower()
    learner = "boosting" if work.given("nuisance") == "boosting" else "linear"
    return wanted, learner
