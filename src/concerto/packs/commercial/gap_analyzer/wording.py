"""How `gap_analyzer` words its answer: the gaps (the top segments' pooled gap share and share
of the total gap with their intervals, the largest gap, the overall gap, how stable the top
set is) and the change between two periods (volume, mix and rate effects), each added to one
`Answer` with its findings and tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from concerto.packs.commercial.base.agent import Answer, Table, Work
from concerto.packs.commercial.gap_analyzer.reading import for_brand

if TYPE_CHECKING:
    from concerto.packs.commercial.methods import decompose


def _plural(noun: str) -> str:
    return noun if noun.endswith("s") else f"{noun[:-1]}ies" if noun.endswith("y") else f"{noun}s"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if abs(x) >= 0.095 else f"{100 * x:.1f}%"


# --- gaps ---------------------------------------------------------------------------------


def _gap_row(r: Any, segment: str) -> dict[str, Any]:
    """One segment's line of the gap table, rounded, with its intervals."""
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


def gap_answer(
    work: Work,
    answer: Answer,
    result: decompose.Gaps,
    columns: tuple[str, str, str],
    cluster: str | None,
    focus: list[str],
) -> None:
    """Add the gaps of `result` (by segment, of actual against potential: `columns`) to `answer`."""
    segment, _, potential = columns
    t = result.table
    top = result.top_k
    unit = f"resampling {cluster} values with all their rows" if cluster else "resampling rows"
    by_share = t.sort_values("gap_share", ascending=False, kind="stable")
    share, s_lo, s_hi = result.top_gap_share
    of_total, o_lo, o_hi = result.top_share_of_total
    answer.payload.update(
        {
            "potential_column": potential,
            "total_actual": round(result.total_actual, 2),
            "total_potential": round(result.total_potential, 2),
            "total_gap": round(result.total_gap, 2),
            "total_gap_share": round(result.total_gap / result.total_potential, 4),
            "largest_gaps": [_gap_row(r, segment) for r in t.head(top).itertuples()],
            "largest_relative_gaps": [_gap_row(r, segment) for r in by_share.head(top).itertuples()],
            "top_segments": {
                "segments": result.top_segments,
                "gap_share": round(share, 4),
                "gap_share_ci": [round(s_lo, 4), round(s_hi, 4)],
                "share_of_total_gap": round(of_total, 4),
                "share_of_total_gap_ci": [round(o_lo, 4), round(o_hi, 4)],
                "ranking_stability": round(result.top_stability, 3),
            },
            "gaps": [_gap_row(r, segment) for r in t.itertuples()],
            "uncertainty": {
                "method": f"percentile bootstrap, {unit}"
                + (f" (the rows of one {cluster} are not independent)" if cluster else ""),
                "replicates": result.replicates,
                "level": 0.95,
            },
        }
    )
    if focus:
        answer.payload["requested_segments"] = [_gap_row(r, segment) for r in t[t["segment"].isin(focus)].itertuples()]
    _gap_findings(work, answer, result, columns)
    noun = segment.replace("_", " ")
    cols_show = [segment, "actual", "potential", "gap", "gap_share", "share_of_total_gap"]
    rows = [{k: v for k, v in _gap_row(r, segment).items() if k in cols_show} for r in t.itertuples()]
    answer.tables.append(Table(f"Gap to potential by {noun}", rows, chart="bar", x=segment, y=["gap"]))
    answer.tables.append(
        Table(f"Actual vs potential by {noun}", rows, chart="bar", x=segment, y=["actual", "potential"])
    )


def _gap_findings(work: Work, answer: Answer, result: decompose.Gaps, columns: tuple[str, str, str]) -> None:
    """The top segments' finding (also the summary), the largest and overall gaps, what to prioritise."""
    segment, actual, potential = columns
    noun = segment.replace("_", " ")
    plural = _plural(noun)
    tops = result.top_segments
    share, s_lo, s_hi = result.top_gap_share
    of_total, o_lo, o_hi = result.top_share_of_total
    head = f"Top {len(tops)} {plural} ({', '.join(tops)})"
    finding = (
        f"{head} are {_pct(share)} below potential (95% CI {_pct(s_lo)}–{_pct(s_hi)}) and hold {_pct(of_total)} "
        f"of the total gap (95% CI {_pct(o_lo)}–{_pct(o_hi)})"
    )
    largest = result.table.iloc[0]
    answer.key_findings += [
        finding,
        f"Largest absolute gap: {noun} {largest.segment}, {largest.gap:,.0f} {actual} below potential "
        f"({_pct(float(largest.share_of_total_gap))} of the total gap)",
        f"Overall {actual} is {_pct(result.total_gap / result.total_potential)} below {potential} "
        f"({result.total_gap:,.0f} in all)",
        f"The same top {len(tops)} come out in {_pct(result.top_stability)} of {result.replicates} bootstrap samples",
    ]
    answer.payload["interpretation"] = f"{finding}{for_brand(work)}."
    answer.summary = answer.payload["interpretation"]
    answer.recommendations.append(
        f"Prioritise {', '.join(tops)}: closing half their gap would add about "
        f"{(of_total * result.total_gap) / 2:,.0f} {actual}."
    )
    answer.follow_ups += [
        f"What drives the gap in {tops[0]}?",
        f"How should budget be reallocated across {plural}?",
    ]


# --- change between two periods ---------------------------------------------------------


def change_answer(
    answer: Answer,
    result: decompose.Change,
    periods: decompose.Periods,
    columns: tuple[str, str],
    months: tuple[int, int] | None,
) -> None:
    """Add the change of `result` (of the outcome by segment: `columns`) between `periods` to `answer`."""
    segment, outcome = columns
    total = result.total
    effects = {name: result.effect(name) for name in ("volume", "mix", "rate")}
    (a, b) = periods.labels
    by_segment = _by_segment(result, segment, outcome, periods.labels)
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
        "identity_residual": total - sum(effects.values()),
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
    level = "per month" if months else "in total"
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


def _by_segment(result: decompose.Change, segment: str, outcome: str, labels: tuple[str, str]) -> list[dict[str, Any]]:
    """Each segment's outcome in both periods, its change and effects, the largest change first."""
    a, b = labels
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
    return by_segment
