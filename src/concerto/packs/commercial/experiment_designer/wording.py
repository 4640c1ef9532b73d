"""How `experiment_designer` words its answer: the headline (units per arm, the effect they
detect, the power), the cluster design, the strata, how long the test runs (or why the data
has too few units), the payload, the design document and the tables."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from concerto.agents.base import Unanswered
from concerto.packs.commercial.base.agent import Answer, Table, Work

if TYPE_CHECKING:
    from concerto.packs.commercial.methods.power import Ask, Baseline, Design, Duration

_SUMMARY = (
    "solved_for",
    "n_per_arm",
    "total_n",
    "effect_size",
    "minimum_detectable_effect",
    "power",
    "alpha",
    "randomisation_unit",
    "duration_months",
    "feasible",
)


def _plural(word: str) -> str:
    return word if word.endswith("s") else (word[:-1] + "ies" if word.endswith("y") else word + "s")


def _mde_text(design: Design, metric: str, rate: bool) -> str:
    """ "0.71 new Rx (10.0%, d = 0.19)" or "a standardised effect of d = 0.20"."""
    symbol = "h" if rate else "d"
    if design.mde is None:
        return f"a standardised effect of {symbol} = {design.effect_size:.3g}"
    size = f"{design.mde * 100:.3g} percentage points" if rate else f"{design.mde:.3g} {metric}"
    relative = f"{design.mde_relative:.1%}, " if design.mde_relative is not None else ""
    return f"{size} ({relative}{symbol} = {design.effect_size:.3g})"


@dataclass
class _Words:
    """How the answer names things: the unit randomised (an HCP, or a cluster such as a
    territory), the entity, the metric, the arms' sizes, the effect detected."""

    entity: str
    unit: str
    metric: str
    rate: bool
    control: int
    treated: int
    mde: str  # the effect the design detects, in words

    @classmethod
    def of(cls, work: Work, ask: Ask, base: Baseline | None, design: Design) -> _Words:
        source = work.source
        entity = source.semantic_profile.entity_name or "unit"
        rate = design.test.startswith("two proportions")
        metric = "the primary metric" if base is None else source.describe(base.outcome).split(":")[0] or "the rate"
        if ask.rates:
            metric = "the rate" if not base or not base.outcome else metric
        return cls(
            entity=entity,
            unit=ask.cluster or entity,
            metric=metric,
            rate=rate,
            control=math.ceil(design.n_per_arm),
            treated=math.ceil(design.n_per_arm * ask.ratio),
            mde=_mde_text(design, metric, rate),
        )


def answer(work: Work, ask: Ask, base: Baseline | None, design: Design, plan: Duration) -> Answer:
    """The answer for the solved `design` and how long it runs (`plan`)."""
    words = _Words.of(work, ask, base, design)
    headline = _headline(ask, design, words)
    with_all = (
        None
        if plan.with_all is None
        else {
            "n_per_arm": math.floor(plan.with_all.n_per_arm),
            "effect_size": round(plan.with_all.effect_size, 4),
            "minimum_detectable_effect": None if plan.with_all.mde is None else round(plan.with_all.mde, 4),
            "text": _mde_text(plan.with_all, words.metric, words.rate),
        }
    )
    unanswered = []
    if plan.enrolment is None and plan.feasible:
        unanswered.append(
            Unanswered(
                part="how long the test must run",
                reason="the source gives no units per month to enrol from (no outcome, entity or time column)",
                suggestion="Choose a source with the outcome by unit and month.",
            )
        )
    payload = _payload(ask, base, design, plan, words, with_all)
    payload["interpretation"] = headline + "."
    payload["design_document"] = _document(work, ask, base, design, payload, words)
    tables = [
        Table("Design", [{"item": k, "value": _cell(payload[k])} for k in _SUMMARY if payload.get(k) is not None])
    ]
    if design.table:
        title = f"{_plural(words.entity).capitalize()} per arm by the lift to detect in {words.metric}"
        tables.insert(0, Table(title, design.table, chart="bar", x="lift", y=["n_per_arm"]))
    return Answer(
        payload=payload,
        summary=headline + ".",
        key_findings=_findings(ask, base, design, plan, words, with_all, headline),
        recommendations=_recommendations(ask, base, design, plan, words, with_all),
        follow_ups=[
            f"which specialties respond best to {ask.intervention}?",
            "what is the minimum detectable effect with the HCPs we have?",
        ],
        requires_further_analysis=not plan.feasible,
        tables=tables,
        unanswered=unanswered,
        entities={"outcome": base.outcome} if base and base.outcome else {},
    )


