"""How `causal_impact` reads a question: the treatment, the outcome, the adjustment set and
the options, from the caller's `treatment`, `outcome`, `covariates` (a list) or `graph` (a
DAG as {node: [parents]} or a list of [cause, effect] edges; the adjustment set is then the
treatment's parents, which block every backdoor path when the graph is right), else the
question ("impact of X on Y, adjusting for A and B"); on the built-in data set increased
sampling → new Rx adjusted for decile and specialty. Elsewhere, with no covariates named,
every other number or category column except ids and dates (said in the card). Options:
`estimand` (ate, att, auto), `trim` (overlap bounds, 0.05), `treated_value`, `simulations`,
`library: "dowhy"`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from concerto.agents.base import Unanswered
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.agent import Work
from concerto.packs.commercial.base.data import CONFOUNDERS, PANEL
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.methods import causal as cm
from concerto.packs.commercial.methods.causal_refute import SIMULATIONS
from concerto.packs.commercial.methods.errors import GraphError

_ATT = re.compile(
    r"\b(att|on the treated|among the treated|for the treated|for those (?:who|that) (?:got|received))\b", re.I
)
_ATE = re.compile(r"\b(ate|average treatment effect|average effect)\b", re.I)


def read_spec(work: Work) -> Spec:
    """The treatment, outcome, adjustment set and options, from the payload, else the question,
    else the built-in data set's defaults; unknown names fail with the columns that exist."""
    source = work.source
    built_in = bool(source.built_in) and source.name == PANEL
    unanswered: list[Unanswered] = []
    phrases = cols.cause_and_effect(work.request)
    treatment = _pick(work, "treatment", phrases[0] if phrases else None, _binary_columns(work), built_in, unanswered)
    outcome = _pick(
        work,
        "outcome",
        phrases[1] if phrases else None,
        [c for c in cols.numeric_columns(source) if c != treatment],
        built_in,
        unanswered,
    )
    cols.numeric(source, outcome, "outcome")
    if outcome == treatment:
        raise invalid(
            f"the treatment and the outcome are the same column ('{outcome}')",
            "Name a different outcome.",
            error_type="invalid_input",
        )
    covariates, why = _covariates(work, treatment, outcome, built_in, unanswered)
    return Spec(
        treatment=treatment,
        outcome=outcome,
        covariates=covariates,
        adjustment_reason=why,
        estimand=_estimand(work),
        trim=_number(work, "trim", cm.TRIM, 0.0, 0.25),
        simulations=int(_number(work, "simulations", SIMULATIONS, 5, 200)),
        library="dowhy"
        if "dowhy" in {str(work.given(k) or "").strip().lower() for k in ("library", "method")}
        else "core",
        unanswered=unanswered,
    )


def _binary_columns(work: Work) -> list[str]:
    """Columns with two values: what a treatment usually is, so they are matched first."""
    types = work.source.detected_types
    return [c for c in work.source.columns if types[c].distinct == 2 or types[c].role == "flag"]


def _pick(
    work: Work, role: str, phrase: str | None, preferred: list[str], built_in: bool, unanswered: list[Unanswered]
) -> str:
    source = work.source
    named = work.given(role)
    if named is not None:
        return cols.resolve(source, str(named), role)
    default = {"treatment": "increased_sampling", "outcome": "new_rx"}[role] if built_in else None
    if phrase:
        found = cols.match_phrase(source, phrase, preferred) or cols.match_phrase(source, phrase)
        if found is not None:
            return found
        if default is None:
            raise invalid(
                f"the {role} '{phrase}' is not a column of {source.name}",
                f"Name the {role} with {role}=COLUMN; columns: {', '.join(source.columns)}",
                error_type="unknown_column",
                role=role,
                column=phrase,
            )
        unanswered.append(
            Unanswered(
                part=f"the {role} '{phrase}'",
                reason=f"no column of {source.name} matches it; answered for {default} instead",
                suggestion=f"Name the {role} with {role}=COLUMN",
            )
        )
    if default is not None and default in source.columns:
        return default
    raise invalid(
        f"no {role} named: the question does not say which column is the {role}",
        f"Ask 'what is the effect of TREATMENT on OUTCOME?' or pass {role}=COLUMN; "
        f"columns: {', '.join(source.columns)}",
        error_type=f"missing_{role}",
    )


