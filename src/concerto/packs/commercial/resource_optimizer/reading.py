"""How `resource_optimizer` reads a question: the units to allocate across, the budget, the
bounds and the locks, from the caller's `by`, `budget`, `min`, `max`, `locked` (and the
`spend` and `outcome` columns), else from the question ("across channels", "a $2M budget",
"increase the budget by 10%", "at least $20k per territory", "no more than $50k on emails",
"keep the speaker event budget at current level"), else defaults: units = channels, budget =
the current monthly spend.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from concerto.agents.base import Unanswered
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.errors import invalid

if TYPE_CHECKING:
    from concerto.data.context import Role
    from concerto.packs.commercial.base.agent import Work

_AMOUNT = r"\$?\s?\d[\d,]*(?:\.\d+)?\s*(?:k|mm|mn|m|million|thousand|bn|billion)?\b"
_WHAT = r"(?P<what>[a-z0-9_ /-]+?)(?=\s*(?:[,.;?!]|\band\b|\bbut\b|\bwhile\b|\bwith\b|$))"
_MIN = re.compile(
    rf"\b(?:at least|no less than|not less than|a minimum of|minimum of|min\.?|a floor of)\s+(?P<amt>{_AMOUNT})"
    rf"\s*(?:a month\s+|per month\s+|monthly\s+)?(?:per|for|on|to|in|of)\s+(?:each\s+|every\s+|the\s+)?{_WHAT}",
    re.I,
)
_MAX = re.compile(
    rf"\b(?:at most|no more than|not more than|a maximum of|maximum of|max\.?|up to|a cap of|capped at)\s+"
    rf"(?P<amt>{_AMOUNT})\s*(?:a month\s+|per month\s+|monthly\s+)?(?:per|for|on|to|in|of)\s+"
    rf"(?:each\s+|every\s+|the\s+)?{_WHAT}",
    re.I,
)
_LOCK = re.compile(
    r"\b(?:keep|hold|lock|freeze|fix|leave|maintain)\s+(?:the\s+|our\s+)?(?P<what>[a-z0-9_ /-]+?)\s*"
    r"(?:budget|spend(?:ing)?|allocation|investment)?\s+(?:at|to|as\s+is|unchanged|flat|constant|fixed|steady|"
    r"where\s+it\s+is|the\s+same)(?:\s+(?:its\s+|the\s+|their\s+)?(?:current|present|today'?s|existing)"
    rf"(?:\s+levels?)?|\s+(?P<amt>{_AMOUNT}))?",
    re.I,
)
_BUDGET = [
    re.compile(rf"(?P<amt>{_AMOUNT})\s+(?:(?:total|monthly|annual|yearly|quarterly|overall)\s+)?budget", re.I),
    re.compile(rf"\bbudget\s+(?:of|is|=|at|to|totall?ing|:)\s+(?P<amt>{_AMOUNT})", re.I),
]
_CHANGE = re.compile(
    r"\b(?P<verb>increas|rais|grow|boost|expand|add|cut|reduc|decreas|lower|trim|shrink|slash)\w*\s+"
    r"(?:(?:the|our|total|overall|monthly|promotion(?:al)?|marketing)\s+)*(?:budget|spend(?:ing)?)\s+by\s+"
    rf"(?P<amt>\d+(?:\.\d+)?\s*(?:%|percent)|{_AMOUNT})",
    re.I,
)
_DOWN = ("cut", "reduc", "decreas", "lower", "trim", "shrink", "slash")


def money(text: str) -> float:
    """`$2M` → 2e6, `500k` → 5e5, `$250,000` → 250000."""
    m = re.fullmatch(r"\$?\s?(\d[\d,]*(?:\.\d+)?)\s*([a-z]*)", text.strip().lower())
    if not m:
        raise ValueError(text)
    scale = {"": 1, "k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "million": 1e6}
    scale |= {"bn": 1e9, "billion": 1e9}
    return float(m.group(1).replace(",", "")) * scale[m.group(2)]


@dataclass
class Request:
    """The optimisation asked for: units, budget, bounds and locks (amounts per month)."""

    by: list[str]
    budget: float | None = None
    budget_from: str = "current monthly spend"
    minimum: dict[str, float] = field(default_factory=dict)  # unit or "*" → amount
    maximum: dict[str, float] = field(default_factory=dict)
    locked: dict[str, float | None] = field(default_factory=dict)  # None: the current level
    budget_change: tuple[str, float] | None = None  # ("percent" | "amount", signed change)
    from_payload: set[str] = field(default_factory=set)  # which of min, max, locked the payload gave
    unanswered: list[Unanswered] = field(default_factory=list)


def read_request(work: Work) -> Request:
    """The units, budget, bounds and locks of the payload, else of the question."""
    source, text = work.source, work.request
    by = _by(work)
    request = Request(by=by)
    lowered = text.lower()
    budget = work.given("budget")
    if budget is not None:
        request.budget = _number(budget, "budget")
        request.budget_from = "the request's budget"
    else:
        for pattern in _BUDGET:
            m = pattern.search(text)
            if m:
                amount = money(m.group("amt"))
                per = 12 if re.search(r"\b(annual|yearly|a year|per year|per annum)\b", lowered) else 1
                per = 3 if per == 1 and re.search(r"\bquarter", lowered) else per
                request.budget = amount / per
                request.budget_from = f"the question: {m.group('amt').strip()}" + (
                    f" a {'year' if per == 12 else 'quarter'}, {amount / per:,.0f} a month" if per > 1 else " a month"
                )
                break
        m = _CHANGE.search(text)
        if m and request.budget is None:
            said = m.group("amt").strip()
            sign = -1.0 if m.group("verb").lower().startswith(_DOWN) else 1.0
            percent = said.endswith(("%", "percent"))
            size = float(re.sub(r"[^\d.]", "", said)) if percent else money(said)
            request.budget_change = ("percent" if percent else "amount", sign * size)
            request.budget_from = f"the question: {m.group(0).strip()}"
    for key, target in (("min", request.minimum), ("max", request.maximum)):
        given = work.given(key) if work.given(key) is not None else work.given(f"{key}imum")
        if given is not None:
            target.update(_amounts(given, key))
            request.from_payload.add(key)
    locked = work.given("locked")
    if locked is not None:
        request.from_payload.add("locked")
        items = locked.items() if isinstance(locked, dict) else [(u, None) for u in _listed(locked)]
        for unit, fixed in items:
            current = fixed is None or str(fixed).lower() in ("current", "keep", "same")
            request.locked[str(unit)] = None if current else _number(fixed, f"locked amount of {unit}")
    if work.given("min") is None and work.given("max") is None:
        for pattern, target in ((_MIN, request.minimum), (_MAX, request.maximum)):
            for m in pattern.finditer(text):
                target[_target(m.group("what"), by, source.columns)] = money(m.group("amt"))
    if locked is None:
        for m in _LOCK.finditer(text):
            what = m.group("what").strip()
            if set(cols.words_of(what)) <= {"total", "overall", "budget", "marketing", "promotion", "promotional"}:
                if m.group("amt") and request.budget is None and request.budget_change is None:
                    request.budget = money(m.group("amt"))  # "keep total spend at $500k": the budget
                    request.budget_from = f"the question: {m.group(0).strip()}"
                continue
            request.locked[what] = money(m.group("amt")) if m.group("amt") else None
    return request


def _by(work: Work) -> list[str]:
    source = work.source
    given = work.given("by")
    if given is not None:
        names = _listed(given)
        if len(names) == 1 and names[0].lower() in ("territory_channel", "territory×channel", "territory x channel"):
            names = ["territory", "channel"]
        return [cols.resolve(source, n, "unit") for n in names]
    text = work.request.lower()
    channel = bool(re.search(r"\bchannels?\b|marketing mix|promotion mix|\bmix\b", text))
    territory = bool(re.search(r"\bterritor(?:y|ies)\b", text))
    if channel and territory and all(c in source.columns for c in ("territory", "channel")):
        return ["territory", "channel"]
    if territory and "territory" in source.columns:
        return ["territory"]
    phrase = cols.segment_phrase(work.request)
    if phrase and not channel:
        found = cols.match_phrase(source, phrase, cols.category_columns(source))
        if found is not None:
            return [found]
    if "channel" in source.columns:
        return ["channel"]
    first = next(iter(cols.category_columns(source)), None)
    if first is None:
        raise invalid(
            f"{source.name} has no category column to allocate across",
            "Name the units with the payload's `by` (e.g. channel or territory).",
            error_type="unknown_column",
        )
    return [first]


def _listed(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,×]|\band\b", value) if v.strip()]
    return [str(v) for v in value]


def _number(value: Any, what: str) -> float:
    try:
        return money(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise invalid(
            f"the {what} '{value}' is not an amount", f"Give the {what} as a number of dollars per month."
        ) from None


def _amounts(given: Any, key: str) -> dict[str, float]:
    if isinstance(given, dict):
        return {str(u): _number(v, f"{key} of {u}") for u, v in given.items()}
    return {"*": _number(given, key)}


def _target(what: str, by: list[str], columns: list[str]) -> str:
    """ "territory" / "each channel" → "*" (every unit) when it names the units' dimension;
    another dimension → "@<column>" (a group constraint); else the unit's name as said."""
    words = cols.words_of(what)
    for column in columns:
        root = column[:-1] if column.endswith("y") else column.rstrip("s")
        if any(w.startswith(root) for w in words):
            return "*" if by == [column] else f"@{column}"
    return what.strip()


def measure_of(work: Work, role: str, default: str, roles: tuple[Role, ...], exclude: str | None = None) -> str:
    """The payload's `role` column (checked numeric), else `default`, else the only column of `roles`."""
    source = work.source
    named = work.given(role)
    if named is not None:
        return cols.numeric(source, cols.resolve(source, str(named), role), role)
    if default in source.columns:
        return cols.numeric(source, default, role)
    options = [c for c in source.columns_with(*roles) if c != exclude]
    if len(options) == 1:
        return options[0]
    raise invalid(
        f"{source.name} has no '{default}' column",
        f"Name the {role} column with the payload's `{role}`: one of {', '.join(cols.numeric_columns(source))}.",
        error_type="missing_column",
    )
