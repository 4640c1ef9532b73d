"""The orchestrator side of the agreement: a plain-language question to a `KPIQuery`.

Dates follow the spec's rules relative to the context clock; names are matched to what
the store holds (see matching.py). Failures are `AgentFailure`s a user can act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from concerto.agents.base import AgentFailure, Unanswered
from concerto.contracts.common import ErrorKind
from concerto.nlp.periods import unread
from concerto.packs.kpi.asks import Analysis, read_analysis
from concerto.packs.kpi.dates import Period, PeriodError, find_period, find_periods
from concerto.packs.kpi.formats import NAME, KPIQuery
from concerto.packs.kpi.matching import (
    NameMatch,
    closest,
    leftover_words,
    match_all,
    match_names,
    normalize,
    unknown_beside_names,
)
from concerto.packs.kpi.months import Month

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder
    from concerto.packs.kpi.catalog import Catalog

MAX_REQUEST_CHARS = 1000
ASSUMED = "last month (assumed)"
MAX_SERIES = 200
# The spec lets the agent read `last|previous N months` itself: `kpi-… department-… last 3 months`.
_PARTIAL = re.compile(rf"^\s*kpi-(?P<kpi>{NAME})\s+department-(?P<department>{NAME})\s+(?P<rest>.{{1,100}}?)\s*$")


def too_long(text: str) -> AgentFailure:
    return AgentFailure(
        f"The question is {len(text)} characters; the KPI agent reads at most {MAX_REQUEST_CHARS}.",
        error_type="invalid_input",
        kind=ErrorKind.VALIDATION,
        suggestion="Ask for one KPI, one department and one period, e.g. 'home-loan attrition rate last month'.",
    )


def unknown_name(kind: str, written: str, suggestions: list[str], known: list[str]) -> AgentFailure:
    """An unknown or missing KPI/department, with the closest stored names."""
    label = "KPI" if kind == "kpi" else "department"
    message = f"No {label} in the store matches '{written}'." if written else f"The question names no {label}."
    if suggestions:
        message += f" Closest {label}s: {', '.join(suggestions)}."
    return AgentFailure(
        message,
        error_type=f"unknown_{kind}" if written else f"missing_{kind}",
        kind=ErrorKind.VALIDATION,
        suggestion=f"Known {label}s: {', '.join(known[:20])}",
        details={"kind": kind, "written": written, "suggestions": suggestions},
    )


READABLE = (
    "Name a month ('March 2025', '2025-03'), a range ('from February to May 2025'), a quarter or half "
    "('Q1 2025', 'H2 2024'), a year ('in 2024') or a period relative to today ('last month', "
    "'previous 4 months', 'this year', 'next quarter')."
)


def invalid_period(phrase: str, reason: str) -> AgentFailure:
    """A period the calendar does not have ("Q5 2025", "February 30 2025") or that no rule reads.

    The spec's "structured error message" when date parsing fails; never another period.
    """
    return AgentFailure(
        f"'{phrase}' is not a period the KPI agent can answer for: {reason}.",
        error_type="invalid_date",
        kind=ErrorKind.VALIDATION,
        suggestion=READABLE,
        details={"period": phrase, "reason": reason},
    )


def period_query(kpi: str, department: str, period: Period) -> KPIQuery:
    """Single month → format 1; last/previous N months → format 3; other ranges → format 2."""
    if period.single:
        return KPIQuery(kpi=kpi, department=department, month=period.first.first_day)
    return KPIQuery(
        kpi=kpi,
        department=department,
        start=period.first.first_day,
        end=period.last.last_day,
        range_months=period.last_n,
    )


def partial_format(text: str, today: date) -> KPIQuery | None:
    """`kpi-{kpi} department-{department} <period in words>` as a query, else None.

    The period must be the whole rest of the text ("last 3 months", "previous month"),
    so a malformed agreed-format query still gets the invalid-format answer.
    """
    m = _PARTIAL.match(text)
    if m is None:
        return None
    try:
        period = find_period(m["rest"], today)
    except PeriodError as exc:
        raise invalid_period(exc.phrase, exc.reason) from None
    if period is None or period.phrase != m["rest"].strip():
        return None
    return period_query(m["kpi"], m["department"], period)


@dataclass
class Request:
    """A question as agreed-format queries (one per series) and what to do with them."""

    queries: list[KPIQuery]
    analysis: Analysis
    interpretation: dict[str, Any]
    unanswered: list[Unanswered] = field(default_factory=list)
    expanded: bool = False  # "every department" / "all KPIs": keep only the series the store holds

    @property
    def single(self) -> bool:
        """One series and nothing to do with it but report it: the agreed format alone says it."""
        return len(self.queries) == 1 and self.analysis == Analysis()


def _described(match: NameMatch) -> dict[str, Any]:
    return {"name": match.name, "from": match.text, "method": match.method, "score": round(match.score, 3)}


def read_request(request: str, today: date, catalog: Catalog, embedder: Embedder) -> Request:
    """Every series a question names (KPIs x departments x periods) and the analysis it asks.

    "operating cost of personal-loan and home-loan in Q1 2025" is two series compared;
    "which team had the lowest NPS in April 2025?" ranks every department; "total revenue
    of home-loan this year" is one series and its total. A name written beside the named
    ones that the store does not hold ("home-loan and atlantis") is an `Unanswered` part.
    """
    if len(request) > MAX_REQUEST_CHARS:
        raise too_long(request)
    text = normalize(request)
    try:
        periods = find_periods(text, today)
    except PeriodError as exc:
        raise invalid_period(exc.phrase, exc.reason) from None
    assumed = not periods
    if not periods:  # no period named: the spec's default unit is the last month (the answer says so)
        month = Month.of(today).shift(-1)
        periods = [Period(month, month, phrase=ASSUMED)]
    taken = [p.span for p in periods if p.span != (0, 0)]
    kpis = match_all(text, catalog, embedder, "kpi", taken, semantic=False)
    departments = match_all(text, catalog, embedder, "department", taken, semantic=False)
    reading = read_analysis(text, taken)
    taken += reading.spans
    kpis += match_all(text, catalog, embedder, "kpi", taken, literal=False, found=kpis)
    departments += match_all(text, catalog, embedder, "department", taken, literal=False, found=departments)
    kpi_names = _names(kpis) or (catalog.names("kpi") if reading.all_kpis else [])
    dept_names = _names(departments) or (catalog.names("department") if reading.all_departments else [])
    if not kpi_names:
        raise _missing("kpi", text, taken, catalog, embedder)
    if not dept_names:
        raise _missing("department", text, taken, catalog, embedder)
    queries = [period_query(k, d, p) for p in periods for k in kpi_names for d in dept_names]
    if len(queries) > MAX_SERIES:
        raise AgentFailure(
            f"The question asks for {len(queries)} series; the KPI agent compares at most {MAX_SERIES}.",
            error_type="invalid_input",
            kind=ErrorKind.VALIDATION,
            suggestion="Name fewer KPIs, departments or periods.",
        )
    analysis = reading.analysis
    if analysis.kind == "series" and len(queries) > 1:
        analysis = analysis.model_copy(update={"kind": "compare"})
    left = unread(text, taken + [m.span for m in kpis + departments])
    if left is not None and assumed:  # a time word no rule reads: never answer another period instead
        raise invalid_period(left, "it names no month, quarter, half or year the agent reads")
    unanswered = [
        Unanswered(
            part=f"'{word}'",
            reason=f"written beside the names asked about, but the store holds no "
            f"{_KINDS[kind] if kind else 'KPI or department'} of that name"
            + _closest_hint(word, kind, catalog, embedder),
            error_type=f"unknown_{kind}" if kind else "unknown_name",
            suggestion="`concerto kpi names` lists what the store holds.",
        )
        for word, kind in unknown_beside_names(text, kpis + departments, taken)
    ]
    if left is not None:
        unanswered.append(
            Unanswered(
                part=f"'{left}'",
                reason="not read as a period, so the answer covers only "
                + " and ".join(f"'{p.phrase}'" for p in periods),
                error_type="invalid_date",
                kind=ErrorKind.VALIDATION,
                suggestion=READABLE,
            )
        )
    how: dict[str, Any] = {
        "period": periods[0].phrase if len(periods) == 1 else [p.phrase for p in periods],
        "period_assumed": assumed,
        "kpi": _described(kpis[0]) if len(kpis) == 1 else [_described(m) for m in kpis] or "every KPI",
        "department": _described(departments[0])
        if len(departments) == 1
        else [_described(m) for m in departments] or "every department",
        "analysis": analysis.model_dump(exclude_defaults=True) or {"kind": "series"},
    }
    expanded = (not departments and reading.all_departments) or (not kpis and reading.all_kpis)
    return Request(queries, analysis, how, unanswered, expanded)


def _names(matches: list[NameMatch]) -> list[str]:
    return list(dict.fromkeys(m.name for m in matches if m.name))


def _missing(kind: str, text: str, taken: list[tuple[int, int]], catalog: Catalog, embedder: Embedder) -> AgentFailure:
    """No name of `kind` in the question: the closest stored names to what is left of it."""
    rest = " ".join(leftover_words(text, taken))
    found = match_names(rest, catalog, embedder, (kind,))[kind] if rest else None
    suggestions = found.suggestions if found else catalog.names(kind)[:3]
    return unknown_name(kind, found.text if found else "", suggestions, catalog.names(kind))


_KINDS = {"kpi": "KPI", "department": "department"}


def _closest_hint(word: str, kind: str | None, catalog: Catalog, embedder: Embedder) -> str:
    kinds = (kind,) if kind else ("department", "kpi")
    names = [n for k in kinds for n in closest(word, k, catalog, embedder, k=3 if kind else 2)]
    return f" (closest: {', '.join(names)})" if names else ""
