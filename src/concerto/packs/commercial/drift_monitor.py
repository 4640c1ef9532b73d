"""drift_monitor: which features' distributions moved between two periods, and how much.

For each feature: PSI over ten quantile bins of the reference period and the two-sample
Kolmogorov-Smirnov test for numbers; PSI over the category shares and the chi-square test for
categories; p-values adjusted together with Holm's method; levels from the usual PSI
thresholds (< 0.1 stable, 0.1–0.25 moderate, > 0.25 significant) confirmed by the adjusted
test (see `drift_methods`). The periods: payload `period_column` (with `reference_period` and
`current_period` when it has more than two values), or `time_column` + `split_date`, or the
question ("since January", "last quarter vs the one before"); on the built-in data, `period`
(baseline 2025 vs recent 2026).
"""

from __future__ import annotations

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial import columns as cols
from concerto.packs.commercial import drift_methods as dm
from concerto.packs.commercial._base import Answer, CommercialAgent, Table, Work, invalid


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
        try:
            plan = dm.plan_split(source, work.request, work.payload)
        except dm.SplitError as exc:
            raise invalid(str(exc), exc.suggestion, error_type=exc.error_type) from None
        numeric, category = self._features(work, plan)
        if not numeric and not category:
            raise invalid(
                f"{source.name} has no numeric or category column to check for drift",
                "Name the columns to check with features.",
                error_type="no_features",
            )
        frame = work.frame([plan.column, *numeric, *category], dropna=False)
        try:
            reference, current, ref_label, cur_label = dm.apply_split(frame, plan)
        except dm.SplitError as exc:
            raise invalid(str(exc), exc.suggestion, error_type=exc.error_type) from None
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
        return self._answer(work, report, plan, ref_label, cur_label, len(reference), len(current), unanswered)

    def _features(self, work: Work, plan: dm.SplitPlan) -> tuple[list[str], list[str]]:
        source = work.source
        given = work.given("features")
        exclude = {plan.column} | ({"brand"} if work.brand else set())
        numeric_all, category_all = dm.default_features(source, exclude)
        if given is None:
            return numeric_all, category_all
        names = [n.strip() for n in given.split(",")] if isinstance(given, str) else [str(n) for n in given]
        numeric, category = [], []
        for name in names:
            column = cols.resolve(source, name, "feature")
            if column in category_all or source.detected_types[column].role in ("category", "label", "flag"):
                category.append(column)
            elif column in numeric_all or column in cols.numeric_columns(source):
                numeric.append(column)
            else:
                category.append(column)  # text or dates: compared as categories
        return numeric, category

    def _answer(
        self,
        work: Work,
        report: dm.DriftReport,
        plan: dm.SplitPlan,
        ref_label: str,
        cur_label: str,
        ref_rows: int,
        cur_rows: int,
        unanswered: list[Unanswered],
    ) -> Answer:
        ordered = sorted(report.features, key=lambda f: -f.psi)
        significant = [f.feature for f in ordered if f.level == "significant"]
        moderate = [f.feature for f in ordered if f.level == "moderate"]
        inconclusive = [f.feature for f in ordered if f.level == "inconclusive"]
        small = [f.feature for f in ordered if f.level == "stable" and f.test_significant]
        status = "significant drift" if significant else "moderate drift" if moderate else "stable"
        rows = [f.as_dict() for f in ordered]
        compared = f"{ref_label} ({ref_rows:,} rows) vs {cur_label} ({cur_rows:,} rows)"
        findings = [
            f"{f.feature}: PSI {f.psi:.2f} ({f.level}); {f.test.upper()} p = {f.p_adjusted:.2g} after Holm; "
            f"{f.reference_summary} → {f.current_summary}"
            for f in ordered
            if f.level != "stable"
        ]
        stable = [f.feature for f in ordered if f.level == "stable"]
        if stable:
            findings.append(f"Stable (PSI < {dm.PSI_MODERATE}): {', '.join(stable)}")
        if small:
            findings.append(
                f"Detectable but small shifts (test significant, PSI < {dm.PSI_MODERATE}): {', '.join(small)}"
            )
        summary = (
            f"Drift {compared}: "
            + (
                f"significant in {', '.join(significant)}"
                + (f", moderate in {', '.join(moderate)}" if moderate else "")
                if significant or moderate
                else "no feature drifted beyond PSI 0.1"
            )
            + f" ({len(ordered)} features checked; PSI thresholds 0.1 / 0.25, tests at 5 % after Holm)."
        )
        recommendations = []
        if significant or moderate:
            recommendations.append(
                f"Investigate {', '.join(significant + moderate)}: a change in how the data are produced, or a "
                "real change in activity; retrain models that use them on recent data."
            )
        if inconclusive:
            recommendations.append(f"Collect more data to confirm {', '.join(inconclusive)}.")
        return Answer(
            payload={
                "status": status,
                "reference_period": ref_label,
                "current_period": cur_label,
                "split": {"kind": plan.kind, "column": plan.column},
                "reference_rows": ref_rows,
                "current_rows": cur_rows,
                "features": rows,
                "drifted_features": significant + moderate,
                "significant_features": significant,
                "moderate_features": moderate,
                "inconclusive_features": inconclusive,
                "stable_features": stable,
                "skipped_features": report.skipped,
                "thresholds": dm.THRESHOLDS,
                "method": (
                    "PSI over 10 reference-quantile bins (category shares for categories); two-sample KS "
                    "(numbers) and chi-square (categories) tests, p-values Holm-adjusted across features"
                ),
                "interpretation": summary,
            },
            summary=summary,
            key_findings=findings,
            recommendations=recommendations,
            follow_ups=["How healthy is the data overall?", "Forecast new Rx for the next 6 months"],
            requires_further_analysis=bool(significant or inconclusive),
            tables=[
                Table(
                    "PSI per feature",
                    [{"feature": r["feature"], "psi": r["psi"]} for r in rows],
                    "bar",
                    "feature",
                    ["psi"],
                ),
                Table("Drift tests per feature", rows),
            ],
            unanswered=unanswered,
            entities={"drifted_features": significant + moderate},
        )
