"""How `drift_monitor` words its answer: the status, each drifted feature with its PSI and test,
the stable ones, what to investigate, and the two tables (PSI per feature, the tests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from concerto.packs.commercial.base.agent import Answer, Table
from concerto.packs.commercial.methods import drift as dm

if TYPE_CHECKING:
    from concerto.agents.base import Unanswered


def answer(
    report: dm.DriftReport,
    plan: dm.SplitPlan,
    compared: tuple[str, str, int, int],
    unanswered: list[Unanswered],
) -> Answer:
    """The answer for `report`, the periods compared given as (reference label, current label,
    reference rows, current rows)."""
    ref_label, cur_label, ref_rows, cur_rows = compared
    ordered = sorted(report.features, key=lambda f: -f.psi)
    significant = [f.feature for f in ordered if f.level == "significant"]
    moderate = [f.feature for f in ordered if f.level == "moderate"]
    inconclusive = [f.feature for f in ordered if f.level == "inconclusive"]
    stable = [f.feature for f in ordered if f.level == "stable"]
    status = "significant drift" if significant else "moderate drift" if moderate else "stable"
    rows = [f.as_dict() for f in ordered]
    summary = _summary(ordered, f"{ref_label} ({ref_rows:,} rows) vs {cur_label} ({cur_rows:,} rows)")
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
        key_findings=_findings(ordered),
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


def _summary(ordered: list[dm.FeatureDrift], compared: str) -> str:
    """Which features drifted (significantly, moderately) between the periods `compared`."""
    significant = [f.feature for f in ordered if f.level == "significant"]
    moderate = [f.feature for f in ordered if f.level == "moderate"]
    return (
        f"Drift {compared}: "
        + (
            f"significant in {', '.join(significant)}" + (f", moderate in {', '.join(moderate)}" if moderate else "")
            if significant or moderate
            else "no feature drifted beyond PSI 0.1"
        )
        + f" ({len(ordered)} features checked; PSI thresholds 0.1 / 0.25, tests at 5 % after Holm)."
    )


def _findings(ordered: list[dm.FeatureDrift]) -> list[str]:
    """Each feature that moved, then the stable ones and the small shifts a test detects."""
    findings = [
        f"{f.feature}: PSI {f.psi:.2f} ({f.level}); {f.test.upper()} p = {f.p_adjusted:.2g} after Holm; "
        f"{f.reference_summary} → {f.current_summary}"
        for f in ordered
        if f.level != "stable"
    ]
    stable = [f.feature for f in ordered if f.level == "stable"]
    small = [f.feature for f in ordered if f.level == "stable" and f.test_significant]
    if stable:
        findings.append(f"Stable (PSI < {dm.PSI_MODERATE}): {', '.join(stable)}")
    if small:
        findings.append(f"Detectable but small shifts (test significant, PSI < {dm.PSI_MODERATE}): {', '.join(small)}")
    return findings
