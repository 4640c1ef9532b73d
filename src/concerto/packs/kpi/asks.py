"""What a KPI question asks of its series: one series, a comparison, a ranking, a total.

The agreed format of 000 names one series (a KPI, a department, a period). A question
about several is several agreed-format queries plus one `Analysis` saying what to do with
them: compare them, rank them (highest or lowest, top N, by value or by change), or give
their total or average over the range. The agent receives both on the wire (the queries
as agreed-format strings), so a caller can send the same thing without natural language.

The words read here are the agent's own small grammar of comparison (the router holds
no keyword lists); they are found after the KPI and department names are taken, so
"average handling time" stays a KPI and is not read as "average".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from concerto.nlp.numbers import number_words_pattern, word_number

Kind = Literal["series", "compare", "rank"]
Measure = Literal["value", "average", "total", "change"]
Order = Literal["highest", "lowest", "best", "worst"]
MAX_RANK = 100


class Analysis(BaseModel):
    """What to do with the series of a KPI request (the wire form, beside the queries)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind = "series"
    measure: Measure | None = Field(
        None, description="value of one month; average (default for a range), total or change over the range"
    )
    order: Order = "highest"
    n: int | None = Field(None, ge=1, le=MAX_RANK, description="top/bottom N; none: every series, ranked")


_N = rf"(?P<n>\d{{1,3}}|{number_words_pattern()})"
_HIGH = r"highest|most|largest|biggest|greatest|maximum|max|top|best|leading|higher|more|bigger|larger|better"
_LOW = r"lowest|least|smallest|fewest|minimum|min|bottom|worst|lower|less|fewer|smaller|worse"
_JUDGED = {"best": "best", "better": "best", "leading": "best", "worst": "worst", "worse": "worst"}
_RISE = (
    r"rise|rises|rose|risen|increase|increased|increases|grew|growth|grown|gain|gains|jump|jumped|improved|improvement"
)
_FALL = (
    r"fall|falls|fell|fallen|drop|drops|dropped|decline|declined|declines|decrease|decreased|decreases|shrank|shrunk"
)
_UNIT = r"(?:departments?|teams?|business\s+lines?|units?|divisions?|lines\s+of\s+business|depts?)"

_RANK_N = re.compile(rf"\b(?P<o>{_HIGH}|{_LOW})\s+{_N}\b(?!\s*(?:months?|years?|quarters?|weeks?|days?)\b)")
_ORDER = re.compile(rf"\b(?P<o>{_HIGH}|{_LOW})\b")
_CHANGE = re.compile(rf"\b(?P<c>{_RISE}|{_FALL})\b")
_WHICH = re.compile(rf"\b(?:which|what|who)\s+(?:\w+\s+)?{_UNIT}\b|\bwho\s+(?:had|has|have|was|is)\b")
_RANKING = re.compile(r"\b(?:rank|ranked|ranking|rankings|sort|sorted|order|ordered|league\s+table)\b")
_ALL_UNITS = re.compile(
    rf"\b(?:every|all|each|across|all\s+the|across\s+the|all\s+of\s+the)\s+{_UNIT}\b"
    rf"|\b(?:by|per|for\s+each|for\s+every)\s+{_UNIT}\b|\bdepartment[\s-]?wide\b|\bcompany[\s-]?wide\b"
)
_ALL_KPIS = re.compile(r"\b(?:every|all|each|all\s+the)\s+(?:kpis?|metrics|indicators|figures|numbers)\b")
_COMPARE = re.compile(r"\b(?:compare|compared|comparing|comparison|vs|versus|against|difference|differ|than)\b")
_TOTAL = re.compile(r"\b(?:total|totals|sum|summed|overall|cumulative|combined|altogether)\b")
_AVERAGE = re.compile(r"\b(?:average|averages|averaged|mean|avg)\b")


@dataclass
class Reading:
    """The analysis a question asks for, and the character spans its words took."""

    analysis: Analysis
    all_departments: bool = False
    all_kpis: bool = False
    spans: list[tuple[int, int]] = field(default_factory=list)


def _free(m: re.Match[str], taken: list[tuple[int, int]]) -> bool:
    return not any(m.start() < t[1] and t[0] < m.end() for t in taken)


def _hits(pattern: re.Pattern[str], text: str, taken: list[tuple[int, int]]) -> list[re.Match[str]]:
    return [m for m in pattern.finditer(text) if _free(m, taken)]


def read_analysis(text: str, taken: list[tuple[int, int]]) -> Reading:
    """The analysis asked for in `text` (lower-case), ignoring the spans already `taken` by names."""
    spans: list[tuple[int, int]] = []

    def first(pattern: re.Pattern[str]) -> re.Match[str] | None:
        found = _hits(pattern, text, taken + spans)
        if found:
            spans.append(found[0].span())
        return found[0] if found else None

    all_units = first(_ALL_UNITS) is not None
    all_kpis = first(_ALL_KPIS) is not None
    which = first(_WHICH)
    ranked = first(_RANKING)
    ranked_n = first(_RANK_N)
    change = first(_CHANGE)
    order_word = ranked_n or first(_ORDER)
    compare = first(_COMPARE)
    total = first(_TOTAL)
    average = first(_AVERAGE)

    measure: Measure | None = "total" if total else "average" if average else None
    order: Order = "highest"
    if order_word is not None and re.fullmatch(_LOW, order_word["o"]):
        order = "lowest"
    if order_word is not None and order_word["o"] in _JUDGED and change is None:
        order = "best" if _JUDGED[order_word["o"]] == "best" else "worst"  # which way is good: per KPI
    if change is not None:
        measure = "change"
        if re.fullmatch(_FALL, change["c"]):  # "the biggest fall" is the most negative change
            order = "highest" if order_word is not None and re.fullmatch(_LOW, order_word["o"]) else "lowest"
    n = _count(ranked_n["n"]) if ranked_n else None
    kind: Kind = "series"
    comparative = order_word is not None and order_word["o"] in ("higher", "lower", "more", "less", "better", "worse")
    if ranked or ranked_n or which or (order_word is not None and not comparative) or (change and order_word):
        kind = "rank"
        if which is not None and n is None and order_word is not None:
            n = 1  # "which team had the lowest NPS": the one team, the others listed after it
    elif compare or comparative:
        kind = "compare"
    analysis = Analysis(kind=kind, measure=measure, order=order, n=n)
    return Reading(analysis, all_units or (kind == "rank" and not all_kpis), all_kpis, spans)


def _count(text: str) -> int | None:
    value = int(text) if text.isdigit() else word_number(text)
    return None if value is None else max(1, min(value, MAX_RANK))
