"""How `causal_impact` words its answer: the payload in the seed's shape, the interpretation
sentence, the key findings and recommendations, the assumption card and the three tables
(estimates by method, refutations, propensity overlap).

It is kept apart from `agent`, which runs the estimators on what `reading` read, so that the
numbers and the words about them can be read (and changed) separately: nothing here
estimates anything; it only turns a finished `cm.Analysis`, its refutations and the optional
DoWhy result into an `Answer`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from concerto.packs.commercial.base.agent import Answer, Table, Work
from concerto.packs.commercial.methods import causal as cm

if TYPE_CHECKING:
    from concerto.packs.commercial.causal_impact.reading import Spec
    from concerto.packs.commercial.methods.causal_dowhy import DowhyResult
    from concerto.packs.commercial.methods.causal_refute import Refutation


def report(
    work: Work,
    spec: Spec,
    treatment: cm.Treatment,
    design: cm.Design,
    analysis: cm.Analysis,
    refutations: list[Refutation],
    dowhy: DowhyResult | None,
) -> Answer:
    """The payload in the seed's shape, the findings, the assumption card and the tables."""
    source = work.source
    head = _headline(analysis, dowhy)
    all_refutations = _refutations(refutations, dowhy)
    robust = all(r["passed"] for r in all_refutations)
    words = _Words(work, spec, treatment, analysis)
    if dowhy:
        words.adjusted = words.adjusted.replace("doubly robust estimate", "DoWhy's linear-regression estimate")
    significant = head.p_value < 0.05
    lo, hi = head.confidence_interval
    interpretation = (
        f"{words.treatment_cap} is associated with {_num(abs(head.ate))} {'additional' if head.ate >= 0 else 'fewer'} "
        f"{words.outcome} per {words.unit}{words.among} (95% CI {_num(lo)} to {_num(hi)}, p {_p(head.p_value)}), "
        f"{words.adjusted}; the naive comparison says {_num(analysis.naive.ate)}."
    )
    card = _card(work, spec, treatment, design, analysis, refutations, dowhy)
    estimators = [e.as_dict() for e in analysis.estimators] + ([head.as_dict()] if dowhy else [])
    payload: dict[str, Any] = {
        "ate": round(head.ate, 4),
        "confidence_interval": [round(lo, 4), round(hi, 4)],
        "p_value": cm.round_p(head.p_value),
        "std_error": round(head.std_error, 4),
        "robustness_passed": robust,
        "interpretation": interpretation,
        "estimand": analysis.estimand,
        "method": head.method,
        "method_label": head.label,
        "estimators": estimators,
        "naive_difference": analysis.naive.as_dict(),
        "refutations": all_refutations,
        "assumptions": card,
        "treatment": spec.treatment,
        "treated_value": treatment.treated,
        "outcome": spec.outcome,
        "covariates": spec.covariates,
        "adjustment_set": design.names,
        "n_rows": len(treatment.values),
        "n_treated": int(treatment.values.sum()),
        "n_used": int(analysis.kept.sum()),
        "library": "dowhy" if dowhy else "core",
    }
    findings = [_direction(head, words), _significance(head), _robustness(all_refutations), _naive(analysis, words)]
    if analysis.outside_share > OVERLAP_WARN:
        findings.append(
            f"Weak overlap: {analysis.outside_share:.0%} of rows have a propensity outside 0.05-0.95; "
            f"the estimate uses the {int(analysis.kept.sum()):,} rows with comparable counterparts"
        )
    return Answer(
        payload=payload,
        summary=interpretation,
        key_findings=findings,
        recommendations=_recommendations(head, robust, analysis, words),
        follow_ups=[
            f"How does the effect of {words.treatment} on {words.outcome} differ by segment?",
            f"How large a test would confirm the effect of {words.treatment}?",
        ],
        requires_further_analysis=not robust or analysis.outside_share > OVERLAP_WARN or not significant,
        tables=[
            _estimates_table(analysis, head if dowhy else None),
            _refutation_table(all_refutations),
            _overlap_table(analysis, treatment.values),
        ],
        unanswered=spec.unanswered,
        entities={"treatment": spec.treatment, "outcome": spec.outcome, "source": source.name},
    )


def _headline(analysis: cm.Analysis, dowhy: DowhyResult | None) -> cm.Estimate:
    """The estimate the answer leads with: DoWhy's when it was asked for, else the doubly robust one."""
    if not dowhy:
        return analysis.doubly_robust
    return cm.Estimate(
        "dowhy_linear_regression",
        f"DoWhy {dowhy.version} backdoor.linear_regression (one effect for every row)",
        dowhy.ate,
        (dowhy.confidence_interval[1] - dowhy.confidence_interval[0]) / (2 * cm.Z95),
        int(analysis.kept.sum()),
        p_value=dowhy.p_value,
        confidence_interval=dowhy.confidence_interval,
    )


