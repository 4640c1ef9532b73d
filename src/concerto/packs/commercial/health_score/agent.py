"""health_score: a 0–100 score for the health of a source and of a model fitted on it, from
four components, each scored 0–100 with its reason:

- completeness (weight 0.30): the share of non-null cells, scored linearly from 80 % (0) to
  100 % (100); the columns with the most missing values are listed.
- freshness (0.20): how many of the data's periods (its cadence: daily, weekly, monthly …,
  from the spacing of its dates) have passed between the end of the latest period and now;
  up to one period is fresh (100; monthly data one month behind is on time), then 0 at four.
- drift (0.25): the share of features with drift between two periods (`methods.drift`, the
  same split and tests as `drift_monitor`): 100 × (1 − 2 × (significant + ½ moderate) / features),
  so drift in half the features scores 0.
- error (0.25): a simple model's out-of-sample error — a ridge regression of the outcome
  (payload `outcome`; `new_rx` on the built-in data) on the other features, its RMSE
  cross-validated (5 folds) on the earlier period and then measured on the later one; the
  ratio later / cross-validated is 100 up to 1.1 and 0 from 2 (the model no longer holds).

Overall: the weighted mean of the components that could be measured (weights renormalised),
capped at the worst component + 30 so that one failing part is not hidden by healthy ones;
grade healthy (≥ 80), watch (60–80) or unhealthy (< 60). A component that cannot be measured
(no date column, one period only, no outcome) is an unanswered part, not a failure.

The components are measured in `components` (the model's error in `methods.model_error`),
and said in `wording`.
"""

from __future__ import annotations

from typing import Any

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.health_score.components import (
    Component,
    NotMeasurable,
    completeness,
    drift,
    error,
    freshness,
)
from concerto.packs.commercial.health_score.wording import answer

DEFAULT_OUTCOME = "new_rx"


class HealthScoreAgent(CommercialAgent):
    """Data and model health: completeness, freshness, drift and error, scored 0-100."""

    info = AgentInfo(
        name="health_score",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Scores the health of the data and of a model on it from 0 to 100: completeness (missing "
            "values), freshness (how recent the latest data is), drift between periods and a model's "
            "out-of-sample error, each component with its reason, and an overall grade."
        ),
        capabilities=[
            "Overall data and model health score (0-100) with a healthy / watch / unhealthy grade",
            "Completeness: share of missing values per column, worst columns listed",
            "Freshness: age of the latest data against its cadence",
            "Drift: share of features whose distribution shifted between periods",
            "Model error: out-of-sample error of a simple model on the latest period",
        ],
        inputs={
            "source": "The table to analyze (default: the built-in commercial data set)",
            "outcome": "The column a model predicts, for the error component (default: new_rx)",
            "period_column": "Periods to compare for drift and error (default: period / the time column)",
            "time_column": "The date column for freshness (default: the source's)",
        },
        outputs={
            "health_score": "0-100",
            "grade": "healthy, watch or unhealthy",
            "components": "completeness, freshness, drift and error: score, weight and reason",
        },
        examples=[
            "How healthy is our data?",
            "Give me a data quality score for the Kisqali data",
            "Is the prescription model still healthy?",
            "Check the system health",
            "How fresh and complete is the commercial data set?",
            "Are there missing values we should worry about?",
            "Is our data up to date?",
            "Run a health check on the Fabhalta data and model",
            "What is the data health score this month?",
            "Can we still trust the new Rx model?",
        ],
        default_timeout_ms=5000,
    )

    def analyse(self, work: Work) -> Answer:
        source = work.source
        frame = work.frame(list(source.columns), dropna=False)
        if frame.empty:
            raise invalid(
                f"{source.name} has no rows" + (f" for {work.brand}" if work.brand else ""),
                "Choose another source or brand.",
                error_type="insufficient_data",
            )
        outcome = _outcome(work)
        components: list[Component] = [completeness(frame)]
        unanswered: list[Unanswered] = []
        drift_rows: list[dict[str, Any]] = []
        for name, measure, suggestion in (
            ("freshness", lambda: freshness(work, frame), "Name the date column with time_column."),
            (
                "drift",
                lambda: drift(work, frame, drift_rows),
                "Name a period_column with two values, or a time_column with a split_date.",
            ),
            (
                "error",
                lambda: error(work, frame, outcome),
                "Name the model's outcome with outcome, and a period_column or time_column to split on.",
            ),
        ):
            try:
                components.append(measure())
            except NotMeasurable as exc:
                unanswered.append(
                    Unanswered(
                        part=f"{name} of the data" if name != "error" else "model error",
                        reason=str(exc),
                        error_type="not_measurable",
                        suggestion=suggestion,
                    )
                )
        return answer(work, components, unanswered, drift_rows)


def _outcome(work: Work) -> str | None:
    """The caller's `outcome` (checked numeric), else new_rx when the source has it, else None."""
    if work.given("outcome") is not None:
        column = cols.resolve(work.source, str(work.given("outcome")), "outcome")
        return cols.numeric(work.source, column, "outcome")
    return DEFAULT_OUTCOME if DEFAULT_OUTCOME in work.source.detected_types else None
