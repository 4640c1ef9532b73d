"""How `heterogeneous_optimizer` words its answer: each segment's effect with its interval and
the extra outcome it would bring, the heterogeneity test, where to focus and where not, what
could not be estimated, and the two tables (effects by segment, where to focus)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from concerto.agents.base import Unanswered
from concerto.packs.commercial.base.agent import Answer, Table, Work

if TYPE_CHECKING:
    from concerto.data.context import DataContext
    from concerto.packs.commercial.methods import cate as cm

Z95 = 1.959963984540054


@dataclass
class _Names:
    """How the answer names the row (an HCP-month), the treatment, the outcome and the segment."""

    unit: str
    treatment: str
    outcome: str
    segment: str


def _row_noun(source: DataContext) -> str:
    entity = source.semantic_profile.entity_name or "row"
    return f"{entity}-month" if source.semantic_profile.time_column == "month" else f"{entity} row"


def answer(
    work: Work, result: cm.CateResult, *, treatment: str, outcome: str, segment: str, covariates: list[str]
) -> Answer:
    """The answer from the segment effects `result` of `treatment` on `outcome` by `segment`."""
    source = work.source
    names = _Names(
        _row_noun(source),
        source.describe(treatment).split(":")[0],
        source.describe(outcome).split(":")[0],
        segment,
    )
    ranked = sorted(result.segments, key=lambda e: e.cate, reverse=True)
    by_lower = sorted(result.segments, key=lambda e: e.ci[0], reverse=True)
    focus = [e for e in by_lower if e.ci[0] > 0][:3]
    work.notes.extend(result.notes)
    rows = [
        {
            **e.as_dict(),
            "rank": ranked.index(e) + 1,
            "expected_extra_outcome": round(e.cate * e.untreated, 1),
            "expected_extra_interval": [round(e.ci[0] * e.untreated, 1), round(e.ci[1] * e.untreated, 1)],
        }
        for e in ranked
    ]
    h = result.heterogeneity
    differ = h is not None and h.p_value < 0.05
    top = ranked[0]
    interpretation = _interpretation(result, ranked, names)
    payload: dict[str, Any] = {
        "segments": rows,
        "ranking": [e.segment for e in ranked],
        "focus": [e.segment for e in focus],
        "heterogeneity": (
            {"statistic": round(h.statistic, 3), "df": h.df, "p_value": float(f"{h.p_value:.4g}"), "method": h.method}
            if h
            else None
        ),
        "heterogeneity_significant": differ,
        "ate": round(result.ate, 4),
        "confidence_interval": [round(result.ate - Z95 * result.ate_se, 4), round(result.ate + Z95 * result.ate_se, 4)],
        "treatment": treatment,
        "outcome": outcome,
        "segment_by": segment,
        "covariates": covariates,
        "method_used": result.method,
        "econml_used": result.method.startswith("EconML"),
        "rows": sum(e.n for e in result.segments),
        "clustered_by": source.semantic_profile.entity_key if result.clusters else None,
        "overlap": {"share_outside_0.05_0.95": result.overlap_outside, "clipped_rows": result.clipped},
        "skipped_segments": result.skipped,
        "interpretation": interpretation,
    }
    return Answer(
        payload=payload,
        summary=interpretation,
        key_findings=_findings(result, ranked, names),
        recommendations=_recommendations(result, focus, names),
        follow_ups=[
            f"design an experiment to confirm the effect of {names.treatment} in {top.segment}",
            f"what is the overall effect of {names.treatment} on {names.outcome}?",
        ],
        requires_further_analysis=bool(result.skipped) or (result.overlap_outside or 0) > 0.1,
        tables=_tables(ranked, rows, names),
        unanswered=_unanswered(result, segment),
        entities={"treatment": treatment, "outcome": outcome, "segment": segment},
    )


def _interpretation(result: cm.CateResult, ranked: list[cm.SegmentEffect], names: _Names) -> str:
    """The largest effect, against the smallest, and whether the segments differ."""
    h = result.heterogeneity
    differ = h is not None and h.p_value < 0.05
    top = ranked[0]
    verb = "raises" if top.cate >= 0 else "lowers"
    return (
        f"{names.treatment.capitalize()} {verb} {names.outcome} by {abs(top.cate):.2f} per {names.unit} in "
        f"{top.segment} (95% CI {top.ci[0]:.2f} to {top.ci[1]:.2f})"
        + (f" against {ranked[-1].cate:.2f} in {ranked[-1].segment}" if len(ranked) > 1 else "")
        + (
            f"; the segments differ (χ² = {h.statistic:.1f}, df {h.df}, p = {h.p_value:.2g})."
            if differ and h
            else "; the data do not show the segments differ."
            if h
            else "."
        )
    )


def _findings(result: cm.CateResult, ranked: list[cm.SegmentEffect], names: _Names) -> list[str]:
    """Each segment's effect, then the heterogeneity test."""
    findings = [
        f"{e.segment}: {e.cate:+.2f} {names.outcome} per {names.unit} (95% CI {e.ci[0]:.2f} to {e.ci[1]:.2f}, "
        f"p = {e.p_value:.2g}, {e.n:,} rows)"
        for e in ranked
    ]
    h = result.heterogeneity
    if h:
        differ = h.p_value < 0.05
        findings.append(
            f"Heterogeneity: χ² = {h.statistic:.1f} on {h.df} df, p = {h.p_value:.2g} — "
            + ("the effect differs by " if differ else "no evidence the effect differs by ")
            + names.segment
        )
    return findings