def _refutations(refutations: list[Refutation], dowhy: DowhyResult | None) -> list[dict[str, Any]]:
    """Every refutation as the payload shows it, DoWhy's placebo last when DoWhy answered."""
    found = [r.as_dict() for r in refutations]
    if dowhy:
        found.append(
            {
                "refuter": "dowhy_placebo_treatment",
                "label": "DoWhy placebo treatment (permute)",
                "simulations": dowhy.simulations,
                "original_effect": round(dowhy.ate, 4),
                "mean_new_effect": round(dowhy.placebo_effect, 4),
                "passed": dowhy.placebo_passed,
                "verdict": f"{'passed' if dowhy.placebo_passed else 'failed'}: DoWhy's placebo effect is "
                f"{dowhy.placebo_effect:.3g} (p = {dowhy.placebo_p_value:.2g} for a zero effect)",
            }
        )
    return found


OVERLAP_WARN = 0.10


class _Words:
    """How the answer names things: the treatment and outcome as their descriptions say, the
    unit a row stands for (an HCP-month), the population and the adjustment."""

    def __init__(self, work: Work, spec: Spec, treatment: cm.Treatment, analysis: cm.Analysis) -> None:
        source = work.source
        self.treatment = _label(source.describe(spec.treatment), spec.treatment)
        if treatment.note and not treatment.treated.startswith("1"):
            self.treatment = f"{self.treatment} ({treatment.treated})"
        self.treatment_cap = self.treatment[:1].upper() + self.treatment[1:]
        self.outcome = _label(source.describe(spec.outcome), spec.outcome)
        profile = source.semantic_profile
        entity = profile.entity_name or "row"
        self.unit = f"{entity}-{profile.time_column}" if profile.time_column else entity
        self.among = " among the treated" if analysis.estimand == "att" else ""
        names = [_label(source.describe(c), c) for c in spec.covariates]
        self.confounders = _join(names) if names else "nothing"
        self.adjusted = (
            f"doubly robust estimate adjusting for {self.confounders}"
            if names
            else "doubly robust estimate, unadjusted"
        )


def _label(description: str, column: str) -> str:
    head = description.split(":")[0].strip()
    return head if head else column.replace("_", " ")


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _num(value: float) -> str:
    if not math.isfinite(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.2g}"


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "= n/a"
    return "< 0.001" if p < 0.001 else f"= {p:.2g}"


def _direction(head: cm.Estimate, words: _Words) -> str:
    lo, hi = head.confidence_interval
    if lo <= 0 <= hi:
        return (
            f"No clear causal effect: {_num(head.ate)} {words.outcome} per {words.unit}, "
            f"and the 95% interval ({_num(lo)} to {_num(hi)}) includes zero"
        )
    sign = "Positive" if head.ate > 0 else "Negative"
    more = "additional" if head.ate > 0 else "fewer"
    return f"{sign} causal effect of {_num(abs(head.ate))} {more} {words.outcome} per {words.unit}{words.among}"


def _significance(head: cm.Estimate) -> str:
    if head.p_value < 0.05:
        return f"Effect is statistically significant (p {_p(head.p_value)})"
    return f"Effect is not statistically significant (p {_p(head.p_value)})"


def _robustness(refutations: list[dict[str, Any]]) -> str:
    failed = [r["label"].lower() for r in refutations if not r["passed"]]
    if not failed:
        return "Robust to placebo, random common cause and subset refutation tests"
    return f"Not robust: failed the {_join(failed)} refutation{'s' if len(failed) > 1 else ''}"


def _naive(analysis: cm.Analysis, words: _Words) -> str:
    naive, dr = analysis.naive.ate, analysis.doubly_robust
    lo, hi = dr.confidence_interval
    if lo <= naive <= hi:
        return f"The naive difference ({_num(naive)}) is close to the adjusted estimate ({_num(dr.ate)})"
    way = "overstates" if naive > hi else "understates"
    return (
        f"The naive difference ({_num(naive)}) {way} the effect ({_num(dr.ate)} adjusted): "
        f"{words.confounders} confound the comparison"
    )


def _recommendations(head: cm.Estimate, robust: bool, analysis: cm.Analysis, words: _Words) -> list[str]:
    lo, hi = head.confidence_interval
    out: list[str] = []
    if lo > 0 and robust:
        out.append(
            f"Consider scaling up {words.treatment}: each treated {words.unit} adds about {_num(head.ate)} "
            f"{words.outcome} ({_num(lo)} to {_num(hi)})"
        )
        out.append("Check how the effect differs by segment before targeting the budget (heterogeneous effects)")
    elif hi < 0 and robust:
        out.append(
            f"Review {words.treatment}: it lowers {words.outcome} by about {_num(abs(head.ate))} per {words.unit}"
        )
    else:
        out.append(f"Do not scale {words.treatment} on this evidence alone; a randomised test would settle it")
    if not robust:
        out.append("Treat the estimate with caution: a refutation failed (see the assumption card)")
    if analysis.outside_share > OVERLAP_WARN:
        out.append("Compare like with like: many rows have no comparable counterpart in the other group")
    out.append("The estimate assumes no unmeasured confounding; confirm a decision-changing effect with a test")
    return out