def _headline(ask: Ask, design: Design, words: _Words) -> str:
    """What was solved for, in one sentence: units per arm, the effect they detect, the power."""
    entity, unit = words.entity, words.unit
    at = f"at α = {ask.alpha:g} ({'one' if ask.one_sided else 'two'}-sided)"
    units = (
        f"{design.clusters_per_arm:,} {_plural(unit)} per arm ({words.control:,} {_plural(entity)})"
        if ask.cluster
        else f"{words.control:,} {_plural(entity)} per arm"
        if ask.ratio == 1
        else f"{words.control:,} control and {words.treated:,} treatment {_plural(entity)}"
    )
    return {
        "sample_size": f"{units} detect {words.mde} with {design.power:.0%} power {at}",
        "minimum_detectable_effect": f"With {units}, the smallest effect detectable with {design.power:.0%} power "
        f"{at} is {words.mde}",
        "power": f"{units} have {design.power:.1%} power to detect {words.mde} {at}",
    }[design.solved_for]


def _findings(
    ask: Ask,
    base: Baseline | None,
    design: Design,
    plan: Duration,
    words: _Words,
    with_all: dict[str, Any] | None,
    headline: str,
) -> list[str]:
    """The headline with its test, the cluster design, the strata, the duration (or the shortfall)."""
    unit, metric = words.unit, words.metric
    findings = [headline + f" — {design.test}"]
    if ask.cluster and design.icc_used is not None:
        found = base.cluster if base and base.cluster else {}
        findings.append(
            f"Randomising by {ask.cluster}: ICC {design.icc_used:.3f} (planning value; estimate "
            f"{found.get('icc_estimate', design.icc_used)}), {found.get('cluster_size', '?')} "
            f"{_plural(words.entity)} per {ask.cluster}: design effect {design.design_effect:.2f}"
        )
    if base and base.strata:
        findings.append(
            f"Stratify by {' and '.join(c for c, _ in base.strata)}: together they explain {base.r2:.0%} of the "
            f"variance of {metric}"
            + (
                f"; an analysis adjusted for them needs {math.ceil(design.n_adjusted):,} per arm"
                if design.n_adjusted
                else ""
            )
        )
    if plan.basis == "enrolment" and base and base.per_month:
        findings.append(
            f"Duration: {plan.months} month(s) to enrol {plan.needed:,} {_plural(unit)} at {base.per_month:,.0f} "
            "eligible per month"
        )
    elif base and not plan.feasible:
        findings.append(
            f"The data has {base.units:,} {_plural(unit)}, fewer than the {plan.needed:,} needed"
            + (
                f"; measuring each for {plan.months} month(s) (their average monthly {metric}) reaches the same "
                f"power with all of them"
                if plan.basis == "repeated_measures"
                else f"; with all of them the smallest detectable effect is {with_all['text'] if with_all else '?'}"
            )
        )
    return findings


def _recommendations(
    ask: Ask, base: Baseline | None, design: Design, plan: Duration, words: _Words, with_all: dict[str, Any] | None
) -> list[str]:
    """What to do when the data has too few units, and how to stratify."""
    recommendations = []
    if base and not plan.feasible:
        adjusted = math.ceil(design.n_adjusted) if design.n_adjusted else None
        options = [f"run the test for {plan.months} months and compare each unit's average"] if plan.months else []
        if adjusted and adjusted * (1 + ask.ratio) <= base.units:
            options.append(f"randomise within strata and adjust for them ({adjusted:,} per arm)")
        options.append(f"aim for a larger effect (with all of them: {with_all['text'] if with_all else '?'})")
        recommendations.append(
            f"The design needs {plan.needed:,} {_plural(words.unit)} but the data has {base.units:,}: "
            + ", or ".join(options)
        )
    if base and base.strata:
        recommendations.append(
            f"Randomise within strata of {' × '.join(c for c, _ in base.strata)} so the arms are balanced on "
            f"what drives {words.metric}"
        )
    return recommendations


