"""`resource_optimizer` (001): a promotion budget allocated across channels or territories
over fitted response curves with diminishing returns, at equal marginal return where the
bounds allow, never below the current allocation on those curves.

Inputs come from the payload (`by`, `budget`, `min`, `max`, `locked`, `spend`, `outcome`),
else from the question ("across channels", "a $2M budget", "increase the budget by 10%",
"at least $20k per territory", "no more than $50k on emails", "keep the speaker event budget
at current level"), else defaults: units = channels, budget = the current monthly spend.
The curves, the water-filling and the KKT check are in `response_curves.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from concerto.agents.base import AgentInfo, Unanswered
from concerto.data.context import Role
from concerto.packs.commercial import columns as cols
from concerto.packs.commercial import data, response_curves
from concerto.packs.commercial._base import Answer, CommercialAgent, Table, Work, invalid

CURRENT_MONTHS = 12  # the current allocation: mean monthly spend over the latest 12 months
MIN_ROWS = 8
BOOTSTRAP = 200  # re-optimised parameter draws behind the lift's interval
EXTRAPOLATION = 1.25  # an optimal spend above this × the most ever spent is flagged as extrapolated
_AMOUNT = r"\$?\s?\d[\d,]*(?:\.\d+)?\s*(?:k|mm|mn|m|million|thousand|bn|billion)?\b"
_WHAT = r"(?P<what>[a-z0-9_ /-]+?)(?=\s*(?:[,.;?!]|\band\b|\bbut\b|\bwhile\b|\bwith\b|$))"
_MIN = re.compile(
    rf"\b(?:at least|no less than|not less than|a minimum of|minimum of|min\.?|a floor of)\s+(?P<amt>{_AMOUNT})"
    rf"\s*(?:a month\s+|per month\s+|monthly\s+)?(?:per|for|on|to|in|of)\s+(?:each\s+|every\s+|the\s+)?{_WHAT}",
    re.I,
)
_MAX = re.compile(
    rf"\b(?:at most|no more than|not more than|a maximum of|maximum of|max\.?|up to|a cap of|capped at)\s+"
    rf"(?P<amt>{_AMOUNT})\s*(?:a month\s+|per month\s+|monthly\s+)?(?:per|for|on|to|in|of)\s+"
    rf"(?:each\s+|every\s+|the\s+)?{_WHAT}",
    re.I,
)
_LOCK = re.compile(
    r"\b(?:keep|hold|lock|freeze|fix|leave|maintain)\s+(?:the\s+|our\s+)?(?P<what>[a-z0-9_ /-]+?)\s*"
    r"(?:budget|spend(?:ing)?|allocation|investment)?\s+(?:at|to|as\s+is|unchanged|flat|constant|fixed|steady|"
    r"where\s+it\s+is|the\s+same)(?:\s+(?:its\s+|the\s+|their\s+)?(?:current|present|today'?s|existing)"
    rf"(?:\s+levels?)?|\s+(?P<amt>{_AMOUNT}))?",
    re.I,
)
_BUDGET = [
    re.compile(rf"(?P<amt>{_AMOUNT})\s+(?:(?:total|monthly|annual|yearly|quarterly|overall)\s+)?budget", re.I),
    re.compile(rf"\bbudget\s+(?:of|is|=|at|to|totall?ing|:)\s+(?P<amt>{_AMOUNT})", re.I),
]
_CHANGE = re.compile(
    r"\b(?P<verb>increas|rais|grow|boost|expand|add|cut|reduc|decreas|lower|trim|shrink|slash)\w*\s+"
    r"(?:(?:the|our|total|overall|monthly|promotion(?:al)?|marketing)\s+)*(?:budget|spend(?:ing)?)\s+by\s+"
    rf"(?P<amt>\d+(?:\.\d+)?\s*(?:%|percent)|{_AMOUNT})",
    re.I,
)
_DOWN = ("cut", "reduc", "decreas", "lower", "trim", "shrink", "slash")


def money(text: str) -> float:
    """`$2M` → 2e6, `500k` → 5e5, `$250,000` → 250000."""
    m = re.fullmatch(r"\$?\s?(\d[\d,]*(?:\.\d+)?)\s*([a-z]*)", text.strip().lower())
    if not m:
        raise ValueError(text)
    scale = {"": 1, "k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "million": 1e6}
    scale |= {"bn": 1e9, "billion": 1e9}
    return float(m.group(1).replace(",", "")) * scale[m.group(2)]


@dataclass
class Request:
    """The optimisation asked for: units, budget, bounds and locks (amounts per month)."""

    by: list[str]
    budget: float | None = None
    budget_from: str = "current monthly spend"
    minimum: dict[str, float] = field(default_factory=dict)  # unit or "*" → amount
    maximum: dict[str, float] = field(default_factory=dict)
    locked: dict[str, float | None] = field(default_factory=dict)  # None: the current level
    budget_change: tuple[str, float] | None = None  # ("percent" | "amount", signed change)
    from_payload: set[str] = field(default_factory=set)  # which of min, max, locked the payload gave
    unanswered: list[Unanswered] = field(default_factory=list)


class ResourceOptimizerAgent(CommercialAgent):
    """Budget allocation over fitted diminishing-returns curves, at equal marginal return."""

    default_source = data.SPEND
    info = AgentInfo(
        name="resource_optimizer",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Allocates a promotion budget across channels (calls, samples, emails, speaker events) or territories "
            "using fitted response curves with diminishing returns: the spend per unit that maximises expected new "
            "Rx at equal marginal return, under a total budget, per-unit minimums and maximums and locked budgets, "
            "never worse than the current allocation, with the expected lift and its interval."
        ),
        capabilities=[
            "Fit spend response curves with diminishing returns per channel or territory",
            "Reallocate a total budget to maximise expected new prescriptions",
            "Respect per-territory or per-channel minimum and maximum spend",
            "Lock a channel's budget at its current level",
            "Report marginal returns, binding constraints and the expected lift with an interval",
        ],
        inputs={
            "by": "Units to allocate across: channel (default), territory, or [territory, channel]",
            "budget": "Total monthly budget (default: the current monthly spend)",
            "min": "Minimum spend per unit: {unit: amount} or one amount for every unit",
            "max": "Maximum spend per unit: {unit: amount} or one amount for every unit",
            "locked": "Units whose spend is fixed: {unit: amount or 'current'}",
        },
        outputs={
            "allocation": "Per unit: current and optimal spend, expected outcome, marginal return",
            "expected_lift": "Expected gain in the outcome over the current allocation, with a 95% interval",
            "binding_constraints": "Which constraints bind at the optimum",
        },
        examples=[
            "How should we allocate the promotion budget across channels?",
            "Optimise the Kisqali marketing mix for maximum new Rx",
            "Where should we spend a $700k monthly budget by territory?",
            "If we increase the budget by 10%, where should the extra money go?",
            "Reallocate spend across territories with at least $15k per territory",
            "Keep the speaker event budget at current level and optimise the other channels",
            "Which channel has the highest marginal return on spend?",
            "Cut the budget by 5% while losing as few prescriptions as possible",
            "Allocate budget by territory and channel with no more than $20k on emails",
            "Are we over-investing in calls compared with samples?",
        ],
        default_timeout_ms=20000,
    )

    def analyse(self, work: Work) -> Answer:
        request = read_request(work)
        source = work.source
        spend = _measure(work, "spend", "spend", ("money",))
        outcome = _measure(work, "outcome", "new_rx", ("measure",), exclude=spend)
        grain = list(dict.fromkeys([*request.by, *(c for c in ("territory", "channel") if c in source.columns)]))
        time = source.semantic_profile.time_column
        time = time if time in source.columns and time not in grain else None
        frame = work.frame([*grain, spend, outcome, *([time] if time else [])])
        if len(frame) < MIN_ROWS:
            raise invalid(
                f"only {len(frame)} rows{_for_brand(work)}: too few to fit response curves",
                f"Use a source with at least {MIN_ROWS} rows of spend and outcome.",
                error_type="too_few_rows",
            )
        if (frame[spend] < 0).any():
            raise invalid(
                f"'{spend}' has negative values",
                "Spend must be zero or more; fix the source.",
                error_type="invalid_column",
            )
        fitted = response_curves.fit_units(frame, grain, request.by, spend, outcome, time, CURRENT_MONTHS)
        if not any(c is not None for c in fitted.curves):
            varies = frame.groupby(grain)[spend].nunique().max() > 1
            raise invalid(
                f"no response curve could be fitted: {spend} "
                + (
                    "does not vary within any unit"
                    if not varies
                    else f"does not explain {outcome} with diminishing returns"
                ),
                "Use data where each unit's spend varies over time (at least 4 observations per unit).",
                error_type="no_variation" if not varies else "fit_failed",
            )
        answer = _answer(work, request, fitted, spend, outcome)
        if work.brand and "brand" not in source.columns:
            answer.unanswered.append(
                Unanswered(
                    part=f"brand {work.brand}",
                    reason=f"{source.name} is not split by brand, so the plan covers the whole promotion budget",
                    error_type="not_by_brand",
                    suggestion="Load spend data with a brand column and choose it with --source.",
                )
            )
        return answer


def read_request(work: Work) -> Request:
    """The units, budget, bounds and locks of the payload, else of the question."""
    source, text = work.source, work.request
    by = _by(work)
    request = Request(by=by)
    lowered = text.lower()
    budget = work.given("budget")
    if budget is not None:
        request.budget = _number(budget, "budget")
        request.budget_from = "the request's budget"
    else:
        for pattern in _BUDGET:
            m = pattern.search(text)
            if m:
                amount = money(m.group("amt"))
                per = 12 if re.search(r"\b(annual|yearly|a year|per year|per annum)\b", lowered) else 1
                per = 3 if per == 1 and re.search(r"\bquarter", lowered) else per
                request.budget = amount / per
                request.budget_from = f"the question: {m.group('amt').strip()}" + (
                    f" a {'year' if per == 12 else 'quarter'}, {amount / per:,.0f} a month" if per > 1 else " a month"
                )
                break
        m = _CHANGE.search(text)
        if m and request.budget is None:
            said = m.group("amt").strip()
            sign = -1.0 if m.group("verb").lower().startswith(_DOWN) else 1.0
            percent = said.endswith(("%", "percent"))
            size = float(re.sub(r"[^\d.]", "", said)) if percent else money(said)
            request.budget_change = ("percent" if percent else "amount", sign * size)
            request.budget_from = f"the question: {m.group(0).strip()}"
    for key, target in (("min", request.minimum), ("max", request.maximum)):
        given = work.given(key) if work.given(key) is not None else work.given(f"{key}imum")
        if given is not None:
            target.update(_amounts(given, key))
            request.from_payload.add(key)
    locked = work.given("locked")
    if locked is not None:
        request.from_payload.add("locked")
        items = locked.items() if isinstance(locked, dict) else [(u, None) for u in _listed(locked)]
        for unit, fixed in items:
            current = fixed is None or str(fixed).lower() in ("current", "keep", "same")
            request.locked[str(unit)] = None if current else _number(fixed, f"locked amount of {unit}")
    if work.given("min") is None and work.given("max") is None:
        for pattern, target in ((_MIN, request.minimum), (_MAX, request.maximum)):
            for m in pattern.finditer(text):
                target[_target(m.group("what"), by, source.columns)] = money(m.group("amt"))
    if locked is None:
        for m in _LOCK.finditer(text):
            what = m.group("what").strip()
            if set(cols.words_of(what)) <= {"total", "overall", "budget", "marketing", "promotion", "promotional"}:
                if m.group("amt") and request.budget is None and request.budget_change is None:
                    request.budget = money(m.group("amt"))  # "keep total spend at $500k": the budget
                    request.budget_from = f"the question: {m.group(0).strip()}"
                continue
            request.locked[what] = money(m.group("amt")) if m.group("amt") else None
    return request


def _by(work: Work) -> list[str]:
    source = work.source
    given = work.given("by")
    if given is not None:
        names = _listed(given)
        if len(names) == 1 and names[0].lower() in ("territory_channel", "territory×channel", "territory x channel"):
            names = ["territory", "channel"]
        return [cols.resolve(source, n, "unit") for n in names]
    text = work.request.lower()
    channel = bool(re.search(r"\bchannels?\b|marketing mix|promotion mix|\bmix\b", text))
    territory = bool(re.search(r"\bterritor(?:y|ies)\b", text))
    if channel and territory and all(c in source.columns for c in ("territory", "channel")):
        return ["territory", "channel"]
    if territory and "territory" in source.columns:
        return ["territory"]
    phrase = cols.segment_phrase(work.request)
    if phrase and not channel:
        found = cols.match_phrase(source, phrase, cols.category_columns(source))
        if found is not None:
            return [found]
    if "channel" in source.columns:
        return ["channel"]
    first = next(iter(cols.category_columns(source)), None)
    if first is None:
        raise invalid(
            f"{source.name} has no category column to allocate across",
            "Name the units with the payload's `by` (e.g. channel or territory).",
            error_type="unknown_column",
        )
    return [first]


def _listed(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,×]|\band\b", value) if v.strip()]
    return [str(v) for v in value]


def _number(value: Any, what: str) -> float:
    try:
        return money(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise invalid(
            f"the {what} '{value}' is not an amount", f"Give the {what} as a number of dollars per month."
        ) from None


def _amounts(given: Any, key: str) -> dict[str, float]:
    if isinstance(given, dict):
        return {str(u): _number(v, f"{key} of {u}") for u, v in given.items()}
    return {"*": _number(given, key)}


def _target(what: str, by: list[str], columns: list[str]) -> str:
    """ "territory" / "each channel" → "*" (every unit) when it names the units' dimension;
    another dimension → "@<column>" (a group constraint); else the unit's name as said."""
    words = cols.words_of(what)
    for column in columns:
        root = column[:-1] if column.endswith("y") else column.rstrip("s")
        if any(w.startswith(root) for w in words):
            return "*" if by == [column] else f"@{column}"
    return what.strip()


