"""How `health_score` words its answer: the overall score and grade, each component's score
and reason, what is not measured, advice for the weak components, and the tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from concerto.packs.commercial.base.agent import Answer, Table, Work
from concerto.packs.commercial.health_score.components import CAP_ABOVE_WORST, WEIGHTS, Component, overall

if TYPE_CHECKING:
    from concerto.agents.base import Unanswered

_ADVICE = {
    "completeness": "Fill or explain the missing values in the worst columns before modelling on them.",
    "freshness": "Load the latest periods: the data is behind its usual cadence.",
    "drift": "Check the drifted features and retrain models that use them.",
    "error": "Retrain or recalibrate the model: it predicts the latest period worse than validated.",
}


def answer(
    work: Work, components: list[Component], unanswered: list[Unanswered], drift_rows: list[dict[str, Any]]
) -> Answer:
    """The answer from the measured `components` (and the drift rows behind the drift one)."""
    total = overall(components)
    parts = {
        c.name: {
            "score": round(c.score, 1),
            "weight": WEIGHTS[c.name],
            "effective_weight": round(WEIGHTS[c.name] / total.weight, 3),
            "reason": c.reason,
            **c.details,
        }
        for c in components
    }
    scope = f"{work.source.name}" + (f" ({work.brand})" if work.brand else "")
    summary = (
        f"Health of {scope}: {total.score:.0f}/100 ({total.grade}); "
        + ", ".join(f"{c.name} {c.score:.0f}" for c in components)
        + (f"; not measured: {', '.join(u.part for u in unanswered)}" if unanswered else "")
        + "."
    )
    findings = [f"{c.name.capitalize()} {c.score:.0f}/100: {c.reason}" for c in components]
    if total.capped:
        worst = total.worst
        findings.append(f"The score is capped at {worst.name} + {CAP_ABOVE_WORST} points ({worst.score:.0f}).")
    scores = [{"component": k, "score": v["score"], "weight": v["weight"]} for k, v in parts.items()]
    tables = [Table("Health components", scores, "bar", "component", ["score"])]
    if drift_rows:
        tables.append(Table("Drift per feature", drift_rows))
    return Answer(
        payload={
            "health_score": total.score,
            "grade": total.grade,
            "components": parts,
            "weights": WEIGHTS,
            "not_measured": [u.part for u in unanswered],
            "method": (
                "weighted mean of the measured components (weights renormalised), capped at the worst "
                f"component + {CAP_ABOVE_WORST}; grades: healthy ≥ 80, watch 60-80, unhealthy < 60"
            ),
            "interpretation": summary,
        },
        summary=summary,
        key_findings=findings,
        recommendations=[_ADVICE[c.name] for c in components if c.score < 80],
        follow_ups=["Which features drifted?", "Forecast new Rx for the next 6 months"],
        requires_further_analysis=total.grade != "healthy",
        tables=tables,
        unanswered=unanswered,
        entities={"health_grade": total.grade},
    )
