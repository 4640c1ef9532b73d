"""`gap_analyzer` (001): potential against actual by territory or segment, the largest gaps
and their share of the total gap, with cluster-bootstrap intervals; and a change between two
periods split into volume, mix and rate effects that add up exactly to the change.

`reading` reads the analysis asked for and its columns; the statistics are in
`methods.decompose`; `wording` says them.
"""

from __future__ import annotations

import pandas as pd

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.gap_analyzer.reading import (
    actual_of,
    analysis_type,
    focus_of,
    for_brand,
    period_column_of,
    periods_of,
    potential_of,
    segment_of,
)
from concerto.packs.commercial.gap_analyzer.wording import change_answer, gap_answer
from concerto.packs.commercial.methods import decompose

TOP = 3
MIN_ROWS = 10
MAX_SEGMENTS = 10_000


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
            "source": "The table to analyze (default: the built-in commercial data set)",
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
        kind = analysis_type(work)
        unanswered: list[Unanswered] = []
        segment = segment_of(work, unanswered)
        potential = potential_of(work, required=kind != "change")
        actual = actual_of(work, exclude={segment, potential})
        cluster = source.semantic_profile.entity_key
        cluster = cluster if cluster in source.columns and cluster not in (segment,) else None
        period_col = period_column_of(work) if kind != "gap" else None
        time = source.semantic_profile.time_column if kind != "gap" else None
        time = time if time in source.columns else None
        wanted = [segment, actual, *([potential] if potential else []), *([cluster] if cluster else [])]
        wanted += [c for c in (period_col, time) if c]
        frame = work.frame(list(dict.fromkeys(wanted)))
        if len(frame) < MIN_ROWS:
            raise invalid(
                f"only {len(frame)} rows{for_brand(work)} have {', '.join(wanted)}: too few to estimate gaps",
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
        focus = focus_of(work, frame, segment, unanswered)
        answer = Answer(payload={"analysis_type": kind, "segment_column": segment, "actual_column": actual}, summary="")
        if kind in ("gap", "both"):
            assert potential is not None
            gaps = _gaps(work, frame, (segment, actual, potential), cluster)
            gap_answer(work, answer, gaps, (segment, actual, potential), cluster, focus)
        if kind in ("change", "both"):
            assert period_col is not None
            periods = periods_of(work, frame, period_col)
            change, months = _change(work, frame, (segment, actual), cluster, periods)
            change_answer(answer, change, periods, (segment, actual), months)
        answer.unanswered += unanswered
        answer.entities.update(
            {"segment": segment, "actual": actual, **({"potential": potential} if potential else {})}
        )
        return answer


def _gaps(work: Work, frame: pd.DataFrame, columns: tuple[str, str, str], cluster: str | None) -> decompose.Gaps:
    """The gap table of actual against potential (`columns`: segment, actual, potential) with the
    top segments (three, or half the segments when fewer than six)."""
    segment, actual, potential = columns
    top = min(TOP, max(1, frame[segment].nunique() // 2))
    result = decompose.gaps(frame, segment, actual, potential, cluster, top_k=top)
    if result.total_potential <= 0:
        raise invalid(
            f"the potential '{potential}' sums to {result.total_potential:g}{for_brand(work)}: "
            "gaps need a positive potential",
            "Choose a potential column measured in the same unit as the actual.",
            error_type="invalid_column",
        )
    return result


def _change(
    work: Work, frame: pd.DataFrame, columns: tuple[str, str], cluster: str | None, periods: decompose.Periods
) -> tuple[decompose.Change, tuple[int, int] | None]:
    """The change of the outcome by segment (`columns`) between `periods`, per month when the
    rows have a time column (the months each period has), else in total."""
    segment, outcome = columns
    keep = periods.code >= 0
    data = frame[keep].reset_index(drop=True)
    code = periods.code[keep].reset_index(drop=True)
    time = work.source.semantic_profile.time_column
    months: tuple[int, int] | None = None
    if work.given("per_month") is not False and time in data.columns:
        counts = pd.Series(pd.to_datetime(data[time]).to_numpy()).groupby(code.to_numpy()).nunique()
        months = (int(counts.get(0, 1)), int(counts.get(1, 1)))
    return decompose.change(data, segment, outcome, code, cluster, months), months
