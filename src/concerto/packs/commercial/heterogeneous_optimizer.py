"""`heterogeneous_optimizer` (001): how the effect of an action differs by segment (CATE),
with intervals, whether the segments really differ, and where to focus the action.

The treatment, outcome and covariates are read like `causal_impact` reads them (payload
`treatment`, `outcome`, `covariates`; else the question's "effect of X on Y" and
"adjusting for ..."; else the built-in data's increased sampling → new Rx adjusted for
decile and specialty), the segment from payload `segment`, the question's "by specialty" or
a segment column it names, else specialty. The statistics are in `cate_methods`: a
cross-fitted doubly robust DR-learner on scikit-learn by default, EconML's LinearDRLearner
when asked for (`method: econml`) and installed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial import cate_methods as cm
from concerto.packs.commercial import columns as cols
from concerto.packs.commercial._base import Answer, CommercialAgent, Table, Work, invalid
from concerto.packs.commercial.data import BRANDS, CONFOUNDERS

if TYPE_CHECKING:
    import numpy as np

    from concerto.data.context import DataContext

MIN_ROWS = 50  # rows below which cross-fitted nuisance models are not worth fitting
MIN_PER_ARM = 20  # treated and untreated rows a segment needs for its own estimate
MAX_SEGMENTS = 30
BINS = 5  # a continuous segment column is cut into quintiles
SEPARATED = 0.999  # propensity AUC from which the arms count as perfectly separated
_RESPOND = re.compile(
    r"\b(?:respon\w*|react\w*|benefit\w*|gain\w*)\s+(?:\w+\s+)?(?:to|from)\s+(?P<t>.+?)"
    r"(?:\s+(?:for|in|among|across|by|per|on)\b|[?.!,]|$)",
    re.IGNORECASE,
)
_EFFECTS = re.compile(
    r"\b(?:cates?|effects|treatment effects?|uplift|lift)\s+(?:of|from)\s+(?P<t>.+?)\s+on\s+(?P<y>.+?)"
    r"(?:\s+(?:for|in|among|across|by|per)\b|[?.!,]|$)",
    re.IGNORECASE,
)
_FOCUS = re.compile(r"\b(?:focus|target|prioriti[sz]e)\s+(?P<t>.+?)\s+(?:for|on|in|among|at)\b", re.IGNORECASE)
_ECONML = re.compile(r"\b(?:econml|double machine learning|dml)\b", re.IGNORECASE)


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
        treatment, outcome = _treatment_and_outcome(work)
        segment = _segment(work, exclude={treatment, outcome})
        covariates = _covariates(work, exclude={treatment, outcome})
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
        return _answer(work, result, treatment=treatment, outcome=outcome, segment=segment, covariates=covariates)


def _treatment_and_outcome(work: Work) -> tuple[str, str]:
    """The treatment (preferring 0/1 columns) and the outcome the payload or question names."""
    source, text = work.source, work.request
    pair = cols.cause_and_effect(text)
    m = _EFFECTS.search(text)
    t_phrase = (m.group("t") if m else None) or (pair[0] if pair else None)
    y_phrase = (m.group("y") if m else None) or (pair[1] if pair else None)
    explicit = t_phrase is not None  # "effect of X on Y": a phrase naming no column is an error, not a default
    if t_phrase is None:
        found = _RESPOND.search(text) or _FOCUS.search(text)
        t_phrase = found.group("t") if found else None
    treatment = work.given("treatment")
    if treatment is not None:
        t_col: str | None = cols.resolve(source, str(treatment), "treatment")
    else:
        binary = [c for c in cols.numeric_columns(source) if source.detected_types[c].distinct == 2]
        t_col = (
            (cols.match_phrase(source, t_phrase, binary) or cols.match_phrase(source, t_phrase)) if t_phrase else None
        )
        if t_col is None and explicit:
            _unmatched(work, "treatment", str(t_phrase))
        t_col = t_col or work.column("treatment", None, default="increased_sampling")
    if work.given("outcome") is None and y_phrase and cols.match_phrase(source, y_phrase) is None:
        _unmatched(work, "outcome", y_phrase)
    y_col = work.column("outcome", y_phrase, default="new_rx")
    if t_col is None or y_col is None:
        role = "treatment" if t_col is None else "outcome"
        raise invalid(
            f"the question names no {role} column of {source.name}",
            f"Say it as 'effect of <treatment> on <outcome> by <segment>', or set '{role}' to one of: "
            f"{', '.join(cols.numeric_columns(source))}",
            error_type="missing_column",
            role=role,
        )
    if t_col == y_col:
        raise invalid(
            f"the treatment and the outcome are the same column ({t_col})",
            "Name a different outcome, e.g. 'effect of sampling on new Rx'.",
            error_type="invalid_column",
        )
    return t_col, y_col


def _unmatched(work: Work, role: str, phrase: str) -> None:
    """Refuse a phrase that names no column (unless it only names the brand: "sampling on Kisqali")."""
    brand = work.source.detected_types.get("brand")
    brands = {str(b).lower() for b in [*BRANDS, *(brand.categories if brand else [])]}
    content = [w for w in cols.words_of(phrase) if w not in brands]
    if content:
        raise invalid(
            f"no column of {work.source.name} matches the {role} '{phrase}'",
            f"Name the {role} as a column: {', '.join(cols.numeric_columns(work.source))}",
            error_type="unknown_column",
            role=role,
        )


def _segment_candidates(source: DataContext, exclude: set[str]) -> list[str]:
    """Columns a segment can be: categories, and numbers with few values (deciles)."""
    out = []
    for c in source.columns:
        p = source.detected_types[c]
        if c in exclude or p.role in ("id", "time", "text"):
            continue
        if p.role in ("category", "label", "flag") or (p.distinct and p.distinct <= 12):
            out.append(c)
    return out


def _segment(work: Work, exclude: set[str]) -> str:
    """The payload's `segment`, else the breakdown the question asks for, else specialty."""
    source = work.source
    if work.given("segment") is not None:
        return cols.resolve(source, str(work.given("segment")), "segment")
    candidates = _segment_candidates(source, exclude)
    phrase = cols.segment_phrase(work.request)
    if phrase:
        found = cols.match_phrase(source, _singular(phrase), candidates)
        if found is not None:
            return found
    words = set(re.findall(r"[a-z0-9]+", work.request.lower().replace("-", " ")))
    for c in candidates:
        name = c.replace("_", " ")
        if {name, name + "s", name[:-1] + "ies" if name.endswith("y") else name} & words:
            return c
    default = "specialty" if "specialty" in candidates else next(iter(candidates), None)
    if default is None:
        raise invalid(
            f"{source.name} has no column to segment by",
            "Set 'segment' to a category column of the source.",
            error_type="missing_column",
            role="segment",
        )
    return default


