"""`experiment_designer` (001): sample size and power, the minimum detectable effect, the
randomisation unit and stratification, the duration, and a short design document.

Power comes from statsmodels' power classes: `TTestIndPower` for a mean outcome (Cohen's d)
and `NormalIndPower` for a rate (Cohen's h). Whichever of effect, sample size and power the
question leaves out is solved for: "how many HCPs to detect a 10 % lift with 80 % power"
(the n per arm), "the minimum detectable effect with 400 HCPs per arm" (the MDE), "what
power do 300 HCPs per arm give for an effect size of 0.25" (the power). Numbers come from the
payload (`effect_size`, `mde`, `lift`, `alpha`, `power`, `ratio`, `n_per_arm`,
`baseline_rate`, `baseline_mean`, `baseline_sd`, `unit`, `icc`) or the question.

The data, when the source has the outcome, supplies what the question does not: the baseline
mean and SD of the outcome per unit and month (to turn a lift in Rx into a standardised
effect), the units available and eligible per month (the duration), the strata that explain
the outcome (stratification, and the smaller n an adjusted analysis needs) and, for a cluster
design (randomising territories), the intra-cluster correlation by one-way ANOVA.
"""

from __future__ import annotations

import math
import re
from typing import Any

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial import columns as cols
from concerto.packs.commercial import design_methods as dm
from concerto.packs.commercial._base import Answer, CommercialAgent, Table, Work, invalid
from concerto.packs.commercial.design_methods import Ask, Baseline, Design

WINDOW = 3  # latest periods the baseline is read from
_NUM = r"(\d[\d,]*(?:\.\d+)?|\.\d+)"
_PCT = r"\s*(%|percent|per cent)?"
_PATTERNS = {
    "power": [rf"{_NUM}{_PCT}\s*(?:statistical\s+)?power", rf"\bpower\s*(?:of|=|:|at|is)?\s*{_NUM}{_PCT}"],
    "alpha": [
        rf"(?:\balpha|α|significance(?:\s+level)?|level\s+of\s+significance)\s*(?:of|=|:|at|is)?\s*{_NUM}{_PCT}",
        rf"{_NUM}{_PCT}\s*(?:significance|level\b)",
    ],
    "confidence": [rf"{_NUM}{_PCT}\s*confidence"],
    "effect_size": [
        rf"(?:effect\s+size|cohen'?s\s+[dh]|standardi[sz]ed\s+effect|\bd\s*=)\s*(?:of|=|:|is)?\s*(-?{_NUM})",
        rf"(-?{_NUM})\s*(?:standard\s+deviations?|sds?\b|sigma)",
        rf"\beffect\s+of\s+(-?{_NUM})(?!\s*%)(?!\d)",
    ],
    "lift": [
        rf"(-?{_NUM})\s*(?:%|percent|per cent)\s*(?:relative\s+)?(?:lift|increase|uplift|improvement|rise|gain|growth|"
        r"change|difference|more|higher|boost)",
        rf"(?:lift|increase|uplift|improvement|rise|growth|boost)\s+of\s+(-?{_NUM})\s*(?:%|percent)",
    ],
    "mde": [
        rf"(?:increase|difference|change|lift|rise|mde)\s+of\s+(-?{_NUM})(?!\s*%)(?!\d)",
        rf"detect\s+(?:an?\s+)?(-?{_NUM})(?!\s*%)\s+(?:more|additional|extra)",
    ],
}
_PER_ARM = re.compile(rf"{_NUM}\s+(?:(?P<noun>[a-z-]+)\s+)?(?:per|in\s+each|each|an?)\s+(?:arm|group)", re.I)
_TOTAL = re.compile(rf"(?:with|have|using|of|only)\s+{_NUM}\s+(?P<noun>[a-z-]+)\b(?!\s+(?:per|each|in each))", re.I)
_RATES = re.compile(rf"from\s+{_NUM}\s*%\s*to\s+{_NUM}\s*%", re.I)
_RATE = re.compile(rf"(?:rate|proportion|share)\s*(?:of|is|=|:|at)?\s*{_NUM}\s*%", re.I)
_RATIO = re.compile(rf"{_NUM}\s*:\s*{_NUM}\s*(?:allocation|split|ratio)|ratio\s+(?:of\s+)?{_NUM}", re.I)
_UNIT = re.compile(
    r"randomi[sz]\w*\s+(?:by|at\s+the\s+level\s+of|at)\s+(?P<a>[a-z]+)|(?P<b>[a-z]+)[- ]level"
    r"|how\s+many\s+(?P<c>[a-z]+)|cluster\w*\s+(?:by|of)\s+(?P<d>[a-z]+)",
    re.I,
)
_OUTCOME = re.compile(
    r"(?:lift|increase|change|difference|uplift|improvement|rise|growth|effect|boost)\s+(?:in|on)\s+(?P<y>.+?)"
    r"(?:\s+(?:with|at|for|by|per|using|if|when|among|over|and)\b|[?.!,]|$)",
    re.I,
)
_ARM = re.compile(
    r"(?:test|trial|pilot|experiment|a/b test)\s+(?:of|for|on)\s+(?P<t>.+?)"
    r"(?:\s+(?:for|in|on|among|with|to|by)\b|[?.!,]|$)",
    re.I,
)
_INDIVIDUAL = {"hcp", "doctor", "physician", "unit", "prescriber", "customer", "account", "patient", "participant"}
_GROUPS = {"territory", "region", "cluster", "site", "practice", "hospital", "area"}


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
        ask = _read(work)
        baseline = _baseline(work, ask)
        design = dm.solve(ask, baseline)
        return _answer(work, ask, baseline, design)