def _some(names: list[str], k: int = 12) -> str:
    return ", ".join(names[:k]) + (f" … ({len(names)} in all)" if len(names) > k else "")


def _plural(noun: str) -> str:
    return noun if noun.endswith("s") else f"{noun[:-1]}ies" if noun.endswith("y") else f"{noun}s"


def _for_brand(work: Work) -> str:
    return f" for {work.brand}" if work.brand and "brand" in work.source.columns else ""


def _measure(work: Work, role: str, default: str, roles: tuple[Role, ...], exclude: str | None = None) -> str:
    """The payload's `role` column (checked numeric), else `default`, else the only column of `roles`."""
    source = work.source
    named = work.given(role)
    if named is not None:
        return cols.numeric(source, cols.resolve(source, str(named), role), role)
    if default in source.columns:
        return cols.numeric(source, default, role)
    options = [c for c in source.columns_with(*roles) if c != exclude]
    if len(options) == 1:
        return options[0]
    raise invalid(
        f"{source.name} has no '{default}' column",
        f"Name the {role} column with the payload's `{role}`: one of {', '.join(cols.numeric_columns(source))}.",
        error_type="missing_column",
    )


def _unit_index(name: str, units: list[str]) -> int | None:
    lowered = [u.lower() for u in units]
    if name.lower() in lowered:
        return lowered.index(name.lower())
    said = set(cols.words_of(name)) - {"budget", "spend", "spending", "channel", "territory"}
    matches = [i for i, u in enumerate(units) if said and set(cols.words_of(u)) == said]
    return matches[0] if len(matches) == 1 else None