def _card(
    work: Work,
    spec: Spec,
    treatment: cm.Treatment,
    design: cm.Design,
    analysis: cm.Analysis,
    refutations: list[Refutation],
    dowhy: DowhyResult | None,
) -> dict[str, Any]:
    """The assumption card: the adjustment set, overlap, each refuter's verdict and what the
    estimate takes for granted, as plain sentences (`card`) and as fields."""
    outside = analysis.outside_share
    kept = int(analysis.kept.sum())
    adjustment = (
        f"Adjusted for {_join(spec.covariates)} ({spec.adjustment_reason})."
        if spec.covariates
        else f"Adjusted for nothing ({spec.adjustment_reason}): the estimate is the plain difference."
    )
    overlap = f"Overlap: {outside:.1%} of rows have a propensity outside 0.05-0.95" + (
        " (good)." if outside <= OVERLAP_WARN else " - WARNING: many rows have no comparable counterpart."
    )
    if kept < len(analysis.kept):
        bounds = (
            f"above {1 - analysis.trim:g}"
            if analysis.estimand == "att"
            else f"outside [{analysis.trim:g}, {1 - analysis.trim:g}]"
        )
        overlap += (
            f" {len(analysis.kept) - kept:,} rows with a propensity {bounds} were left out of the adjusted "
            "estimates (trimming as in Crump et al. 2009)."
        )
    estimand = (
        "Estimand: the average effect on the treated rows (ATT)"
        if analysis.estimand == "att"
        else "Estimand: the average effect over all rows (ATE)"
    ) + (f", {analysis.estimand_reason}." if analysis.estimand_reason else ".")
    sentences = [
        adjustment,
        overlap,
        estimand,
        "Headline: " + ("DoWhy's linear regression (asked for)." if dowhy else "the doubly robust (AIPW) estimate."),
        *(f"{r.label}: {r.verdict} ({_runs(r, len(analysis.kept))})." for r in refutations),
        "Assumes no unmeasured confounding: nothing outside the adjustment set affects both the treatment and "
        "the outcome. The covariates must be measured before the treatment, and rows are taken as independent.",
    ]
    treatment_note = treatment.note or f"treated = {treatment.treated}"
    sentences.insert(1, f"Treatment: {spec.treatment}, {treatment_note}.")
    if design.dropped:
        sentences.append(f"Left out of the models as constant or redundant: {', '.join(design.dropped)}.")
    warnings = list(analysis.warnings)
    if outside > OVERLAP_WARN:
        warnings.append(f"{outside:.0%} of rows have a propensity outside 0.05-0.95")
    sentences += [f"Warning: {w}." for w in analysis.warnings]
    return {
        "card": sentences,
        "adjustment_set": spec.covariates,
        "adjustment_reason": spec.adjustment_reason,
        "encoded_columns": design.names,
        "treatment_coding": treatment_note,
        "estimand": analysis.estimand,
        "outside_overlap_share": round(outside, 4),
        "trim": analysis.trim,
        "rows_used": kept,
        "refuters": {r.name: r.verdict for r in refutations},
        "identification": "no unmeasured confounding (conditional ignorability), overlap, no interference",
        "warnings": warnings,
    }


def _runs(refutation: Refutation, rows: int) -> str:
    if refutation.rows and refutation.rows < rows:
        return f"{refutation.simulations} runs on a random {refutation.rows:,} of the {rows:,} rows"
    return f"{refutation.simulations} runs"


def _estimates_table(analysis: cm.Analysis, extra: cm.Estimate | None) -> Table:
    rows = []
    for e in [analysis.naive, *analysis.estimators, *([extra] if extra else [])]:
        lo, hi = e.confidence_interval
        rows.append(
            {
                "method": e.label,
                "ate": round(e.ate, 4),
                "ci_low": round(lo, 4),
                "ci_high": round(hi, 4),
                "p_value": cm.round_p(e.p_value),
                "rows": e.n_rows,
            }
        )
    return Table("Estimated effect by method (95% intervals)", rows, chart="bar", x="method", y=["ate"])


def _refutation_table(refutations: list[dict[str, Any]]) -> Table:
    rows = [
        {
            "refuter": r["label"],
            "runs": r["simulations"],
            "original": r["original_effect"],
            "new_effect": r["mean_new_effect"],
            "passed": r["passed"],
        }
        for r in refutations
    ]
    return Table("Refutation tests", rows)


def _overlap_table(analysis: cm.Analysis, t: np.ndarray) -> Table:
    edges = np.array([0, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 1.0])
    bins = np.clip(np.searchsorted(edges, analysis.propensity, side="right") - 1, 0, len(edges) - 2)
    rows = [
        {
            "propensity": f"{edges[i]:.2f}-{edges[i + 1]:.2f}",
            "treated": int(np.sum((bins == i) & (t == 1))),
            "untreated": int(np.sum((bins == i) & (t == 0))),
        }
        for i in range(len(edges) - 1)
    ]
    return Table(
        "Propensity overlap (rows per propensity band)", rows, chart="bar", x="propensity", y=["treated", "untreated"]
    )
