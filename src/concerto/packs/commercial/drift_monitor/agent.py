"""drift_monitor: which features' distributions moved between two periods, and how much.

For each feature: PSI over ten quantile bins of the reference period and the two-sample
Kolmogorov-Smirnov test for numbers; PSI over the category shares and the chi-square test for
categories; p-values adjusted together with Holm's method; levels from the usual PSI
thresholds (< 0.1 stable, 0.1–0.25 moderate, > 0.25 significant) confirmed by the adjusted
test (see `methods.drift`). The periods (`base.drift_reading`): the caller's `period_column`
(with `reference_period` and `current_period` when it has more than two values), or
`time_column` + `split_date`, or the question ("since January", "last quarter vs the one
before"); on the built-in data, `period` (baseline 2025 vs recent 2026). `reading` reads the
features; `wording` says the result.
"""

from __future__ import annotations

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.drift_reading import plan_split
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.drift_monitor.reading import features_of
from concerto.packs.commercial.drift_monitor.wording import answer
from concerto.packs.commercial.methods import drift as dm


class DriftMonitorAgent(CommercialAgent):
    """Drift per feature between two periods: PSI and KS for numbers, chi-square for categories."""

    info = AgentInfo(
        name="drift_monitor",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Detects data drift: compares each feature's distribution between two periods (baseline vs "
            "recent, since a date, last quarter vs the one before) with the population stability index, "
            "Kolmogorov-Smirnov and chi-square tests, and flags the features that shifted."
        ),
        capabilities=[
            "Population stability index (PSI) per feature with the 0.1 / 0.25 thresholds",
            "Kolmogorov-Smirnov test for numeric features, chi-square test for categories",
            "Multiple-testing correction (Holm) across features",
            "Compare baseline vs recent periods, before vs after a date, or consecutive quarters",
            "List which features drifted significantly and by how much",
        ],
        inputs={
            "source": "The table to analyze (default: the built-in commercial data set)",
            "period_column": "A column naming the periods (default: period on the built-in data)",
            "reference_period": "The reference value of period_column (default: the earlier)",
            "current_period": "The current value of period_column (default: the later)",
            "time_column": "The date column, with split_date",
            "split_date": "Rows before it are the reference, from it on the current period",
            "features": "Columns to check (default: every numeric and category column but ids and dates)",
        },
        outputs={
            "features": "Per feature: PSI, test statistic, p-value (raw and Holm-adjusted), level",
            "drifted_features": "Features with moderate or significant drift",
            "thresholds": "The PSI thresholds and the test level used",
        },
        examples=[
            "Has our data drifted since January?",
            "Has the distribution of any feature drifted?",
            "Is there drift in any of our features?",
            "Which features shifted between the baseline and recent periods?",
            "Is there data drift in the Kisqali call activity?",
            "Compare last quarter's data with the one before",
            "Run a PSI check on the model features",
            "Did the distribution of emails change recently?",
            "Are the Fabhalta HCP features stable over time?",
            "Show me the population stability index for every feature",
            "Has the specialty mix of our HCPs changed this year?",
            "How different is the recent period from the baseline period?",
            "Check for covariate shift before we retrain the prescription model",
        ],
        default_timeout_ms=10000,
    )

    def analyse(self, work: Work) -> Answer:
        source = work.source
        plan = plan_split(work)
        numeric, category = features_of(work, plan)
        if not numeric and not category:
            raise invalid(
                f"{source.name} has no numeric or category column to check for drift",
                "Name the columns to check with features.",
                error_type="no_features",
            )
        frame = work.frame([plan.column, *numeric, *category], dropna=False)
        reference, current, ref_label, cur_label = dm.apply_split(frame, plan)
        report = dm.compare(reference, current, numeric, category)
        unanswered = [
            Unanswered(
                part=f"drift of {feature}",
                reason=f"{feature} cannot be compared: {why}",
                error_type="insufficient_data",
                suggestion="Check how the column is filled in each period, or leave it out with features.",
            )
            for feature, why in report.skipped.items()
        ]
        if not report.features:
            raise invalid(
                "no feature could be compared between the periods: "
                + "; ".join(f"{k}: {v}" for k, v in report.skipped.items()),
                "Choose features with values in both periods.",
                error_type="insufficient_data",
            )
        compared = (ref_label, cur_label, len(reference), len(current))
        return answer(report, plan, compared, unanswered)