def _singular(phrase: str) -> str:
    return re.sub(r"ies\b", "y", phrase)


def _covariates(work: Work, exclude: set[str]) -> list[str]:
    """The payload's covariates, else the question's "adjusting for ...", else the built-in
    confounders, else every other numeric or category column (said in the notes)."""
    source = work.source
    given = work.given("covariates")
    if given is not None:
        names = [s.strip() for s in given.split(",")] if isinstance(given, str) else [str(g) for g in given]
        return [c for c in (cols.resolve(source, n, "covariate") for n in names if n) if c not in exclude]
    phrases = cols.adjusted_for(work.request)
    if phrases:
        found = [cols.match_phrase(source, p) for p in phrases]
        missing = [p for p, f in zip(phrases, found, strict=True) if f is None]
        if missing:
            raise invalid(
                f"no column of {source.name} matches {', '.join(repr(m) for m in missing)}",
                f"Adjust for columns of the source: {', '.join(source.columns)}",
                error_type="unknown_column",
            )
        return [f for f in dict.fromkeys(found) if f is not None and f not in exclude]
    known = [c for c in CONFOUNDERS if c in source.columns and c not in exclude]
    if known:
        return known
    others = [
        c
        for c in source.columns
        if c not in exclude and source.detected_types[c].role in ("measure", "money", "flag", "category", "label")
    ]
    work.notes.append(f"no covariates named: adjusted for every other column ({', '.join(others)})")
    return others


def _estimate(
    work: Work, x: np.ndarray, t: np.ndarray, y: np.ndarray, labels: np.ndarray, clusters: np.ndarray | None
) -> cm.CateResult:
    """EconML when asked for and installed; else (and as its fallback) the core DR-learner."""
    wanted = str(work.given("method") or ("econml" if _ECONML.search(work.request) else "dr_learner")).lower()
    if wanted == "econml":
        if cm.econml_available():
            return cm.econml_learner(x, t, y, labels, min_per_arm=MIN_PER_ARM)
        work.notes.append("EconML is not installed (the 'causal' extra): the core DR-learner answered instead")
    learner = "boosting" if work.given("nuisance") == "boosting" else "linear"
    return cm.dr_learner(x, t, y, labels, clusters=clusters, min_per_arm=MIN_PER_ARM, learner=learner)


def _row_noun(source: DataContext) -> str:
    entity = source.semantic_profile.entity_name or "row"
    return f"{entity}-month" if source.semantic_profile.time_column == "month" else f"{entity} row"


