"""The optimisation step of `resource_optimizer`: the request's bounds and locks put on the
fitted units (`Bounds`, which constraint is infeasible), the budget, the plan at equal marginal
return over the fitted curves (`methods.response_curves`), never below today's allocation
scaled to the budget, and the parametric bootstrap of the whole procedure behind the lift's
interval (`Optimised`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from concerto.agents.base import Unanswered
from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.agent import Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.methods import response_curves
from concerto.packs.commercial.resource_optimizer.reading import Request

BOOTSTRAP = 200  # re-optimised parameter draws behind the lift's interval


def _some(names: list[str], k: int = 12) -> str:
    return ", ".join(names[:k]) + (f" … ({len(names)} in all)" if len(names) > k else "")


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

    # An `Infeasible` constraint reaches the user as `infeasible_constraints`, naming which.
    lower, upper = response_curves.check_constraints(
        names, lower, upper, locked, lock_amount, fitted.units.held, budget, dimension
    )
    return Bounds(lower, upper, locked, user_min, user_max)


@dataclass
class Optimised:
    """The plan against today's allocation (`current`) and today's mix scaled to the budget
    (`base`), each one's outcome on the fitted curves, and the bootstrap's errors (one row per
    draw: the plan's outcome, its lift over `current`, its lift over `base`)."""

    budget: float
    bounds: Bounds
    current: np.ndarray
    base: np.ndarray
    base_feasible: bool
    same_budget: bool
    plan: response_curves.Plan
    fallback: bool  # the optimiser's plan was below `base` on the fitted curves: `base` is kept
    r_current: np.ndarray
    r_base: np.ndarray
    r_opt: np.ndarray
    errors: np.ndarray

    @property
    def optimism(self) -> np.ndarray:
        """The mean error of each quantity: what choosing the plan on noisy curves adds."""
        return np.asarray(self.errors.mean(axis=0))

    @property
    def lift_on_curves(self) -> float:
        """The plan's outcome over today's allocation's, both on the fitted curves."""
        return float(self.r_opt.sum() - self.r_current.sum())

    @property
    def lift(self) -> float:
        """The expected lift: on the fitted curves, less the optimism of choosing the plan on them."""
        return self.lift_on_curves - float(self.optimism[1])

    def basic(self, estimate: float, column: int) -> tuple[float, float]:
        """The basic bootstrap interval: the estimate minus the error's 97.5 and 2.5 % quantiles."""
        q_lo, q_hi = np.percentile(self.errors[:, column], [2.5, 97.5])
        return estimate - float(q_hi), estimate - float(q_lo)


def optimise(work: Work, request: Request, fitted: response_curves.Fitted) -> Optimised:
    """The budget (given, changed by a percentage or an amount, or today's), the bounds, and the
    plan at equal marginal return, kept at today's mix when that does better on the curves."""
    units = fitted.units
    current = fitted.unit_current
    current_total = float(current.sum())
    budget = current_total if request.budget is None else request.budget
    if request.budget_change is not None:
        how, change = request.budget_change
        budget = current_total * (1 + change / 100) if how == "percent" else current_total + change
    bounds = _bounds(request, fitted, budget)
    base = _same_mix(current, bounds, budget)
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
    chosen = plan.spend

    def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if fallback:  # the plan kept does not depend on the curves
            return np.tile(chosen, (len(a), 1))
        return response_curves.allocate_draws(units, a, b, budget, bounds.lower, bounds.upper, bounds.locked)

    errors = response_curves.plan_errors(units, fitted.covs, solve, chosen, [current, base], n=BOOTSTRAP)
    return Optimised(
        budget=budget,
        bounds=bounds,
        current=current,
        base=base,
        base_feasible=base_feasible,
        same_budget=bool(same_budget),
        plan=plan,
        fallback=fallback,
        r_current=r_current,
        r_base=r_base,
        r_opt=r_opt,
        errors=errors,
    )


def _same_mix(current: np.ndarray, bounds: Bounds, budget: float) -> np.ndarray:
    """The comparison plan: today's allocation, scaled to the budget when it differs (locks kept)."""
    free = ~bounds.locked
    base = np.where(bounds.locked, bounds.lower, current)
    rest = budget - base[bounds.locked].sum()
    if free.any() and base[free].sum() > 0:
        base[free] = base[free] * rest / base[free].sum()
    elif free.any():
        base[free] = rest / free.sum()
    return base