# Reading the question ----------------------------------------------------------------------------


def _number(text: str, pct: str | None) -> float:
    value = float(text.replace(",", ""))
    return value / 100 if pct else value


def _find(key: str, text: str) -> float | None:
    for pattern in _PATTERNS[key]:
        m = re.search(pattern, text, re.I)
        if m:
            groups = [g for g in m.groups()]
            pct = groups[1] if len(groups) > 1 and key in ("power", "alpha", "confidence") else None
            value = _number(groups[0], pct)
            return value / 100 if key == "lift" else value
    return None


def _given_float(work: Work, key: str) -> float | None:
    value = work.given(key)
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise invalid(f"'{key}' must be a number, not {value!r}", f"Give {key} as a number.") from None


def _read(work: Work) -> Ask:
    """The ask from the payload (first) and the question; checked so the power classes get sane inputs."""
    text = work.request
    ask = Ask()
    for key in ("effect_size", "lift", "mde", "power"):
        setattr(ask, key, _given_float(work, key) if work.given(key) is not None else _find(key, text))
    alpha = _given_float(work, "alpha")
    if alpha is None:
        alpha = _find("alpha", text)
        confidence = _find("confidence", text)
        alpha = alpha if alpha is not None else (round(1 - confidence, 10) if confidence is not None else None)
    ask.alpha = 0.05 if alpha is None else alpha
    given_ratio = _given_float(work, "ratio")
    m = _RATIO.search(text)
    if given_ratio is not None:
        ask.ratio = given_ratio
    elif m:
        ask.ratio = float(m.group(3)) if m.group(3) else float(m.group(1)) / float(m.group(2))
    ask.one_sided = bool(re.search(r"one[- ](?:sided|tailed)", text, re.I)) or work.given("alternative") == "larger"
    n = _given_float(work, "n_per_arm")
    noun: str | None = None
    if n is None:
        per_arm = _PER_ARM.search(text)
        if per_arm:
            n, noun = float(per_arm.group(1).replace(",", "")), per_arm.group("noun")
        elif (total := _TOTAL.search(text)) and _is_unit(work, total.group("noun")):
            n, noun = float(total.group(1).replace(",", "")) / (1 + ask.ratio), total.group("noun")
    ask.n_per_arm = n
    rates = _RATES.search(text)
    rate = _given_float(work, "baseline_rate")
    if rate is not None:
        ask.rates = (rate, None)
    elif rates:
        ask.rates = (_number(rates.group(1), "%"), _number(rates.group(2), "%"))
    elif found := _RATE.search(text):
        ask.rates = (_number(found.group(1), "%"), None)
    ask.mean, ask.sd, ask.icc = (_given_float(work, k) for k in ("baseline_mean", "baseline_sd", "icc"))
    ask.cluster, ask.n_is_clusters = _cluster(work, noun)
    outcome = _OUTCOME.search(text)
    ask.outcome_phrase = outcome.group("y") if outcome and re.search(r"[a-z]", outcome.group("y"), re.I) else None
    arm = _ARM.search(text)
    ask.intervention = arm.group("t") if arm else str(work.given("intervention") or ask.intervention)
    dm.check(ask)
    return ask


