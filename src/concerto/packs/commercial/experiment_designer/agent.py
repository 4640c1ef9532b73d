"""`experiment_designer` (001): sample size and power, the minimum detectable effect, the
randomisation unit and stratification, the duration, and a short design document.

Power comes from statsmodels' power classes: `TTestIndPower` for a mean outcome (Cohen's d)
and `NormalIndPower` for a rate (Cohen's h). Whichever of effect, sample size and power the
question leaves out is solved for: "how many HCPs to detect a 10 % lift with 80 % power"
(the n per arm), "the minimum detectable effect with 400 HCPs per arm" (the MDE), "what
power do 300 HCPs per arm give for an effect size of 0.25" (the power). `reading` reads the
numbers from the caller or the question; the power analysis is `methods.power`; `wording`
says it and writes the design document.

The data, when the source has the outcome, supplies what the question does not: the baseline
mean and SD of the outcome per unit and month (to turn a lift in Rx into a standardised
effect), the units available and eligible per month (the duration), the strata that explain
the outcome (stratification, and the smaller n an adjusted analysis needs) and, for a cluster
design (randomising territories), the intra-cluster correlation by one-way ANOVA.
"""

from __future__ import annotations

from concerto.agents.base import AgentInfo
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.experiment_designer.reading import read_ask
from concerto.packs.commercial.experiment_designer.wording import answer
from concerto.packs.commercial.methods import power as dm
from concerto.packs.commercial.methods.power import Ask, Baseline

WINDOW = 3  # latest periods the baseline is read from


class ExperimentDesignerAgent(CommercialAgent):
    """Power analysis (statsmodels) and an experiment design document."""

    info = AgentInfo(
        name="experiment_designer",
        description=(
            "Designs experiments and A/B tests for commercial programs: sample size and power, the minimum "
            "detectable effect, the randomisation unit (HCP or territory clusters with the design effect), "
            "stratification, how long the test must run, and a design document."
        ),
        capabilities=[
            "Sample size per arm for a given effect, significance level and power (statsmodels power classes)",
            "Minimum detectable effect for the units available, or the power of a given sample size",
            "Cluster-randomised designs: intra-cluster correlation and design effect from the data",
            "Stratification, duration and a written design document with the analysis plan",
        ],
        inputs={
            "source": "The table to analyze (default: the built-in commercial data set)",
            "effect_size": "Standardised effect (Cohen's d), or mde (outcome units) or lift (relative, 0.1)",
            "alpha": "Significance level (default 0.05)",
            "power": "Power (default 0.8)",
            "n_per_arm": "Units per arm, to solve for the MDE or the power",
            "baseline_rate": "Baseline rate for a proportion outcome",
            "unit": "Randomisation unit: hcp (default) or a cluster column such as territory",
        },
        outputs={
            "n_per_arm": "Units needed per arm",
            "minimum_detectable_effect": "Smallest effect the design detects, standardised and in outcome units",
            "power": "Probability of detecting the effect",
            "design_document": "Markdown: hypothesis, unit, arms, sample size, duration, metric, analysis, risks",
        },
        examples=[
            "How many HCPs do we need to detect a 10% lift in Kisqali new Rx with 80% power?",
            "Design an A/B test of a new email campaign for Fabhalta",
            "What is the minimum detectable effect with 400 HCPs per arm?",
            "What power do we have with 300 HCPs per arm for an effect size of 0.25?",
            "Sample size for an effect size of 0.2 at alpha 0.05 and 90% power",
            "How many territories do we need for a cluster randomised trial of speaker programs for Kisqali?",
            "How long would a pilot need to run to detect a 5% increase in Remibrutinib total Rx?",
            "Plan a randomized test of increased sampling for Fabhalta with 90% power at the 1% significance level",
            "Our conversion rate is 12%: how many HCPs per arm to detect a lift from 12% to 14%?",
            "Design a territory-level experiment for a new rep detailing program",
            "Is 200 doctors per group enough to detect a 15% uplift in prescriptions?",
        ],
        default_timeout_ms=60000,
    )

    def analyse(self, work: Work) -> Answer:
        ask = read_ask(work)
        baseline = _baseline(work, ask)
        design = dm.solve(ask, baseline)
        work.notes.extend(design.notes)
        return answer(work, ask, baseline, design, dm.duration(ask, baseline, design))


def _baseline(work: Work, ask: Ask) -> Baseline | None:
    """The outcome's baseline, the units and the strata from the data; None when the source has
    no outcome to read (the answer then comes from the question's numbers alone)."""
    source = work.source
    named = work.given("outcome")
    if named is not None:
        outcome: str | None = cols.numeric(source, cols.resolve(source, str(named), "outcome"), "outcome")
    else:
        numbers = [c for c in cols.numeric_columns(source) if source.detected_types[c].role != "id"]
        outcome = cols.match_phrase(source, ask.outcome_phrase, numbers) if ask.outcome_phrase else None
        units_only = outcome is None and ask.rates is not None  # the question's rate; the data gives the units
        outcome = outcome or ("new_rx" if "new_rx" in numbers else None)
    if outcome is None:
        work.notes.append(f"{source.name} has no outcome named: answered from the question's numbers alone")
        return None
    profile = source.semantic_profile
    entity = profile.entity_key if profile.entity_key in source.columns else None
    time = profile.time_column if profile.time_column in source.columns else None
    fixed = [c for c in (entity, time, ask.cluster) if c]
    candidates = [
        c
        for c in source.columns
        if c not in {outcome, "brand", *fixed}
        and 1 < source.detected_types[c].distinct <= 20
        and (
            source.detected_types[c].role in ("category", "label")
            or (entity and c in cols.numeric_columns(source) and source.detected_types[c].distinct <= 12)
        )
    ]
    df = work.frame(list(dict.fromkeys([outcome, *fixed])) + candidates, dropna=False).dropna(subset=[outcome])
    if len(df) < 2 * dm.MIN_PER_ARM:
        raise invalid(
            f"{source.name} has only {len(df)} rows with {outcome}: too few for a baseline",
            "Give the baseline yourself (baseline_mean and baseline_sd, or an effect size), or another source.",
            error_type="too_few_rows",
        )
    base = dm.describe(df, outcome, entity=entity, time=time, cluster=ask.cluster, candidates=candidates, window=WINDOW)
    if named is None and units_only:
        base.outcome, base.strata, base.r2, base.between_share = "", [], 0.0, None
        work.notes.append("the rate is the question's; the data gave only the units available")
    return base


# The answer -----------------------------------------------------------------------------------------
