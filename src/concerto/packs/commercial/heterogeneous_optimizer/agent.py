"""`heterogeneous_optimizer` (001): how the effect of an action differs by segment (CATE),
with intervals, whether the segments really differ, and where to focus the action.

`reading` reads the treatment, outcome, covariates and segment; the statistics are in
`methods.cate`: a cross-fitted doubly robust DR-learner on scikit-learn by default, EconML's
LinearDRLearner when asked for (`method: econml`) and installed; `wording` says it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from concerto.agents.base import AgentInfo
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.heterogeneous_optimizer.reading import (
    covariates_of,
    method_asked,
    segment_of,
    treatment_and_outcome,
)
from concerto.packs.commercial.heterogeneous_optimizer.wording import answer
from concerto.packs.commercial.methods import cate as cm

if TYPE_CHECKING:
    import numpy as np

MIN_ROWS = 50  # rows below which cross-fitted nuisance models are not worth fitting
MIN_PER_ARM = 20  # treated and untreated rows a segment needs for its own estimate
MAX_SEGMENTS = 30
BINS = 5  # a continuous segment column is cut into quintiles
SEPARATED = 0.999  # propensity AUC from which the arms count as perfectly separated


class HeterogeneousOptimizerAgent(CommercialAgent):
    """Segment-level treatment effects (DR-learner), a heterogeneity test and focus segments."""

    info = AgentInfo(
        name="heterogeneous_optimizer",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Estimates how the effect of a commercial action (sampling, calls, emails, speaker events) on "
            "prescriptions differs by segment such as specialty, decile or region: conditional average "
            "treatment effects (CATE) with confidence intervals, a test of whether segments differ, and "
            "which segments to focus the action on for the most extra prescriptions."
        ),
        capabilities=[
            "Estimate conditional average treatment effects (CATE) by segment with 95% intervals",
            "Doubly robust DR-learner with cross-fitted propensity and outcome models",
            "Test whether the effect differs across segments (heterogeneity)",
            "Rank segments and recommend where to focus an action, with the expected extra outcome",
        ],
        inputs={
            "source": "The table to analyze (default: the built-in commercial data set)",
            "treatment": "The action (a 0/1 column), e.g. increased_sampling",
            "outcome": "The numeric outcome, e.g. new_rx",
            "covariates": "Confounders to adjust for (default: decile and specialty)",
            "segment": "The column to break the effect down by (default: specialty)",
            "method": "dr_learner (default) or econml",
        },
        outputs={
            "segments": "Each segment's CATE, confidence interval, p-value, size and share",
            "ranking": "Segments from the largest effect to the smallest",
            "focus": "Segments to focus on, by the lower bound of their interval",
            "heterogeneity": "Wald test that the segment effects are equal",
        },
        examples=[
            "Which specialties respond best to increased sampling for Kisqali?",
            "Where should we focus sampling for Fabhalta?",
            "How does the effect of sampling on new Rx differ by specialty?",
            "Which segments benefit most from increased sampling?",
            "Effect of increased sampling on prescriptions by decile for Remibrutinib",
            "Which HCP deciles get the biggest lift from samples?",
            "Do oncologists respond more to sampling than hematologist-oncologists?",
            "Heterogeneous treatment effects of sampling across regions",
            "Which territories should we target with more samples to grow Kisqali new Rx?",
            "Conditional average treatment effect of sampling on new prescriptions by specialty",
            "Is the sampling effect on Fabhalta prescriptions the same in every specialty?",
        ],
        default_timeout_ms=25000,
    )

    def analyse(self, work: Work) -> Answer:
        source = work.source
        treatment, outcome = treatment_and_outcome(work)
        segment = segment_of(work, exclude={treatment, outcome})
        covariates = covariates_of(work, exclude={treatment, outcome})
        cols.numeric(source, outcome, "outcome")
        key = source.semantic_profile.entity_key
        cluster = key if key and key in source.columns and key not in {treatment, outcome, segment} else None
        df = work.frame(
            list(dict.fromkeys([treatment, outcome, segment, *covariates, *([cluster] if cluster else [])]))
        )
        if len(df) < MIN_ROWS:
            raise invalid(
                f"only {len(df)} rows to analyse (after the brand filter and dropping missing values); "
                f"segment effects need at least {MIN_ROWS}",
                "Choose a larger source, another brand, or fewer covariates with missing values.",
                error_type="too_few_rows",
                rows=len(df),
            )
        t = cm.binary_treatment(df[treatment], treatment, work.notes)
        y = cm.numeric_outcome(df[outcome], outcome)
        labels = cm.segment_labels(df[segment], segment, work.notes, bins=BINS, most=MAX_SEGMENTS)
        x = cm.design_matrix(df.assign(**{f"__{segment}": labels}), [*covariates, f"__{segment}"])
        clusters = df[cluster].to_numpy() if cluster and df[cluster].duplicated().any() else None
        result = _estimate(work, x, t, y, labels.to_numpy(), clusters)
        if not result.segments:
            raise invalid(
                f"no segment of {segment} has {MIN_PER_ARM} treated and {MIN_PER_ARM} untreated rows",
                "Choose a coarser segment column, or a source with more rows per segment.",
                error_type="too_few_rows",
                skipped=result.skipped,
            )
        if result.propensity_auc is not None and result.propensity_auc >= SEPARATED:
            raise invalid(
                f"the covariates ({', '.join(covariates)}) predict {treatment} perfectly (propensity AUC "
                f"{result.propensity_auc:.4f}): treated and untreated rows are not comparable (perfect separation)",
                "Leave out the covariate that decides the treatment, or choose rows where both arms occur.",
                error_type="perfect_separation",
            )
        if result.overlap_outside and 0.1 < result.overlap_outside <= cm.TRIM_WHEN:
            work.notes.append(
                f"poor overlap: {result.overlap_outside:.0%} of rows have a propensity outside 0.05–0.95 "
                f"({result.clipped:,} clipped to {cm.CLIP}–{1 - cm.CLIP}); there the effects lean on the outcome "
                "model, so read them with care or restrict the rows to comparable ones"
            )
        return answer(work, result, treatment=treatment, outcome=outcome, segment=segment, covariates=covariates)


def _estimate(
    work: Work, x: np.ndarray, t: np.ndarray, y: np.ndarray, labels: np.ndarray, clusters: np.ndarray | None
) -> cm.CateResult:
    """EconML when asked for and installed; else (and as its fallback) the core DR-learner."""
    wanted, learner = method_asked(work)
    if wanted == "econml":
        if cm.econml_available():
            return cm.econml_learner(x, t, y, labels, min_per_arm=MIN_PER_ARM)
        work.notes.append("EconML is not installed (the 'causal' extra): the core DR-learner answered instead")
    return cm.dr_learner(x, t, y, labels, clusters=clusters, min_per_arm=MIN_PER_ARM, learner=learner)