def _recommendations(result: cm.CateResult, focus: list[cm.SegmentEffect], names: _Names) -> list[str]:
    """Where to focus (lower bound first, with the extra outcome), and where not to expand."""
    t_name, y_name, unit = names.treatment, names.outcome, names.unit
    recommendations = [
        f"{'Focus' if i == 0 else 'Next'} {t_name} on {e.segment}: its effect is at least {e.ci[0]:.2f} {y_name} "
        f"per {unit}; giving it to the {e.untreated:,} untreated {unit}s would add about "
        f"{e.cate * e.untreated:,.0f} {y_name} ({e.ci[0] * e.untreated:,.0f} to {e.ci[1] * e.untreated:,.0f})"
        for i, e in enumerate(focus)
    ]
    weak = [e.segment for e in result.segments if e.ci[0] <= 0]
    if weak:
        recommendations.append(f"Do not expand {t_name} in {', '.join(weak)}: no effect distinguishable from zero")
    return recommendations


def _unanswered(result: cm.CateResult, segment: str) -> list[Unanswered]:
    """The segments skipped for too few rows, and the test when only one segment is left."""
    unanswered = [
        Unanswered(
            part=f"the effect in {segment} '{name}'",
            reason=reason,
            error_type="too_few_rows",
            suggestion="Choose a coarser segment or a source with more rows in it.",
        )
        for name, reason in result.skipped.items()
    ]
    if result.heterogeneity is None:
        unanswered.append(
            Unanswered(part="whether segments differ", reason="only one segment has enough rows to estimate")
        )
    return unanswered


def _tables(ranked: list[cm.SegmentEffect], rows: list[dict[str, Any]], names: _Names) -> list[Table]:
    """The effects by segment (a bar chart) and where to focus (by the interval's lower bound)."""
    segment = names.segment
    chart = Table(
        f"Effect of {names.treatment} on {names.outcome} by {segment} (CATE, 95% CI)",
        [
            {
                segment: e.segment,
                "cate": round(e.cate, 3),
                "ci_low": round(e.ci[0], 3),
                "ci_high": round(e.ci[1], 3),
                "n": e.n,
            }
            for e in ranked
        ],
        chart="bar",
        x=segment,
        y=["cate"],
    )
    focus_table = Table(
        f"Where to focus {names.treatment}",
        [
            {
                segment: r["segment"],
                "ci_low": r["confidence_interval"][0],
                "untreated": r["untreated"],
                "expected_extra_outcome": r["expected_extra_outcome"],
            }
            for r in sorted(rows, key=lambda r: r["confidence_interval"][0], reverse=True)
        ],
    )
    return [chart, focus_table]
