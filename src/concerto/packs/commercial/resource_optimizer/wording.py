"""How `resource_optimizer` words its answer: the allocation per unit (current and optimal
spend, expected outcome, marginal return), the binding constraints, the fitted curves, the
expected lift with its interval (against today's allocation, and against today's mix scaled
to a new budget), the findings, the notes, and the tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from concerto.packs.commercial.base.agent import Answer, Table, Work
from concerto.packs.commercial.methods import response_curves
from concerto.packs.commercial.resource_optimizer.plan import BOOTSTRAP

if TYPE_CHECKING:
    from concerto.packs.commercial.resource_optimizer.plan import Optimised
    from concerto.packs.commercial.resource_optimizer.reading import Request

EXTRAPOLATION = 1.25  # an optimal spend above this × the most ever spent is flagged as extrapolated


def plural(noun: str) -> str:
    return noun if noun.endswith("s") else f"{noun[:-1]}ies" if noun.endswith("y") else f"{noun}s"


def for_brand(work: Work) -> str:
    return f" for {work.brand}" if work.brand and "brand" in work.source.columns else ""


def answer(
    work: Work, request: Request, fitted: response_curves.Fitted, opt: Optimised, columns: tuple[str, str]
) -> Answer:
    """The answer for the plan `opt` over the `fitted` curves of outcome on spend (`columns`)."""
    outcome = columns[1]
    extrapolated = opt.plan.spend > EXTRAPOLATION * fitted.unit_max_observed
    rows = _allocation(fitted, opt, extrapolated)
    curves = _curves(fitted)
    payload = _payload(request, fitted, opt, rows, curves, columns)
    answer = Answer(payload=payload, summary="", unanswered=request.unanswered)
    headline = _headline(request, fitted.units.names, opt, payload, rows, outcome)
    answer.summary = headline + for_brand(work) + "."
    payload["interpretation"] = answer.summary
    answer.key_findings += _findings(request, opt, rows, payload["binding_constraints"], headline, outcome)
    _notes(work, answer, fitted.units.names, curves, opt, extrapolated)
    ups, downs = _movers(rows)
    if ups and not opt.fallback:
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
    answer.tables += _tables(request, rows, curves)
    answer.entities.update({"by": request.by, "budget": round(opt.budget, 2)})
    return answer


def _allocation(fitted: response_curves.Fitted, opt: Optimised, extrapolated: np.ndarray) -> list[dict[str, Any]]:
    """Per unit: current and optimal spend, the change, the expected outcome and marginal return of each."""
    units, plan, current = fitted.units, opt.plan, opt.current
    m_current, m_opt = units.marginal(current), units.marginal(plan.spend)
    return [
        {
            "unit": name,
            "current_spend": round(float(current[i]), 2),
            "optimal_spend": round(float(plan.spend[i]), 2),
            "change": round(float(plan.spend[i] - current[i]), 2),
            "change_pct": round(float((plan.spend[i] / current[i] - 1) * 100), 1) if current[i] > 0 else None,
            "expected_outcome_current": round(float(opt.r_current[i]), 3),
            "expected_outcome_optimal": round(float(opt.r_opt[i]), 3),
            "marginal_return_current_per_1k": round(float(m_current[i] * 1000), 4),
            "marginal_return_optimal_per_1k": round(float(m_opt[i] * 1000), 4),
            "status": plan.status[i],
            "extrapolated": bool(extrapolated[i]),
        }
        for i, name in enumerate(units.names)
    ]


def _binding(names: list[str], opt: Optimised) -> list[dict[str, Any]]:
    """The budget with its shadow price, then each unit at a bound the user set, at zero, locked or held."""
    plan, bounds = opt.plan, opt.bounds
    binding: list[dict[str, Any]] = [
        {
            "constraint": "budget",
            "amount": round(opt.budget, 2),
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
    return binding


def _curves(fitted: response_curves.Fitted) -> list[dict[str, Any]]:
    """Each cell's fitted curve (or none: its spend is held), with its parameters' errors."""
    return [
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


def _payload(
    request: Request,
    fitted: response_curves.Fitted,
    opt: Optimised,
    rows: list[dict[str, Any]],
    curves: list[dict[str, Any]],
    columns: tuple[str, str],
) -> dict[str, Any]:
    """The payload's numbers: the allocation, the expected outcomes and lift with their intervals."""
    plan, optimism = opt.plan, opt.optimism
    lift_fitted, lift = opt.lift_on_curves, opt.lift
    lift_lo, lift_hi = opt.basic(lift_fitted, 1)
    opt_lo, opt_hi = opt.basic(float(opt.r_opt.sum()), 0)
    payload: dict[str, Any] = {
        "by": request.by,
        "spend_column": columns[0],
        "outcome_column": columns[1],
        "budget": round(opt.budget, 2),
        "budget_from": request.budget_from,
        "current_total_spend": round(float(opt.current.sum()), 2),
        "current_window_months": fitted.months,
        "allocation": rows,
        "expected_outcome_current": round(float(opt.r_current.sum()), 3),
        "expected_outcome_optimal": round(float(opt.r_opt.sum()), 3),
        "expected_outcome_optimal_interval": [round(opt_lo, 3), round(opt_hi, 3)],
        "expected_lift": round(lift, 3),
        "expected_lift_interval": [round(lift_lo, 3), round(lift_hi, 3)],
        "expected_lift_pct": round(100 * lift / opt.r_current.sum(), 2) if opt.r_current.sum() > 0 else None,
        "expected_lift_on_fitted_curves": round(lift_fitted, 3),
        "optimism_correction": round(float(optimism[1]), 3),
        "marginal_return_per_1k": round(plan.marginal_return * 1000, 4) if np.isfinite(plan.marginal_return) else None,
        "kkt": {"satisfied": plan.kkt_satisfied, "max_relative_deviation": plan.kkt_deviation},
        "binding_constraints": _binding(fitted.units.names, opt),
        "fallback_to_current": opt.fallback,
        "method": "water-filling at equal marginal return over fitted curves (scipy.optimize.brentq on the "
        "marginal return), exact for concave curves; curves by scipy.optimize.curve_fit",
        "uncertainty": f"95% basic parametric-bootstrap interval over {BOOTSTRAP} re-optimised draws of the curves' "
        "parameters (curve_fit covariance); the expected lift is corrected for the optimism of choosing the plan "
        "on estimated curves",
        "curves": curves,
        "log_curve_fallbacks": [r["cell"] for r in curves if r["curve"] == response_curves.LOG],
        "held_without_curve": [r["cell"] for r in curves if r["a"] is None],
    }
    if not opt.same_budget:
        payload["expected_outcome_same_mix"] = round(float(opt.r_base.sum()), 3)
        same = float(opt.r_opt.sum() - opt.r_base.sum())
        lo, hi = opt.basic(same, 2)
        payload["expected_lift_vs_same_mix"] = round(same - float(optimism[2]), 3)
        payload["expected_lift_vs_same_mix_interval"] = [round(lo, 3), round(hi, 3)]
    return payload