def _cluster(work: Work, noun: str | None) -> tuple[str | None, bool]:
    """The cluster column when the design randomises groups (payload `unit`, "by territory",
    "territory-level", "how many territories", "cluster"), and whether the n given counts clusters."""
    source = work.source
    entity = (source.semantic_profile.entity_name or "").lower()
    named = work.given("unit")
    if named is not None:
        word = _singular(str(named))
        if word in _INDIVIDUAL or word == entity or source.column_of(word) == source.semantic_profile.entity_key:
            return None, False
        column = cols.resolve(source, str(named), "randomisation unit")
        if source.detected_types[column].role not in ("category", "label"):
            raise invalid(
                f"the randomisation unit '{column}' is not a grouping column",
                "Randomise HCPs (unit: hcp) or groups named by a category column such as territory or region.",
                error_type="invalid_column",
            )
        return column, False
    words = [m.group(m.lastgroup or "a") for m in _UNIT.finditer(work.request)] + ([noun] if noun else [])
    if re.search(r"\bcluster", work.request, re.I) and "territory" in source.columns:
        words.append("territory")
    for word in map(_singular, words):
        if word in _INDIVIDUAL or word == entity:
            continue
        found = source.column_of(word)
        if found and source.detected_types[found].role in ("category", "label"):
            return found, noun is not None and _singular(noun) == word
    return None, False


def _is_unit(work: Work, noun: str) -> bool:
    """Whether "400 <noun>" counts units: HCPs, doctors, territories, or a category column's name."""
    word = _singular(noun)
    entity = (work.source.semantic_profile.entity_name or "").lower()
    return word in _INDIVIDUAL or word in _GROUPS or word == entity or work.source.column_of(word) is not None


def _singular(word: str) -> str:
    word = word.lower().strip()
    return re.sub(r"ies$", "y", word) if word.endswith("ies") else word.removesuffix("s")


# What the data says -------------------------------------------------------------------------------


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


