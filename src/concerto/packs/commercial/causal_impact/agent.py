"""`causal_impact` (001): the average effect of a yes/no treatment on a numeric outcome, adjusted
for confounders, with its 95 % interval and p-value, checked by refutations, and said in plain
language with the assumptions it rests on.

`reading` reads the treatment, outcome, adjustment set and options; `methods.causal` estimates
(regression adjustment, IPW, doubly robust; the headline is the doubly robust AIPW estimate),
`methods.causal_refute` checks (placebo, random common cause, data subset →
`robustness_passed`), `methods.causal_dowhy` when DoWhy is asked for and installed; `wording`
says it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from concerto.agents.base import AgentInfo
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.causal_impact.reading import Spec, read_spec
from concerto.packs.commercial.causal_impact.wording import report
from concerto.packs.commercial.methods import causal as cm
from concerto.packs.commercial.methods.causal_refute import RefuterInputs, refute
from concerto.packs.commercial.methods.errors import OverlapError, SeparationError, TreatmentError

if TYPE_CHECKING:
    import pandas as pd

    from concerto.packs.commercial.methods.causal_dowhy import DowhyResult

MIN_PER_ARM = 20


class CausalImpactAgent(CommercialAgent):
    """Treatment effects with intervals, three estimators, refutations and an assumption card."""

    info = AgentInfo(
        name="causal_impact",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Estimates the causal effect of a yes/no treatment or intervention (sampling, calls, a program) on an "
            "outcome such as prescriptions, adjusting for confounders, with a confidence interval, p-value, "
            "robustness checks and the assumptions behind it."
        ),
        capabilities=[
            "Average treatment effect (ATE) with 95% confidence interval and p-value",
            "Adjustment for confounders given as covariates or as a causal graph (backdoor set)",
            "Regression adjustment, inverse-propensity weighting and doubly robust (AIPW) estimators",
            "Refutation tests: placebo treatment, random common cause, data subset",
            "Overlap diagnostics and a plain-language assumption card",
            "Naive versus adjusted comparison showing confounding bias",
        ],
        inputs={
            "source": "The table to analyze (default: the built-in commercial data set)",
            "treatment": "Yes/no column (two values; a number is split at its median)",
            "outcome": "Numeric outcome column",
            "covariates": "Confounders to adjust for (optional)",
            "graph": "Causal graph {node: [parents]} or [[cause, effect], ...] (optional)",
            "estimand": "ate, att or auto (optional)",
            "library": "'dowhy' to use DoWhy when installed (optional)",
        },
        outputs={
            "ate": "Headline effect (doubly robust)",
            "confidence_interval": "95% interval [low, high]",
            "p_value": "Two-sided p-value",
            "robustness_passed": "Whether every refutation passed",
            "interpretation": "The effect in one sentence",
            "estimators": "Each estimator's effect, interval and p-value",
            "refutations": "Each refuter's runs and verdict",
            "assumptions": "The assumption card",
        },
        examples=[
            "What's the impact of increased sampling on Kisqali prescriptions?",
            "Does increased sampling drive new Rx for Fabhalta?",
            "What is the causal effect of sampling on new prescriptions, adjusting for decile and specialty?",
            "Did the extra samples actually cause more Remibrutinib scripts, or is it just high-decile doctors?",
            "Estimate the average treatment effect of the training program on earnings",
            "How many additional prescriptions per HCP come from increased sampling?",
            "Is the effect of sampling on new Rx statistically significant and robust?",
            "What is the effect of the program on the treated participants' 1978 earnings?",
            "Causal impact of speaker events on total Rx, controlling for specialty",
            "What lift in Kisqali new prescriptions can we attribute to sampling after removing confounding?",
            "Would HCPs write more prescriptions if they received more samples?",
        ],
        default_timeout_ms=30000,
    )

    def analyse(self, work: Work) -> Answer:
        spec = read_spec(work)
        frame = work.frame([spec.treatment, spec.outcome, *spec.covariates])
        treatment, y = _arms(work, spec, frame)
        t = treatment.values
        numbers = [c for c in spec.covariates if c in cols.numeric_columns(work.source)]
        design = cm.design(frame, numbers, [c for c in spec.covariates if c not in numbers])
        analysis = _estimate(spec, design, t, y)
        dr = analysis.doubly_robust
        refutations = refute(
            RefuterInputs(
                design.matrix,
                t,
                y,
                estimate=dr.ate,
                std_error=dr.std_error,
                trim=spec.trim,
                estimand=analysis.estimand,
                simulations=spec.simulations,
            )
        )
        dowhy_result = _dowhy(work, spec, design, analysis, t, y) if spec.library == "dowhy" else None
        return report(work, spec, treatment, design, analysis, refutations, dowhy_result)


def _arms(work: Work, spec: Spec, frame: pd.DataFrame) -> tuple[cm.Treatment, np.ndarray]:
    """The treatment coded 0/1 and the outcome, refused when there are too few rows, too few
    in an arm, or nothing varies."""
    if len(frame) < 2 * MIN_PER_ARM:
        raise invalid(
            f"only {len(frame)} rows have the treatment, the outcome and every covariate",
            f"At least {2 * MIN_PER_ARM} rows are needed ({MIN_PER_ARM} per arm): choose another brand or source, "
            "or drop covariates with many missing values.",
            error_type="too_few_rows",
            rows=len(frame),
        )
    try:
        treatment = cm.binary_treatment(frame[spec.treatment], work.given("treated_value"))
    except TreatmentError as exc:
        raise invalid(
            f"the treatment '{spec.treatment}' cannot be used: {exc}",
            "Choose a yes/no treatment column that varies across rows, or pass treated_value=V to compare V "
            "against the other values.",
            error_type="constant_treatment" if "never varies" in str(exc) else "invalid_treatment",
            column=spec.treatment,
        ) from None
    t = treatment.values
    y = frame[spec.outcome].to_numpy(dtype=float)
    arms = (int(t.sum()), int(len(t) - t.sum()))
    if min(arms) < MIN_PER_ARM:
        raise invalid(
            f"too few rows to compare: {arms[0]} treated and {arms[1]} untreated (at least {MIN_PER_ARM} each)",
            "Use more data (another brand or all brands, a longer period) or a treatment that is more balanced.",
            error_type="too_few_rows",
            treated=arms[0],
            untreated=arms[1],
        )
    if float(np.std(y)) == 0:
        raise invalid(
            f"the outcome '{spec.outcome}' never varies (always {y[0]:g})",
            "Choose an outcome that differs between rows.",
            error_type="constant_outcome",
        )
    return treatment, y


def _estimate(spec: Spec, design: cm.Design, t: np.ndarray, y: np.ndarray) -> cm.Analysis:
    """Every estimator on the rows with overlap; no overlap and perfect separation said with
    what to change."""
    try:
        return cm.analyse(
            design.matrix,
            t,
            y,
            trim=spec.trim,
            names=design.names,
            estimand=spec.estimand,
            min_per_arm=MIN_PER_ARM,
        )
    except OverlapError as exc:
        raise invalid(
            str(exc),
            "Adjust for fewer covariates, compare groups that are more alike, ask for the effect on the treated "
            "(estimand=att), or lower the overlap bound (trim=0.01; trim=0 keeps every row).",
            error_type="no_overlap",
        ) from None
    except SeparationError as exc:
        column = design.source_of.get(exc.column or "", exc.column)
        raise invalid(
            f"perfect separation in the propensity model: {exc}, so treated and untreated rows cannot be compared",
            (
                f"Leave '{column}' out of the covariates (if it is a consequence of the treatment it must not be "
                "adjusted for), or keep only the rows where both treated and untreated occur."
                if column
                else "Adjust for fewer covariates, or keep only the rows where both treated and untreated occur."
            ),
            error_type="perfect_separation",
            column=column,
        ) from None


def _dowhy(
    work: Work, spec: Spec, design: cm.Design, analysis: cm.Analysis, t: np.ndarray, y: np.ndarray
) -> DowhyResult | None:
    """DoWhy's estimate on the rows with overlap, when installed (else None, said in the notes)."""
    from concerto.packs.commercial.methods import causal_dowhy

    kept = analysis.kept
    found = causal_dowhy.estimate(
        design.matrix[kept], t[kept], y[kept], estimand=analysis.estimand, simulations=spec.simulations
    )
    if found is None:
        work.notes.append(
            "DoWhy is not installed (pip install 'concerto[causal]'): answered by the built-in estimators"
        )
    return found