@dataclass
class Bounds:
    lower: np.ndarray
    upper: np.ndarray
    locked: np.ndarray
    user_min: np.ndarray
    user_max: np.ndarray


def _bounds(request: Request, fitted: response_curves.Fitted, budget: float) -> Bounds:
    """Per unit bounds and locks from the request, checked for feasibility (which constraint fails)."""
    names = fitted.units.names
    n = len(names)
    lower, upper = np.zeros(n), np.full(n, np.inf)
    locked = np.zeros(n, dtype=bool)
    lock_amount = np.zeros(n)
    user_min, user_max = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    dimension = "/".join(request.by)

    def index(key: str, what: str) -> list[int]:
        if key == "*":
            return list(range(n))
        if key.startswith("@"):
            request.unanswered.append(
                Unanswered(
                    part=f"{what} per {key[1:]}",
                    reason=f"the budget is allocated by {dimension}, so a {what} per {key[1:]} is not a bound "
                    f"on one unit; it was not applied",
                    error_type="unsupported_constraint",
                    suggestion=f"Allocate by {key[1:]} (payload `by`) to bound each {key[1:]}.",
                )
            )
            return []
        i = _unit_index(key, names)
        parts = sorted({part for name in names for part in name.split("/")}) if len(request.by) > 1 else []
        group = _unit_index(key, parts) if i is None and parts else None
        if group is not None:
            request.unanswered.append(
                Unanswered(
                    part=f"{what} for all of {parts[group]}",
                    reason=f"the budget is allocated by {dimension}, so a {what} for the sum of {parts[group]}'s "
                    f"units is not a bound on one unit; it was not applied",
                    error_type="unsupported_constraint",
                    suggestion=f"Allocate by one dimension (payload `by`) to bound {parts[group]} as a whole.",
                )
            )
            return []
        if i is None:
            if what.split()[0] in request.from_payload:
                raise invalid(
                    f"'{key}' is not a {dimension} of the data",
                    f"Choose among: {_some(names)}",
                    error_type="unknown_unit",
                    unit=key,
                )
            request.unanswered.append(
                Unanswered(
                    part=f"{what} for '{key}'",
                    reason=f"no {dimension} is called '{key}'",
                    error_type="unknown_unit",
                    suggestion=f"Choose among: {_some(names)}",
                )
            )
            return []
        return [i]

    for key, low in request.minimum.items():
        for i in index(key, "min"):
            lower[i], user_min[i] = low, True
    for key, high in request.maximum.items():
        for i in index(key, "max"):
            upper[i], user_max[i] = high, True
    for key, fixed in request.locked.items():
        for i in index(key, "locked amount"):
            locked[i] = True
            lock_amount[i] = fitted.unit_current[i] if fixed is None else fixed
    for j in np.flatnonzero(~fitted.units.fitted & ~locked):  # no curve: held at its current spend
        locked[j], lock_amount[j] = True, fitted.unit_current[j]

    try:
        lower, upper = response_curves.check_constraints(
            names, lower, upper, locked, lock_amount, fitted.units.held, budget, dimension
        )
    except response_curves.Infeasible as exc:
        details = {"constraint": exc.constraint, **({"unit": exc.unit} if exc.unit else {})}
        raise invalid(str(exc), exc.suggestion, error_type="infeasible_constraints", **details) from None
    return Bounds(lower, upper, locked, user_min, user_max)


