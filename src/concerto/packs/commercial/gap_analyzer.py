"""`gap_analyzer` (001): potential against actual by territory or segment, the largest gaps
and their share of the total gap, with cluster-bootstrap intervals; and a change between two
periods split into volume, mix and rate effects that add up exactly to the change.

The columns come from the payload (`actual`, `potential`, `segment`, `period_column`,
`periods`, `split`), else from the question ("actual new Rx", "by specialty", "from 2025 to
2026"), else from the built-in data set's defaults (total_rx, rx_potential, territory; the
baseline and recent periods). The statistics are in `decompose.py`.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial import columns as cols
from concerto.packs.commercial import decompose
from concerto.packs.commercial._base import Answer, CommercialAgent, Table, Work, invalid

TOP = 3
MIN_ROWS = 10
MAX_SEGMENTS = 10_000
_GAP_CUE = re.compile(r"\b(gaps?|potential|headroom|white ?space|untapped|shortfall|below|short of)\b", re.I)
_CHANGE_CUE = re.compile(
    r"\b(chang\w*|decompos\w*|volume|mix|rate effects?|drop(?:ped)?|declin\w*|grew|rose|fell|shift\w*|"
    r"between (?:the )?periods|period over period|year over year|yoy|bridge|waterfall)\b",
    re.I,
)


class GapAnalyzerAgent(CommercialAgent):
    """Potential vs actual by segment, and volume / mix / rate decomposition of a change."""

    info = AgentInfo(
        name="gap_analyzer",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Finds the gaps between actual performance and potential (e.g. prescriptions against Rx potential) "
            "by territory, region, specialty or any segment: the largest gaps, as a share of potential and of the "
            "total gap, with bootstrap intervals; and explains a change between two periods as volume, mix and "
            "rate effects that add up exactly."
        ),
        capabilities=[
            "Rank territories or segments by their gap to potential (absolute and relative)",
            "Share of the total gap held by the largest gaps, with confidence intervals",
            "Find under-performing territories with headroom for growth",
            "Decompose a change between two periods into volume, mix and rate effects",
            "Compare a baseline period with a recent one by segment",
        ],
        inputs={
            "actual": "Column of actual performance (default total_rx)",
            "potential": "Column of potential (default rx_potential)",
            "segment": "Column to break down by (default territory)",
            "segments": "Optional segment values to report on",
            "analysis_type": "gap, change or both (default: from the question)",
            "period_column": "Column naming the periods (default period), with `periods` [from, to]",
            "split": "A date splitting the time column into two periods",
        },
        outputs={
            "largest_gaps": "The largest gaps with their gap share and share of the total gap (95% CIs)",
            "top_segments": "Segments with the largest gap share, their pooled gap share and share of the total",
            "change": "Total change and its volume, mix and rate effects with 95% intervals",
        },
        examples=[
            "Which territories have the biggest gap vs potential?",
            "Where is Kisqali furthest below its Rx potential?",
            "Show potential vs actual prescriptions by region for Fabhalta",
            "What share of the total opportunity sits in the top three territories?",
            "Which specialties are under-performing against potential for Remibrutinib?",
            "Where is the untapped headroom in new Rx by territory?",
            "Why did Kisqali total Rx change between baseline and recent? Split it into volume, mix and rate",
            "Decompose the change in new prescriptions from 2025 to 2026 by specialty",
            "How much of the growth in Fabhalta scripts came from mix versus rate?",
            "Rank regions by shortfall to market potential",
        ],
        default_timeout_ms=20000,
    )

    def analyse(self, work: Work) -> Answer:
        source = work.source
        kind = _analysis_type(work)
        unanswered: list[Unanswered] = []
        segment = _segment(work, unanswered)
        potential = _potential(work, required=kind != "change")
        actual = _actual(work, exclude={segment, potential})
        cluster = source.semantic_profile.entity_key
        cluster = cluster if cluster in source.columns and cluster not in (segment,) else None
        period_col = _period_column(work) if kind != "gap" else None
        time = source.semantic_profile.time_column if kind != "gap" else None
        time = time if time in source.columns else None
        wanted = [segment, actual, *([potential] if potential else []), *([cluster] if cluster else [])]
        wanted += [c for c in (period_col, time) if c]
        frame = work.frame(list(dict.fromkeys(wanted)))
        if len(frame) < MIN_ROWS:
            raise invalid(
                f"only {len(frame)} rows{_for_brand(work)} have {', '.join(wanted)}: too few to estimate gaps",
                f"Use a source or brand with at least {MIN_ROWS} rows.",
                error_type="too_few_rows",
            )
        n_segments = frame[segment].nunique()
        if n_segments > MAX_SEGMENTS:
            raise invalid(
                f"'{segment}' has {n_segments:,} distinct values: too many segments to compare",
                "Break down by a coarser column (territory, region, specialty).",
                error_type="too_many_segments",
            )
        focus = _focus(work, frame, segment, unanswered)
        answer = Answer(payload={"analysis_type": kind, "segment_column": segment, "actual_column": actual}, summary="")
        if kind in ("gap", "both"):
            assert potential is not None
            _gap_answer(work, answer, frame, segment, actual, potential, cluster, focus)
        if kind in ("change", "both"):
            _change_answer(work, answer, frame, segment, actual, cluster, period_col)
        answer.unanswered += unanswered
        answer.entities.update(
            {"segment": segment, "actual": actual, **({"potential": potential} if potential else {})}
        )
        return answer


# --- reading the question ----------------------------------------------------------------


def _analysis_type(work: Work) -> str:
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


def _segment(work: Work, unanswered: list[Unanswered]) -> str:
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


def _potential(work: Work, *, required: bool) -> str | None:
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


def _actual(work: Work, exclude: set[str | None]) -> str:
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


def _period_column(work: Work) -> str | None:
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


def _focus(work: Work, frame: pd.DataFrame, segment: str, unanswered: list[Unanswered]) -> list[str]:
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
            f"no rows{_for_brand(work)} for {segment} {', '.join(missing)}",
            f"Choose {segment} values that have data, e.g. {', '.join(sorted(present)[:6])}.",
            error_type="segment_not_found",
            segments=missing,
        )
    for m in missing:
        unanswered.append(
            Unanswered(
                part=f"{segment} '{m}'", reason=f"no rows{_for_brand(work)} for it", error_type="segment_not_found"
            )
        )
    return found


def _plural(noun: str) -> str:
    return noun if noun.endswith("s") else f"{noun[:-1]}ies" if noun.endswith("y") else f"{noun}s"


def _for_brand(work: Work) -> str:
    return f" for {work.brand}" if work.brand else ""


# --- gaps ---------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if abs(x) >= 0.095 else f"{100 * x:.1f}%"


def _gap_answer(
    work: Work,
    answer: Answer,
    frame: pd.DataFrame,
    segment: str,
    actual: str,
    potential: str,
    cluster: str | None,
    focus: list[str],
) -> None:
    top = min(TOP, max(1, frame[segment].nunique() // 2))
    result = decompose.gaps(frame, segment, actual, potential, cluster, top_k=top)
    if result.total_potential <= 0:
        raise invalid(
            f"the potential '{potential}' sums to {result.total_potential:g}{_for_brand(work)}: "
            "gaps need a positive potential",
            "Choose a potential column measured in the same unit as the actual.",
            error_type="invalid_column",
        )
    t = result.table
    total_share = result.total_gap / result.total_potential
    noun = segment.replace("_", " ")
    plural = _plural(noun)
    unit = f"resampling {cluster} values with all their rows" if cluster else "resampling rows"

    def row(r: Any) -> dict[str, Any]:
        return {
            segment: r.segment,
            "actual": round(float(r.actual), 2),
            "potential": round(float(r.potential), 2),
            "gap": round(float(r.gap), 2),
            "gap_share": round(float(r.gap_share), 4),
            "gap_share_ci": [round(float(r.gap_share_low), 4), round(float(r.gap_share_high), 4)],
            "share_of_total_gap": round(float(r.share_of_total_gap), 4),
            "share_of_total_gap_ci": [
                round(float(r.share_of_total_gap_low), 4),
                round(float(r.share_of_total_gap_high), 4),
            ],
            "rows": int(r.rows),
        }

    by_share = t.sort_values("gap_share", ascending=False, kind="stable")
    tops = result.top_segments
    share, s_lo, s_hi = result.top_gap_share
    of_total, o_lo, o_hi = result.top_share_of_total
    answer.payload.update(
        {
            "potential_column": potential,
            "total_actual": round(result.total_actual, 2),
            "total_potential": round(result.total_potential, 2),
            "total_gap": round(result.total_gap, 2),
            "total_gap_share": round(total_share, 4),
            "largest_gaps": [row(r) for r in t.head(top).itertuples()],
            "largest_relative_gaps": [row(r) for r in by_share.head(top).itertuples()],
            "top_segments": {
                "segments": tops,
                "gap_share": round(share, 4),
                "gap_share_ci": [round(s_lo, 4), round(s_hi, 4)],
                "share_of_total_gap": round(of_total, 4),
                "share_of_total_gap_ci": [round(o_lo, 4), round(o_hi, 4)],
                "ranking_stability": round(result.top_stability, 3),
            },
            "gaps": [row(r) for r in t.itertuples()],
            "uncertainty": {
                "method": f"percentile bootstrap, {unit}"
                + (f" (the rows of one {cluster} are not independent)" if cluster else ""),
                "replicates": result.replicates,
                "level": 0.95,
            },
        }
    )
    if focus:
        answer.payload["requested_segments"] = [row(r) for r in t[t["segment"].isin(focus)].itertuples()]
    head = f"Top {len(tops)} {plural} ({', '.join(tops)})"
    finding = (
        f"{head} are {_pct(share)} below potential (95% CI {_pct(s_lo)}–{_pct(s_hi)}) and hold {_pct(of_total)} "
        f"of the total gap (95% CI {_pct(o_lo)}–{_pct(o_hi)})"
    )
    largest = t.iloc[0]
    answer.key_findings += [
        finding,
        f"Largest absolute gap: {noun} {largest.segment}, {largest.gap:,.0f} {actual} below potential "
        f"({_pct(float(largest.share_of_total_gap))} of the total gap)",
        f"Overall {actual} is {_pct(total_share)} below {potential} ({result.total_gap:,.0f} in all)",
        f"The same top {len(tops)} come out in {_pct(result.top_stability)} of {result.replicates} bootstrap samples",
    ]
    answer.payload["interpretation"] = f"{finding}{_for_brand(work)}."
    answer.summary = answer.payload["interpretation"]
    answer.recommendations.append(
        f"Prioritise {', '.join(tops)}: closing half their gap would add about "
        f"{(of_total * result.total_gap) / 2:,.0f} {actual}."
    )
    answer.follow_ups += [
        f"What drives the gap in {tops[0]}?",
        f"How should budget be reallocated across {plural}?",
    ]
    cols_show = [segment, "actual", "potential", "gap", "gap_share", "share_of_total_gap"]
    rows = [{k: v for k, v in row(r).items() if k in cols_show} for r in t.itertuples()]
    answer.tables.append(Table(f"Gap to potential by {noun}", rows, chart="bar", x=segment, y=["gap"]))
    answer.tables.append(
        Table(f"Actual vs potential by {noun}", rows, chart="bar", x=segment, y=["actual", "potential"])
    )


# --- change between two periods ---------------------------------------------------------


def _periods(work: Work, frame: pd.DataFrame, column: str) -> decompose.Periods:
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
    except decompose.PeriodError as exc:
        where = f" (brand {work.brand})" if work.brand else ""
        raise invalid(f"{exc}{where}", exc.suggestion, error_type=exc.error_type, **exc.details) from None


def _change_answer(
    work: Work,
    answer: Answer,
    frame: pd.DataFrame,
    segment: str,
    outcome: str,
    cluster: str | None,
    period_col: str | None,
) -> None:
    assert period_col is not None
    periods = _periods(work, frame, period_col)
    keep = periods.code >= 0
    data = frame[keep].reset_index(drop=True)
    code = periods.code[keep].reset_index(drop=True)
    time = work.source.semantic_profile.time_column
    months: tuple[int, int] | None = None
    if work.given("per_month") is not False and time in data.columns:
        counts = pd.Series(pd.to_datetime(data[time]).to_numpy()).groupby(code.to_numpy()).nunique()
        months = (int(counts.get(0, 1)), int(counts.get(1, 1)))
    result = decompose.change(data, segment, outcome, code, cluster, months)
    total = result.total
    effects = {name: result.effect(name) for name in ("volume", "mix", "rate")}
    residual = total - sum(effects.values())
    level = "per month" if months else "in total"
    (a, b) = periods.labels
    by_segment = [
        {
            segment: s,
            f"{outcome}_{a}": round(float(y0), 3),
            f"{outcome}_{b}": round(float(y1), 3),
            "change": round(float(y1 - y0), 3),
            "volume_effect": round(float(v), 3),
            "mix_effect": round(float(m), 3),
            "rate_effect": round(float(r), 3),
        }
        for s, y0, y1, v, m, r in zip(
            result.segments, result.y0, result.y1, result.volume, result.mix, result.rate, strict=True
        )
    ]
    by_segment.sort(key=lambda r: -abs(r["change"]))
    answer.payload["change"] = {
        "outcome": outcome,
        "periods": [a, b],
        "periods_from": periods.how,
        "per_month": months is not None,
        "months": list(months) if months else None,
        "before": round(float(result.y0.sum()), 4),
        "after": round(float(result.y1.sum()), 4),
        "total_change": total,
        "volume_effect": effects["volume"],
        "mix_effect": effects["mix"],
        "rate_effect": effects["rate"],
        "identity_residual": residual,
        "confidence_intervals": {k: [round(v[0], 4), round(v[1], 4)] for k, v in result.intervals.items()},
        "method": "Shapley (symmetric) decomposition of Σ volume × mix × rate; 95% cluster-bootstrap intervals",
        "new_segments": result.new_segments,
        "vanished_segments": result.vanished_segments,
        "rate_convention": "a segment present in one period only takes its rate from the other period "
        "(its appearance counts as mix, not rate)",
        "by_segment": by_segment[:50],
    }
    direction = "rose" if total > 0 else "fell" if total < 0 else "did not change"
    lo, hi = result.intervals["total"]
    finding = (
        f"{outcome} {level} {direction} by {abs(total):,.1f} from {a} to {b} (95% CI {lo:,.1f} to {hi:,.1f}): "
        f"volume {effects['volume']:+,.1f}, mix {effects['mix']:+,.1f}, rate {effects['rate']:+,.1f}"
    )
    answer.key_findings.append(finding)
    driver = max(effects, key=lambda k: abs(effects[k]))
    answer.key_findings.append(
        f"The {driver} effect drives most of the change; the largest segment change is {by_segment[0][segment]} "
        f"({by_segment[0]['change']:+,.1f})"
    )
    if result.new_segments or result.vanished_segments:
        answer.key_findings.append(
            f"New {_plural(segment)}: {', '.join(result.new_segments) or 'none'}; "
            f"gone: {', '.join(result.vanished_segments) or 'none'}"
        )
    answer.summary = f"{answer.summary} {finding}.".strip() if answer.summary else f"{finding}."
    answer.payload.setdefault("interpretation", f"{finding}.")
    answer.tables.append(
        Table(
            f"Change in {outcome} from {a} to {b}: volume, mix and rate",
            [{"effect": k, "value": round(v, 4)} for k, v in effects.items()]
            + [{"effect": "total", "value": round(total, 4)}],
            chart="bar",
            x="effect",
            y=["value"],
        )
    )
    answer.tables.append(Table(f"Change in {outcome} by {segment}", by_segment, chart="table"))