def _answer(work: Work, ask: Ask, base: Baseline | None, design: Design) -> Answer:
    source = work.source
    entity = source.semantic_profile.entity_name or "unit"
    unit = ask.cluster or entity
    rate = design.test.startswith("two proportions")
    control, treated = math.ceil(design.n_per_arm), math.ceil(design.n_per_arm * ask.ratio)
    metric = "the primary metric" if base is None else source.describe(base.outcome).split(":")[0] or "the rate"
    if ask.rates:
        metric = "the rate" if not base or not base.outcome else metric
    work.notes.extend(design.notes)
    clusters = (design.clusters_per_arm or 0) * 2 if ask.cluster else None
    needed = clusters if clusters is not None else control + treated
    feasible = base is None or needed <= base.units
    enrolment = math.ceil(needed / base.per_month) if base and base.per_month else None
    months, basis = (enrolment, "enrolment") if feasible else (None, "infeasible")
    with_all: dict[str, Any] | None = None
    if base and not feasible:
        measured = dm.months_of_measurement(ask, base, design)
        if measured is not None:
            months, basis = measured, "repeated_measures"
        size = (base.cluster or {}).get("cluster_size", 1.0) if ask.cluster else 1.0
        best = dm.mde_at(ask, base, base.units * size / (1 + ask.ratio), design.power)
        with_all = {
            "n_per_arm": math.floor(best.n_per_arm),
            "effect_size": round(best.effect_size, 4),
            "minimum_detectable_effect": None if best.mde is None else round(best.mde, 4),
            "text": _mde_text(best, metric, rate),
        }
    mde = _mde_text(design, metric, rate)
    at = f"at α = {ask.alpha:g} ({'one' if ask.one_sided else 'two'}-sided)"
    units = (
        f"{design.clusters_per_arm:,} {_plural(unit)} per arm ({control:,} {_plural(entity)})"
        if ask.cluster
        else f"{control:,} {_plural(entity)} per arm"
        if ask.ratio == 1
        else f"{control:,} control and {treated:,} treatment {_plural(entity)}"
    )
    headline = {
        "sample_size": f"{units} detect {mde} with {design.power:.0%} power {at}",
        "minimum_detectable_effect": f"With {units}, the smallest effect detectable with {design.power:.0%} power "
        f"{at} is {mde}",
        "power": f"{units} have {design.power:.1%} power to detect {mde} {at}",
    }[design.solved_for]
    findings = [headline + f" — {design.test}"]
    if ask.cluster and design.icc_used is not None:
        found = base.cluster if base and base.cluster else {}
        findings.append(
            f"Randomising by {ask.cluster}: ICC {design.icc_used:.3f} (planning value; estimate "
            f"{found.get('icc_estimate', design.icc_used)}), {found.get('cluster_size', '?')} {_plural(entity)} per "
            f"{ask.cluster}: design effect {design.design_effect:.2f}"
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
    if basis == "enrolment" and base and base.per_month:
        findings.append(
            f"Duration: {months} month(s) to enrol {needed:,} {_plural(unit)} at {base.per_month:,.0f} eligible "
            "per month"
        )
    elif base and not feasible:
        findings.append(
            f"The data has {base.units:,} {_plural(unit)}, fewer than the {needed:,} needed"
            + (
                f"; measuring each for {months} month(s) (their average monthly {metric}) reaches the same power "
                f"with all of them"
                if basis == "repeated_measures"
                else f"; with all of them the smallest detectable effect is {with_all['text'] if with_all else '?'}"
            )
        )
    recommendations = []
    if base and not feasible:
        adjusted = math.ceil(design.n_adjusted) if design.n_adjusted else None
        options = [f"run the test for {months} months and compare each unit's average"] if months else []
        if adjusted and adjusted * (1 + ask.ratio) <= base.units:
            options.append(f"randomise within strata and adjust for them ({adjusted:,} per arm)")
        options.append(f"aim for a larger effect (with all of them: {with_all['text'] if with_all else '?'})")
        recommendations.append(
            f"The design needs {needed:,} {_plural(unit)} but the data has {base.units:,}: " + ", or ".join(options)
        )
    if base and base.strata:
        recommendations.append(
            f"Randomise within strata of {' × '.join(c for c, _ in base.strata)} so the arms are balanced on "
            f"what drives {metric}"
        )
    unanswered = []
    if enrolment is None and feasible:
        unanswered.append(
            Unanswered(
                part="how long the test must run",
                reason="the source gives no units per month to enrol from (no outcome, entity or time column)",
                suggestion="Choose a source with the outcome by unit and month.",
            )
        )
    payload: dict[str, Any] = {
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
        "randomisation_unit": unit,
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
        "duration_months": months,
        "duration_basis": basis,
        "enrolment_months": enrolment,
        "feasible": feasible,
        "with_available_units": with_all,
        "interpretation": headline + ".",
    }
    payload["design_document"] = _document(work, ask, base, design, payload, metric=metric, mde=mde)
    tables = [
        Table("Design", [{"item": k, "value": _cell(payload[k])} for k in _SUMMARY if payload.get(k) is not None])
    ]
    if design.table:
        title = f"{_plural(entity).capitalize()} per arm by the lift to detect in {metric}"
        tables.insert(0, Table(title, design.table, chart="bar", x="lift", y=["n_per_arm"]))
    return Answer(
        payload=payload,
        summary=headline + ".",
        key_findings=findings,
        recommendations=recommendations,
        follow_ups=[
            f"which specialties respond best to {ask.intervention}?",
            "what is the minimum detectable effect with the HCPs we have?",
        ],
        requires_further_analysis=not feasible,
        tables=tables,
        unanswered=unanswered,
        entities={"outcome": base.outcome} if base and base.outcome else {},
    )


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


def _cell(value: Any) -> Any:
    return value if isinstance(value, int | float | str | bool) else str(value)


def _document(
    work: Work, ask: Ask, base: Baseline | None, design: Design, out: dict[str, Any], *, metric: str, mde: str
) -> str:
    """The design document (markdown): hypothesis, unit, arms, sample size, duration, primary
    metric, analysis plan, risks."""
    entity = work.source.semantic_profile.entity_name or "unit"
    brand = f" for {work.brand}" if work.brand else ""
    unit = out["randomisation_unit"]
    cluster = out["cluster"]
    strata = base.strata if base else []
    lines = [
        f"# Experiment design: {ask.intervention}{brand}",
        "",
        f"**Hypothesis.** The treatment ({ask.intervention}) changes {metric} per {entity} per month against "
        f"control (H₀: no difference between arms; {out['alternative']} test at α = {ask.alpha:g}). "
        f"The design detects {mde} with {design.power:.0%} power.",
        "",
        "**Randomisation unit.** "
        + (
            f"{unit} (cluster design: every {entity} in a {unit} gets the same arm, so reps and "
            f"{_plural(entity)} of one {unit} cannot contaminate the other arm). ICC {cluster['icc_used']:.3f} "
            f"(one-way ANOVA estimate {cluster.get('icc_estimate', 'given')}, planned with the upper 95% bound), "
            f"{cluster.get('cluster_size', 0):g} {_plural(entity)} per {unit}, design effect "
            f"1 + (m − 1)·ICC = {cluster['design_effect']:.2f}."
            if cluster
            else f"{entity} (individual randomisation)."
        ),
        "",
        f"**Arms.** Control (current practice) and treatment ({ask.intervention}), allocation "
        f"1:{ask.ratio:g} (control:treatment).",
        "",
        f"**Sample size.** {out['n_control']:,} control and {out['n_treatment']:,} treatment {_plural(entity)} "
        f"({out['total_n']:,} in all"
        + (f"; {cluster['clusters_per_arm']:,} {_plural(unit)} per arm" if cluster else "")
        + f"), {design.test}; effect size {design.effect_size:.3f}, power {design.power:.1%}.",
        "",
        "**Stratification.** "
        + (
            f"Randomise within strata of {' × '.join(c for c, _ in strata)}: "
            + ", ".join(f"{c} explains {r:.0%} of the variance of {metric}" for c, r in strata)
            + ", so balancing them removes chance imbalance and the adjusted analysis narrows the interval"
            + (
                f" (about {out['stratification']['n_per_arm_adjusted']:,} per arm would suffice)."
                if design.n_adjusted
                else "."
            )
            if strata
            else "None: no fixed attribute in the data explains the outcome."
        ),
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
        "**Analysis plan.** Intention to treat. "
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
        + "report the effect with its 95% confidence interval; one primary metric, others secondary.",
        "",
        "**Risks.** "
        + (
            ""
            if out["feasible"]
            else "The data has fewer units than the design needs (see Duration). "
            if out["duration_basis"] == "repeated_measures"
            else "Underpowered: the data has fewer units than the design needs. "
        )
        + "The SD or ICC may be larger than in the baseline months; contamination between arms (shared reps, "
        "peer influence); novelty effects fading; seasonality; attrition of units; testing many metrics.",
    ]
    return "\n".join(lines)


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