def _answer(work: Work, request: Request, fitted: response_curves.Fitted, spend: str, outcome: str) -> Answer:
    units = fitted.units
    names = units.names
    current = fitted.unit_current
    current_total = float(current.sum())
    budget = current_total if request.budget is None else request.budget
    if request.budget_change is not None:
        how, change = request.budget_change
        budget = current_total * (1 + change / 100) if how == "percent" else current_total + change
    bounds = _bounds(request, fitted, budget)

    # The comparison plan: today's allocation, scaled to the budget when it differs (locks kept).
    free = ~bounds.locked
    base = np.where(bounds.locked, bounds.lower, current)
    rest = budget - base[bounds.locked].sum()
    if free.any() and base[free].sum() > 0:
        base[free] = base[free] * rest / base[free].sum()
    elif free.any():
        base[free] = rest / free.sum()
    same_budget = abs(budget - current_total) <= 1e-9 * max(current_total, 1) and np.allclose(base, current)
    base_feasible = bool(np.all(base >= bounds.lower - 1e-6) and np.all(base <= bounds.upper + 1e-6))

    plan = response_curves.allocate(units, budget, bounds.lower, bounds.upper, bounds.locked)
    r_current, r_base, r_opt = (units.value(x) for x in (current, base, plan.spend))
    fallback = False
    if base_feasible and r_opt.sum() < r_base.sum() - 1e-9 * max(abs(r_base.sum()), 1):
        fallback = True
        work.notes.append(
            "the optimiser's plan was below the current allocation on the fitted curves; kept the current"
        )
        plan = response_curves.Plan(base, plan.marginal_return, plan.status, False, plan.kkt_deviation)
        r_opt = r_base
    m_current, m_opt = units.marginal(current), units.marginal(plan.spend)

    chosen = plan.spend

    def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if fallback:  # the plan kept does not depend on the curves
            return np.tile(chosen, (len(a), 1))
        return response_curves.allocate_draws(units, a, b, budget, bounds.lower, bounds.upper, bounds.locked)

    errors = response_curves.plan_errors(units, fitted.covs, solve, chosen, [current, base], n=BOOTSTRAP)
    optimism = errors.mean(axis=0)

    def basic(estimate: float, column: int) -> tuple[float, float]:
        """The basic bootstrap interval: the estimate minus the error's 97.5 and 2.5 % quantiles."""
        q_lo, q_hi = np.percentile(errors[:, column], [2.5, 97.5])
        return estimate - float(q_hi), estimate - float(q_lo)

    lift_fitted = float(r_opt.sum() - r_current.sum())
    lift = lift_fitted - float(optimism[1])
    lift_lo, lift_hi = basic(lift_fitted, 1)
    opt_lo, opt_hi = basic(float(r_opt.sum()), 0)
    dimension = " × ".join(request.by)
    plural = _plural(request.by[-1]) if len(request.by) == 1 else f"{dimension} cells"
    extrapolated = plan.spend > EXTRAPOLATION * fitted.unit_max_observed

    rows: list[dict[str, Any]] = []
    for i, name in enumerate(names):
        status = plan.status[i]
        rows.append(
            {
                "unit": name,
                "current_spend": round(float(current[i]), 2),
                "optimal_spend": round(float(plan.spend[i]), 2),
                "change": round(float(plan.spend[i] - current[i]), 2),
                "change_pct": round(float((plan.spend[i] / current[i] - 1) * 100), 1) if current[i] > 0 else None,
                "expected_outcome_current": round(float(r_current[i]), 3),
                "expected_outcome_optimal": round(float(r_opt[i]), 3),
                "marginal_return_current_per_1k": round(float(m_current[i] * 1000), 4),
                "marginal_return_optimal_per_1k": round(float(m_opt[i] * 1000), 4),
                "status": status,
                "extrapolated": bool(extrapolated[i]),
            }
        )
    binding: list[dict[str, Any]] = [
        {
            "constraint": "budget",
            "amount": round(budget, 2),
            "shadow_price_per_1k": round(plan.marginal_return * 1000, 4) if np.isfinite(plan.marginal_return) else None,
        }
    ]
    for i, status in enumerate(plan.status):
        if status == "at_minimum":
            kind = "minimum" if bounds.user_min[i] else "zero_spend"
            binding.append({"unit": names[i], "constraint": kind, "amount": round(float(bounds.lower[i]), 2)})
        elif status == "at_maximum" and bounds.user_max[i]:
            binding.append({"unit": names[i], "constraint": "maximum", "amount": round(float(bounds.upper[i]), 2)})
        elif status in ("locked", "held"):
            binding.append({"unit": names[i], "constraint": status, "amount": round(float(bounds.lower[i]), 2)})
    curves: list[dict[str, Any]] = [
        {
            "cell": cell,
            "curve": c.kind if c else "none (spend held)",
            "a": round(c.a, 4) if c else None,
            "b": round(c.b, 2) if c else None,
            "a_se": round(c.se[0], 4) if c else None,
            "b_se": round(c.se[1], 2) if c else None,
            "rmse": round(c.rmse, 4) if c else None,
            "n": c.n if c else 0,
            "current_spend": round(float(cur), 2),
            "note": c.note if c else "no curve fitted",
        }
        for cell, c, cur in zip(fitted.cells, fitted.curves, fitted.cell_current, strict=True)
    ]
    log_cells = [r["cell"] for r in curves if r["curve"] == response_curves.LOG]
    held_cells = [r["cell"] for r in curves if r["a"] is None]
    payload: dict[str, Any] = {
        "by": request.by,
        "spend_column": spend,
        "outcome_column": outcome,
        "budget": round(budget, 2),
        "budget_from": request.budget_from,
        "current_total_spend": round(current_total, 2),
        "current_window_months": fitted.months,
        "allocation": rows,
        "expected_outcome_current": round(float(r_current.sum()), 3),
        "expected_outcome_optimal": round(float(r_opt.sum()), 3),
        "expected_outcome_optimal_interval": [round(opt_lo, 3), round(opt_hi, 3)],
        "expected_lift": round(lift, 3),
        "expected_lift_interval": [round(lift_lo, 3), round(lift_hi, 3)],
        "expected_lift_pct": round(100 * lift / r_current.sum(), 2) if r_current.sum() > 0 else None,
        "expected_lift_on_fitted_curves": round(lift_fitted, 3),
        "optimism_correction": round(float(optimism[1]), 3),
        "marginal_return_per_1k": round(plan.marginal_return * 1000, 4) if np.isfinite(plan.marginal_return) else None,
        "kkt": {"satisfied": plan.kkt_satisfied, "max_relative_deviation": plan.kkt_deviation},
        "binding_constraints": binding,
        "fallback_to_current": fallback,
        "method": "water-filling at equal marginal return over fitted curves (scipy.optimize.brentq on the "
        "marginal return), exact for concave curves; curves by scipy.optimize.curve_fit",
        "uncertainty": f"95% basic parametric-bootstrap interval over {BOOTSTRAP} re-optimised draws of the curves' "
        "parameters (curve_fit covariance); the expected lift is corrected for the optimism of choosing the plan "
        "on estimated curves",
        "curves": curves,
        "log_curve_fallbacks": log_cells,
        "held_without_curve": held_cells,
    }
    if not same_budget:
        payload["expected_outcome_same_mix"] = round(float(r_base.sum()), 3)
        same = float(r_opt.sum() - r_base.sum())
        lo, hi = basic(same, 2)
        payload["expected_lift_vs_same_mix"] = round(same - float(optimism[2]), 3)
        payload["expected_lift_vs_same_mix_interval"] = [round(lo, 3), round(hi, 3)]

    answer = Answer(payload=payload, summary="", unanswered=request.unanswered)
    movers = sorted(rows, key=lambda r: -abs(r["change"]))
    ups = [r for r in movers if r["change"] > 0.5][:2]
    downs = [r for r in movers if r["change"] < -0.5][:2]
    moves = "; ".join(
        [*(f"{r['unit']} +{r['change']:,.0f}" for r in ups), *(f"{r['unit']} {r['change']:,.0f}" for r in downs)]
    )
    if fallback:
        headline = (
            f"Keeping the current allocation of {budget:,.0f} a month across {plural}: the optimiser found no "
            f"plan above it on the fitted curves ({r_current.sum():,.1f} {outcome} a month)"
        )
    else:
        headline = (
            f"Reallocating {budget:,.0f} a month across {plural} ({moves or 'no change'}) is expected to bring "
            f"{lift:+,.1f} {outcome} a month ({payload['expected_lift_pct']:+.1f}%, 95% interval "
            f"{lift_lo:+,.1f} to {lift_hi:+,.1f}) over the current allocation"
        )
    if not same_budget and not fallback:
        same = payload["expected_lift_vs_same_mix"]
        lo, hi = payload["expected_lift_vs_same_mix_interval"]
        headline += f"; {same:+,.1f} (95% interval {lo:+,.1f} to {hi:+,.1f}) against today's mix scaled to the budget"
    if not base_feasible:
        i = int(np.argmax((base < bounds.lower - 1e-6) | (base > bounds.upper + 1e-6)))
        side = "below its minimum" if base[i] < bounds.lower[i] - 1e-6 else "above its maximum"
        headline += f" (today's mix breaks the constraints: {names[i]} is {side})"
    answer.summary = headline + _for_brand(work) + "."
    payload["interpretation"] = answer.summary
    answer.key_findings.append(headline)
    if np.isfinite(plan.marginal_return):
        answer.key_findings.append(
            f"At the optimum every unconstrained {dimension} returns {plan.marginal_return * 1000:.3f} {outcome} per "
            f"extra $1,000 (KKT {'satisfied' if plan.kkt_satisfied else 'not satisfied'})"
        )
    best = max(rows, key=lambda r: r["marginal_return_current_per_1k"])
    worst = min(rows, key=lambda r: r["marginal_return_current_per_1k"])
    answer.key_findings.append(
        f"Today {best['unit']} returns the most per extra $1,000 ({best['marginal_return_current_per_1k']:.3f}) "
        f"and {worst['unit']} the least ({worst['marginal_return_current_per_1k']:.3f})"
    )
    bound = [b for b in binding if b["constraint"] not in ("budget",)]
    if bound:
        answer.key_findings.append(
            "Binding: " + "; ".join(f"{b['unit']} at its {b['constraint'].replace('_', ' ')}" for b in bound[:6])
        )
    if extrapolated.any():
        names_x = ", ".join(np.array(names)[extrapolated])
        work.notes.append(f"optimal spend of {names_x} is beyond {EXTRAPOLATION}× the most ever spent: extrapolated")
        answer.requires_further_analysis = True
    if log_cells:
        work.notes.append(f"{len(log_cells)} cell(s) fell back to a log curve: {', '.join(log_cells[:5])}")
    if held_cells:
        work.notes.append(f"{len(held_cells)} cell(s) had no curve and keep their spend: {', '.join(held_cells[:5])}")
    if not base_feasible:
        work.notes.append(
            "the current mix breaks the constraints given, so the plan is compared with it only as a guide"
        )
    if ups and not fallback:
        answer.recommendations.append(
            f"Shift budget toward {', '.join(r['unit'] for r in ups)}"
            + (f" and away from {', '.join(r['unit'] for r in downs)}" if downs else "")
            + "; test the move on a few territories first (see experiment_designer)."
        )
    answer.follow_ups += [
        "What if the budget rises by 10%?",
        "How should the budget be split by territory?"
        if request.by != ["territory"]
        else "How should the budget be split across channels?",
    ]
    chart_rows = [{k: r[k] for k in ("unit", "current_spend", "optimal_spend", "change")} for r in rows]
    answer.tables.append(
        Table(
            f"Current vs optimal spend by {dimension}",
            chart_rows,
            chart="bar",
            x="unit",
            y=["current_spend", "optimal_spend"],
        )
    )
    answer.tables.append(Table("Allocation with expected outcome and marginal return", rows))
    answer.tables.append(Table("Fitted response curves", curves))
    answer.entities.update({"by": request.by, "budget": round(budget, 2)})
    return answer
