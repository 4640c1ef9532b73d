"""The orchestrator side of the agreement: a plain-language question to a `KPIQuery`.

Dates follow the spec's rules relative to the context clock; names are matched to what
the store holds (see matching.py). Failures are `AgentFailure`s a user can act on.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING, Any

from concerto.agents.base import AgentFailure
from concerto.contracts.common import ErrorKind
from concerto.packs.kpi.dates import Period, PeriodError, find_period
from concerto.packs.kpi.formats import NAME, KPIQuery, invalid_date
from concerto.packs.kpi.matching import match_names
from concerto.packs.kpi.months import Month

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder
    from concerto.packs.kpi.catalog import Catalog

MAX_REQUEST_CHARS = 1000
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


def interpret(request: str, today: date, catalog: Catalog, embedder: Embedder) -> tuple[KPIQuery, dict[str, Any]]:
    """The agreed-format query for a question, and how each part was understood."""
    if len(request) > MAX_REQUEST_CHARS:
        raise too_long(request)
    try:
        period = find_period(request, today)
    except PeriodError as exc:
        raise invalid_date("period", exc.phrase, exc.reason) from None
    assumed = period is None
    if period is None:  # no period named: the spec's default unit is the last month
        month = Month.of(today).shift(-1)
        period = Period(month, month, phrase="last month (assumed)")
    rest = request[: period.span[0]] + " " + request[period.span[1] :]
    found = match_names(rest, catalog, embedder)
    for kind in ("kpi", "department"):
        match = found[kind]
        if match.name is None:
            raise unknown_name(kind, match.text, match.suggestions, catalog.names(kind))
    query = period_query(found["kpi"].name or "", found["department"].name or "", period)
    return query, {
        "period": period.phrase,
        "period_assumed": assumed,
        "kpi": {
            "name": found["kpi"].name,
            "from": found["kpi"].text,
            "method": found["kpi"].method,
            "score": round(found["kpi"].score, 3),
        },
        "department": {
            "name": found["department"].name,
            "from": found["department"].text,
            "method": found["department"].method,
            "score": round(found["department"].score, 3),
        },
    }


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
        raise invalid_date("period", exc.phrase, exc.reason) from None
    if period is None or period.phrase != m["rest"].strip():
        return None
    return period_query(m["kpi"], m["department"], period)