def _answer(
    work: Work, result: cm.CateResult, *, treatment: str, outcome: str, segment: str, covariates: list[str]
) -> Answer:
    source = work.source
    unit = _row_noun(source)
    t_name, y_name = source.describe(treatment).split(":")[0], source.describe(outcome).split(":")[0]
    ranked = sorted(result.segments, key=lambda e: e.cate, reverse=True)
    by_lower = sorted(result.segments, key=lambda e: e.ci[0], reverse=True)
    focus = [e for e in by_lower if e.ci[0] > 0][:3]
    work.notes.extend(result.notes)
    rows = []
    for e in ranked:
        extra = e.cate * e.untreated
        rows.append(
            {
                **e.as_dict(),
                "rank": ranked.index(e) + 1,
                "expected_extra_outcome": round(extra, 1),
                "expected_extra_interval": [round(e.ci[0] * e.untreated, 1), round(e.ci[1] * e.untreated, 1)],
            }
        )
    h = result.heterogeneity
    differ = h is not None and h.p_value < 0.05
    top = ranked[0]
    z = 1.959963984540054
    ate_ci = [round(result.ate - z * result.ate_se, 4), round(result.ate + z * result.ate_se, 4)]
    verb = "raises" if top.cate >= 0 else "lowers"
    interpretation = (
        f"{t_name.capitalize()} {verb} {y_name} by {abs(top.cate):.2f} per {unit} in {top.segment} "
        f"(95% CI {top.ci[0]:.2f} to {top.ci[1]:.2f})"
        + (f" against {ranked[-1].cate:.2f} in {ranked[-1].segment}" if len(ranked) > 1 else "")
        + (
            f"; the segments differ (χ² = {h.statistic:.1f}, df {h.df}, p = {h.p_value:.2g})."
            if differ and h
            else "; the data do not show the segments differ."
            if h
            else "."
        )
    )
    findings = [
        f"{e.segment}: {e.cate:+.2f} {y_name} per {unit} (95% CI {e.ci[0]:.2f} to {e.ci[1]:.2f}, "
        f"p = {e.p_value:.2g}, {e.n:,} rows)"
        for e in ranked
    ]
    if h:
        findings.append(
            f"Heterogeneity: χ² = {h.statistic:.1f} on {h.df} df, p = {h.p_value:.2g} — "
            + ("the effect differs by " if differ else "no evidence the effect differs by ")
            + segment
        )
    recommendations = [
        f"{'Focus' if i == 0 else 'Next'} {t_name} on {e.segment}: its effect is at least {e.ci[0]:.2f} {y_name} "
        f"per {unit}; giving it to the {e.untreated:,} untreated {unit}s would add about "
        f"{e.cate * e.untreated:,.0f} {y_name} ({e.ci[0] * e.untreated:,.0f} to {e.ci[1] * e.untreated:,.0f})"
        for i, e in enumerate(focus)
    ]
    weak = [e.segment for e in result.segments if e.ci[0] <= 0]
    if weak:
        recommendations.append(f"Do not expand {t_name} in {', '.join(weak)}: no effect distinguishable from zero")
    unanswered = [
        Unanswered(
            part=f"the effect in {segment} '{name}'",
            reason=reason,
            error_type="too_few_rows",
            suggestion="Choose a coarser segment or a source with more rows in it.",
        )
        for name, reason in result.skipped.items()
    ]
    if h is None:
        unanswered.append(
            Unanswered(part="whether segments differ", reason="only one segment has enough rows to estimate")
        )
    payload: dict[str, Any] = {
        "segments": rows,
        "ranking": [e.segment for e in ranked],
        "focus": [e.segment for e in focus],
        "heterogeneity": (
            {"statistic": round(h.statistic, 3), "df": h.df, "p_value": float(f"{h.p_value:.4g}"), "method": h.method}
            if h
            else None
        ),
        "heterogeneity_significant": differ,
        "ate": round(result.ate, 4),
        "confidence_interval": ate_ci,
        "treatment": treatment,
        "outcome": outcome,
        "segment_by": segment,
        "covariates": covariates,
        "method_used": result.method,
        "econml_used": result.method.startswith("EconML"),
        "rows": sum(e.n for e in result.segments),
        "clustered_by": source.semantic_profile.entity_key if result.clusters else None,
        "overlap": {"share_outside_0.05_0.95": result.overlap_outside, "clipped_rows": result.clipped},
        "skipped_segments": result.skipped,
        "interpretation": interpretation,
    }
    chart = Table(
        f"Effect of {t_name} on {y_name} by {segment} (CATE, 95% CI)",
        [
            {
                segment: e.segment,
                "cate": round(e.cate, 3),
                "ci_low": round(e.ci[0], 3),
                "ci_high": round(e.ci[1], 3),
                "n": e.n,
            }
            for e in ranked
        ],
        chart="bar",
        x=segment,
        y=["cate"],
    )
    focus_table = Table(
        f"Where to focus {t_name}",
        [
            {
                segment: r["segment"],
                "ci_low": r["confidence_interval"][0],
                "untreated": r["untreated"],
                "expected_extra_outcome": r["expected_extra_outcome"],
            }
            for r in sorted(rows, key=lambda r: r["confidence_interval"][0], reverse=True)
        ],
    )
    return Answer(
        payload=payload,
        summary=interpretation,
        key_findings=findings,
        recommendations=recommendations,
        follow_ups=[
            f"design an experiment to confirm the effect of {t_name} in {top.segment}",
            f"what is the overall effect of {t_name} on {y_name}?",
        ],
        requires_further_analysis=bool(result.skipped) or (result.overlap_outside or 0) > 0.1,
        tables=[chart, focus_table],
        unanswered=unanswered,
        entities={"treatment": treatment, "outcome": outcome, "segment": segment},
    )
