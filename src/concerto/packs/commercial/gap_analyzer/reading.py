"""How `gap_analyzer` reads a question: the analysis (gaps, a change between periods, or
both), the columns (the caller's `actual`, `potential`, `segment`, `period_column`,
`periods`, `split`, `segments`; else the question: "actual new Rx", "by specialty", "from
2025 to 2026"; else the built-in data set's defaults: total_rx, rx_potential, territory, the
baseline and recent periods) and the segments asked about.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from concerto.agents.base import Unanswered
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.methods import decompose
from concerto.packs.commercial.methods.errors import PeriodError

if TYPE_CHECKING:
    import pandas as pd

    from concerto.packs.commercial.base.agent import Work

_GAP_CUE = re.compile(r"\b(gaps?|potential|headroom|white ?space|untapped|shortfall|below|short of)\b", re.I)
_CHANGE_CUE = re.compile(
    r"\b(chang\w*|decompos\w*|volume|mix|rate effects?|drop(?:ped)?|declin\w*|grew|rose|fell|shift\w*|"
    r"between (?:the )?periods|period over period|year over year|yoy|bridge|waterfall)\b",
    re.I,
)


def for_brand(work: Work) -> str:
    return f" for {work.brand}" if work.brand else ""


def analysis_type(work: Work) -> str:
    given = work.given("analysis_type")
    if given is not None:
        value = str(given).lower()
        if value in ("gap", "change", "both"):
            return value
        if value in ("decomposition", "change_decomposition", "period_change"):
            return "change"
        return "gap"
    change = bool(_CHANGE_CUE.search(work.request)) or work.given("period_column") is not None
    gap = bool(_GAP_CUE.search(work.request))
    return "both" if change and gap else "change" if change else "gap"


def segment_of(work: Work, unanswered: list[Unanswered]) -> str:
    source = work.source
    if work.given("segment") is not None:
        return cols.resolve(source, str(work.given("segment")), "segment")
    phrase = cols.segment_phrase(work.request)
    candidates = [
        c
        for c in source.columns
        if c != "brand"
        and (
            source.detected_types[c].role in ("category", "label", "id", "time", "flag")
            or source.detected_types[c].distinct <= 100
        )
    ]
    default = "territory" if "territory" in source.columns else next(iter(cols.category_columns(source)), None)
    if phrase and cols.words_of(phrase):
        found = cols.match_phrase(source, phrase, candidates)
        if found is not None:
            return found
        if default is not None:
            unanswered.append(
                Unanswered(
                    part=f"breakdown by '{phrase}'",
                    reason=f"no column of {source.name} is '{phrase}'; the gaps are by {default}",
                    error_type="unknown_column",
                    suggestion=f"Break down by one of: {', '.join(candidates)}",
                )
            )
    if default is None:
        raise invalid(
            f"{source.name} has no category column to break the gaps down by",
            "Name the segment column with the payload's `segment`.",
            error_type="unknown_column",
        )
    return default


def potential_of(work: Work, *, required: bool) -> str | None:
    source = work.source
    if work.given("potential") is not None:
        return cols.numeric(source, cols.resolve(source, str(work.given("potential")), "potential"), "potential")
    numeric = cols.numeric_columns(source)
    found = "rx_potential" if "rx_potential" in numeric else None
    found = found or next((c for c in numeric if "potential" in cols.column_words(source, c)), None)
    if found is None and required:
        raise invalid(
            f"{source.name} has no potential column to measure gaps against",
            "Name it with the payload's `potential` (a numeric column of the same unit as the actual), "
            "or ask for a change between periods instead.",
            error_type="missing_column",
            numeric_columns=numeric,
        )
    return found


def actual_of(work: Work, exclude: set[str | None]) -> str:
    source = work.source
    named = work.given("actual") or work.given("outcome")
    if named is not None:
        return cols.numeric(source, cols.resolve(source, str(named), "actual"), "actual")
    text = work.request
    phrase = cols.segment_phrase(text)
    if phrase:
        text = text.replace(phrase, " ")
    said = set(cols.words_of(text))
    measures = [c for c in source.columns_with("measure", "money") if c not in exclude]
    scored = sorted(
        ((len(cols.words_of(c)), c) for c in measures if cols.words_of(c) and set(cols.words_of(c)) <= said),
        reverse=True,
    )
    if scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
        return scored[0][1]
    if "total_rx" in source.columns:
        return "total_rx"
    raise invalid(
        f"the question names no actual column of {source.name}",
        f"Name it with the payload's `actual`: one of {', '.join(measures) or 'none'}.",
        error_type="missing_column",
    )


def period_column_of(work: Work) -> str | None:
    source = work.source
    if work.given("period_column") is not None:
        return cols.resolve(source, str(work.given("period_column")), "period column")
    time = source.semantic_profile.time_column
    if time in source.columns and len(set(decompose.YEAR.findall(work.request))) >= 2:
        return time  # "from 2025 to 2026": the years of the time column
    if "period" in source.columns and source.detected_types["period"].role in ("category", "label"):
        return "period"
    if time in source.columns:
        return time
    raise invalid(
        f"{source.name} has no period or time column to compare two periods",
        "Name the column with the payload's `period_column` and its two values with `periods`.",
        error_type="missing_column",
    )


def focus_of(work: Work, frame: pd.DataFrame, segment: str, unanswered: list[Unanswered]) -> list[str]:
    """Segment values the user asked about (payload `segments`, or values named in the question)."""
    given = work.given("segments")
    known = {str(v).lower(): str(v) for v in work.source.detected_types[segment].categories}
    if given is None:
        said = set(re.findall(r"[a-z0-9][a-z0-9_-]*", work.request.lower()))
        asked = [v for k, v in known.items() if k in said]
    else:
        asked = [str(v) for v in ([given] if isinstance(given, str | int | float) else given)]
    if not asked:
        return []
    present = {str(v).lower(): str(v) for v in frame[segment].unique()}
    found = [present[a.lower()] for a in asked if a.lower() in present]
    missing = [a for a in asked if a.lower() not in present]
    if missing and not found:
        raise invalid(
            f"no rows{for_brand(work)} for {segment} {', '.join(missing)}",
            f"Choose {segment} values that have data, e.g. {', '.join(sorted(present)[:6])}.",
            error_type="segment_not_found",
            segments=missing,
        )
    for m in missing:
        unanswered.append(
            Unanswered(
                part=f"{segment} '{m}'", reason=f"no rows{for_brand(work)} for it", error_type="segment_not_found"
            )
        )
    return found


def periods_of(work: Work, frame: pd.DataFrame, column: str) -> decompose.Periods:
    """The two periods of the change, from the payload, the question or the data (see
    `decompose.choose_periods`), as a user-facing failure when they cannot be had."""
    profile = work.source.detected_types[column]
    given = work.given("periods")
    if given is None and work.given("baseline") is not None and work.given("recent") is not None:
        given = [work.given("baseline"), work.given("recent")]
    time = work.source.semantic_profile.time_column
    try:
        return decompose.choose_periods(
            frame[column],
            column,
            is_time=profile.role == "time" or "DATE" in profile.type.upper(),
            given=given,
            split=work.given("split"),
            text=work.request,
            times=frame[time] if time in frame.columns else None,
        )
    except PeriodError as exc:
        where = f" (brand {work.brand})" if work.brand else ""
        raise invalid(f"{exc}{where}", exc.suggestion or "", error_type=exc.error_type, **exc.details) from None