def _movers(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The two units gaining the most and the two losing the most."""
    movers = sorted(rows, key=lambda r: -abs(r["change"]))
    return [r for r in movers if r["change"] > 0.5][:2], [r for r in movers if r["change"] < -0.5][:2]


def _headline(
    request: Request,
    names: list[str],
    opt: Optimised,
    payload: dict[str, Any],
    rows: list[dict[str, Any]],
    outcome: str,
) -> str:
    """The plan in one sentence: the moves and the expected lift with its interval (or why today's is kept)."""
    dimension = " × ".join(request.by)
    units = plural(request.by[-1]) if len(request.by) == 1 else f"{dimension} cells"
    ups, downs = _movers(rows)
    moves = "; ".join(
        [*(f"{r['unit']} +{r['change']:,.0f}" for r in ups), *(f"{r['unit']} {r['change']:,.0f}" for r in downs)]
    )
    if opt.fallback:
        headline = (
            f"Keeping the current allocation of {opt.budget:,.0f} a month across {units}: the optimiser found no "
            f"plan above it on the fitted curves ({opt.r_current.sum():,.1f} {outcome} a month)"
        )
    else:
        lift_lo, lift_hi = opt.basic(opt.lift_on_curves, 1)
        headline = (
            f"Reallocating {opt.budget:,.0f} a month across {units} ({moves or 'no change'}) is expected to bring "
            f"{opt.lift:+,.1f} {outcome} a month ({payload['expected_lift_pct']:+.1f}%, 95% interval "
            f"{lift_lo:+,.1f} to {lift_hi:+,.1f}) over the current allocation"
        )
    if not opt.same_budget and not opt.fallback:
        same = payload["expected_lift_vs_same_mix"]
        lo, hi = payload["expected_lift_vs_same_mix_interval"]
        headline += f"; {same:+,.1f} (95% interval {lo:+,.1f} to {hi:+,.1f}) against today's mix scaled to the budget"
    if not opt.base_feasible:
        base, bounds = opt.base, opt.bounds
        i = int(np.argmax((base < bounds.lower - 1e-6) | (base > bounds.upper + 1e-6)))
        side = "below its minimum" if base[i] < bounds.lower[i] - 1e-6 else "above its maximum"
        headline += f" (today's mix breaks the constraints: {names[i]} is {side})"
    return headline


def _findings(
    request: Request,
    opt: Optimised,
    rows: list[dict[str, Any]],
    binding: list[dict[str, Any]],
    headline: str,
    outcome: str,
) -> list[str]:
    """The headline, the common marginal return at the optimum, today's best and worst unit, what binds."""
    plan = opt.plan
    findings = [headline]
    if np.isfinite(plan.marginal_return):
        findings.append(
            f"At the optimum every unconstrained {' × '.join(request.by)} returns {plan.marginal_return * 1000:.3f} "
            f"{outcome} per extra $1,000 (KKT {'satisfied' if plan.kkt_satisfied else 'not satisfied'})"
        )
    best = max(rows, key=lambda r: r["marginal_return_current_per_1k"])
    worst = min(rows, key=lambda r: r["marginal_return_current_per_1k"])
    findings.append(
        f"Today {best['unit']} returns the most per extra $1,000 ({best['marginal_return_current_per_1k']:.3f}) "
        f"and {worst['unit']} the least ({worst['marginal_return_current_per_1k']:.3f})"
    )
    bound = [b for b in binding if b["constraint"] not in ("budget",)]
    if bound:
        findings.append(
            "Binding: " + "; ".join(f"{b['unit']} at its {b['constraint'].replace('_', ' ')}" for b in bound[:6])
        )
    return findings


def _notes(
    work: Work,
    answer: Answer,
    names: list[str],
    curves: list[dict[str, Any]],
    opt: Optimised,
    extrapolated: np.ndarray,
) -> None:
    """What the numbers rest on, in the notes: extrapolated spends, log-curve and held cells, a
    current mix that breaks the constraints."""
    if extrapolated.any():
        names_x = ", ".join(np.array(names)[extrapolated])
        work.notes.append(f"optimal spend of {names_x} is beyond {EXTRAPOLATION}× the most ever spent: extrapolated")
        answer.requires_further_analysis = True
    log_cells = [r["cell"] for r in curves if r["curve"] == response_curves.LOG]
    held_cells = [r["cell"] for r in curves if r["a"] is None]
    if log_cells:
        work.notes.append(f"{len(log_cells)} cell(s) fell back to a log curve: {', '.join(log_cells[:5])}")
    if held_cells:
        work.notes.append(f"{len(held_cells)} cell(s) had no curve and keep their spend: {', '.join(held_cells[:5])}")
    if not opt.base_feasible:
        work.notes.append(
            "the current mix breaks the constraints given, so the plan is compared with it only as a guide"
        )


def _tables(request: Request, rows: list[dict[str, Any]], curves: list[dict[str, Any]]) -> list[Table]:
    """Current against optimal spend (a bar chart), the allocation, the fitted curves."""
    chart_rows = [{k: r[k] for k in ("unit", "current_spend", "optimal_spend", "change")} for r in rows]
    return [
        Table(
            f"Current vs optimal spend by {' × '.join(request.by)}",
            chart_rows,
            chart="bar",
            x="unit",
            y=["current_spend", "optimal_spend"],
        ),
        Table("Allocation with expected outcome and marginal return", rows),
        Table("Fitted response curves", curves),
    ]