def _payload(
    ask: Ask,
    base: Baseline | None,
    design: Design,
    plan: Duration,
    words: _Words,
    with_all: dict[str, Any] | None,
) -> dict[str, Any]:
    """The payload: the solved design, the cluster design, the strata, the baseline, the duration."""
    control, treated = words.control, words.treated
    return {
        "solved_for": design.solved_for,
        "n_per_arm": control,
        "n_control": control,
        "n_treatment": treated,
        "total_n": control + treated,
        "effect_size": round(design.effect_size, 4),
        "minimum_detectable_effect": round(design.mde, 4) if design.mde is not None else None,
        "minimum_detectable_effect_relative": None if design.mde_relative is None else round(design.mde_relative, 4),
        "power": round(design.power, 4),
        "alpha": ask.alpha,
        "ratio": ask.ratio,
        "alternative": "larger" if ask.one_sided else "two-sided",
        "test": design.test,
        "randomisation_unit": words.unit,
        "cluster": None
        if not ask.cluster
        else {
            **(base.cluster if base and base.cluster else {}),
            "icc_used": design.icc_used,
            "design_effect": round(design.design_effect, 3),
            "design_effect_at_estimate": _at_estimate(base),
            "clusters_per_arm": design.clusters_per_arm,
        },
        "stratification": None
        if base is None
        else {
            "columns": [c for c, _ in base.strata],
            "variance_explained": {c: round(r, 4) for c, r in base.strata},
            "variance_explained_together": round(base.r2, 4),
            "n_per_arm_adjusted": math.ceil(design.n_adjusted) if design.n_adjusted else None,
        },
        "baseline": None
        if base is None
        else {
            "outcome": base.outcome or None,
            "mean": round(ask.rates[0], 4) if ask.rates else round(base.mean, 4),
            "sd": None if ask.rates or not base.outcome else round(base.sd, 4),
            "from": "the question" if ask.rates else base.window,
            "units": base.units,
            "eligible_per_month": base.per_month,
        },
        "duration_months": plan.months,
        "duration_basis": plan.basis,
        "enrolment_months": plan.enrolment,
        "feasible": plan.feasible,
        "with_available_units": with_all,
    }


def _cell(value: Any) -> Any:
    return value if isinstance(value, int | float | str | bool) else str(value)


def _document(work: Work, ask: Ask, base: Baseline | None, design: Design, out: dict[str, Any], words: _Words) -> str:
    """The design document (markdown): hypothesis, unit, arms, sample size, duration, primary
    metric, analysis plan, risks."""
    entity, metric = words.entity, words.metric
    brand = f" for {work.brand}" if work.brand else ""
    unit = out["randomisation_unit"]
    cluster = out["cluster"]
    lines = [
        f"# Experiment design: {ask.intervention}{brand}",
        "",
        f"**Hypothesis.** The treatment ({ask.intervention}) changes {metric} per {entity} per month against "
        f"control (H₀: no difference between arms; {out['alternative']} test at α = {ask.alpha:g}). "
        f"The design detects {words.mde} with {design.power:.0%} power.",
        "",
        "**Randomisation unit.** " + _unit_text(entity, unit, cluster),
        "",
        f"**Arms.** Control (current practice) and treatment ({ask.intervention}), allocation "
        f"1:{ask.ratio:g} (control:treatment).",
        "",
        f"**Sample size.** {out['n_control']:,} control and {out['n_treatment']:,} treatment {_plural(entity)} "
        f"({out['total_n']:,} in all"
        + (f"; {cluster['clusters_per_arm']:,} {_plural(unit)} per arm" if cluster else "")
        + f"), {design.test}; effect size {design.effect_size:.3f}, power {design.power:.1%}.",
        "",
        "**Stratification.** " + _strata_text(base, design, out, metric),
        "",
        "**Duration.** " + _duration_text(out, base, unit, metric),
        "",
        f"**Primary metric.** {metric} per {entity} per month; baseline "
        + (
            f"rate {ask.rates[0]:.1%} (from the question)."
            if ask.rates
            else f"mean {base.mean:.3g}, SD {base.sd:.3g} ({base.window} of {work.source.name})."
            if base and base.outcome
            else "from the question."
        ),
        "",
        "**Analysis plan.** " + _analysis_text(base, unit, cluster, metric),
        "",
        "**Risks.** " + _risks_text(out),
    ]
    return "\n".join(lines)