def _covariates(
    work: Work, treatment: str, outcome: str, built_in: bool, unanswered: list[Unanswered]
) -> tuple[list[str], str]:
    source = work.source
    skip = {treatment, outcome}
    graph = work.given("graph")
    if graph is not None:
        try:
            parents = cm.backdoor_set(graph, treatment, outcome, lambda n: cols.resolve(source, n, "graph node"))
        except GraphError as exc:
            raise invalid(
                f"the causal graph cannot be used: {exc}",
                'Give the graph as {"node": ["parent", ...]} or as edges [["cause", "effect"], ...] over the '
                "source's columns, with no cycles.",
                error_type="invalid_graph",
            ) from None
        return [p for p in parents if p not in skip], "the treatment's parents in the graph given (its backdoor set)"
    named = work.given("covariates")
    if named is not None:
        names = [n.strip() for n in named.split(",")] if isinstance(named, str) else [str(n) for n in named]
        found = [cols.resolve(source, n, "covariate") for n in names if n]
        return _checked(work, [c for c in dict.fromkeys(found) if c not in skip], strict=True), "the covariates given"
    phrases = cols.adjusted_for(work.request)
    if phrases:
        found = []
        for phrase in phrases:
            column = cols.match_phrase(source, phrase, [c for c in source.columns if c not in skip])
            if column is None:
                unanswered.append(
                    Unanswered(
                        part=f"adjusting for '{phrase}'",
                        reason=f"no column of {source.name} matches it, so the estimate is not adjusted for it",
                        suggestion="Name the covariates with covariates=[...]",
                    )
                )
            else:
                found.append(column)
        if found:
            return _checked(work, list(dict.fromkeys(found)), strict=True), "the covariates the question names"
    if built_in:
        return [c for c in CONFOUNDERS if c in source.columns], "the confounders known for the built-in data"
    return _checked(work, [c for c in source.columns if c not in skip], strict=False), (
        "every other number and category column (none were named), except ids and dates; "
        "name the confounders with covariates=[...] to choose"
    )


def _checked(work: Work, names: list[str], *, strict: bool) -> list[str]:
    """Covariates that can be adjusted for: numbers and categories of at most 50 values. A named
    id, date, text or many-valued column fails (strict) or is left out with a note."""
    source = work.source
    profile = source.semantic_profile
    numbers = set(cols.numeric_columns(source))
    kept: list[str] = []
    for name in names:
        kind = source.detected_types[name]
        reason = None
        if kind.role in ("id", "time", "text") or name in (profile.entity_key, profile.time_column):
            reason = f"it is {'an id' if kind.role == 'id' or name == profile.entity_key else 'a ' + kind.role} column"
        elif name not in numbers and kind.distinct > cm.MAX_CATEGORY_LEVELS:
            reason = f"it has {kind.distinct} values, too many to adjust for as categories"
        if reason is None:
            kept.append(name)
        elif strict:
            raise invalid(
                f"cannot adjust for '{name}': {reason}",
                "Adjust for numbers or categories with at most 50 values measured before the treatment.",
                error_type="invalid_covariate",
                column=name,
            )
    left_out = [n for n in names if n not in kept]
    if left_out and not strict:
        work.notes.append(f"left out of the covariates (ids, dates, text, many-valued): {', '.join(left_out)}")
    return kept


def _estimand(work: Work) -> str:
    given = work.given("estimand")
    if given is not None:
        value = str(given).strip().lower()
        if value not in ("ate", "att", "auto"):
            raise invalid(f"unknown estimand '{given}'", "Use ate, att or auto.", error_type="invalid_input")
        return value
    if _ATT.search(work.request):
        return "att"
    return "ate" if _ATE.search(work.request) else "auto"


def _number(work: Work, key: str, default: float, low: float, high: float) -> float:
    given = work.given(key)
    if given is None:
        return default
    try:
        value = float(given)
    except (TypeError, ValueError):
        value = math.nan
    if not low <= value < high:
        raise invalid(f"{key} = {given} is out of range", f"Use a {key} from {low} to below {high}.")
    return value


@dataclass
class Spec:
    """What to estimate: the columns, why this adjustment set, and the options."""

    treatment: str
    outcome: str
    covariates: list[str]
    adjustment_reason: str
    estimand: str = "auto"
    trim: float = cm.TRIM
    simulations: int = SIMULATIONS
    library: str = "core"
    unanswered: list[Unanswered] = field(default_factory=list)