def _unit_text(entity: str, unit: str, cluster: dict[str, Any] | None) -> str:
    """Who is randomised: the entity, or clusters with their ICC and design effect."""
    if not cluster:
        return f"{entity} (individual randomisation)."
    return (
        f"{unit} (cluster design: every {entity} in a {unit} gets the same arm, so reps and "
        f"{_plural(entity)} of one {unit} cannot contaminate the other arm). ICC {cluster['icc_used']:.3f} "
        f"(one-way ANOVA estimate {cluster.get('icc_estimate', 'given')}, planned with the upper 95% bound), "
        f"{cluster.get('cluster_size', 0):g} {_plural(entity)} per {unit}, design effect "
        f"1 + (m − 1)·ICC = {cluster['design_effect']:.2f}."
    )


def _strata_text(base: Baseline | None, design: Design, out: dict[str, Any], metric: str) -> str:
    """The strata to randomise within, what each explains, and the smaller n an adjusted analysis needs."""
    strata = base.strata if base else []
    if not strata:
        return "None: no fixed attribute in the data explains the outcome."
    return (
        f"Randomise within strata of {' × '.join(c for c, _ in strata)}: "
        + ", ".join(f"{c} explains {r:.0%} of the variance of {metric}" for c, r in strata)
        + ", so balancing them removes chance imbalance and the adjusted analysis narrows the interval"
        + (
            f" (about {out['stratification']['n_per_arm_adjusted']:,} per arm would suffice)."
            if design.n_adjusted
            else "."
        )
    )


def _analysis_text(base: Baseline | None, unit: str, cluster: dict[str, Any] | None, metric: str) -> str:
    """The analysis plan: intention to treat, the comparison, the adjustment, the interval."""
    strata = base.strata if base else []
    return (
        "Intention to treat. "
        + (
            f"Compare arms with a mixed model (random {unit} intercept) or on {unit} means; "
            if cluster
            else "Welch two-sample t-test on the primary metric; "
        )
        + (
            f"ANCOVA adjusting for {', '.join(c for c, _ in strata)} and the pre-period {metric} as the "
            "primary adjusted estimate; "
            if strata
            else ""
        )
        + "report the effect with its 95% confidence interval; one primary metric, others secondary."
    )


def _risks_text(out: dict[str, Any]) -> str:
    """Too few units, when so, and the usual risks of a field experiment."""
    return (
        (
            ""
            if out["feasible"]
            else "The data has fewer units than the design needs (see Duration). "
            if out["duration_basis"] == "repeated_measures"
            else "Underpowered: the data has fewer units than the design needs. "
        )
        + "The SD or ICC may be larger than in the baseline months; contamination between arms (shared reps, "
        "peer influence); novelty effects fading; seasonality; attrition of units; testing many metrics."
    )


def _duration_text(out: dict[str, Any], base: Baseline | None, unit: str, metric: str) -> str:
    if base is None or (out["duration_basis"] == "enrolment" and not base.per_month):
        return "Not computed: the source has no monthly counts of eligible units."
    if out["duration_basis"] == "enrolment":
        return (
            f"{out['duration_months']} month(s) to enrol at {base.per_month:,.0f} eligible {_plural(unit)} per month "
            "(from the data); run whole months so the season affects both arms alike."
        )
    if out["duration_basis"] == "repeated_measures":
        return (
            f"The data has {base.units:,} {_plural(unit)}, fewer than the design needs: measure each for "
            f"{out['duration_months']} months and compare their average monthly {metric}, which reaches the same "
            f"power with all of them ({base.between_share:.0%} of the monthly variance is between {_plural(unit)})."
        )
    return (
        f"Not reachable: the data has {base.units:,} {_plural(unit)}; with all of them the smallest detectable "
        f"effect is {(out['with_available_units'] or {}).get('text', '?')}."
    )


def _at_estimate(base: Baseline | None) -> float | None:
    """The design effect at the ICC's point estimate (the design plans with its upper bound)."""
    if not base or not base.cluster:
        return None
    return round(1 + (base.cluster["cluster_size"] - 1) * max(base.cluster["icc_estimate"], 0.0), 3)
