"""`resource_optimizer` (001): a promotion budget allocated across channels or territories
over fitted response curves with diminishing returns, at equal marginal return where the
bounds allow, never below the current allocation on those curves.

`reading` reads the units, budget, bounds and locks; the curves, the water-filling and the
KKT check are in `methods.response_curves`; `plan` puts the bounds on the units and finds the
plan with its bootstrap; `wording` says it.
"""

from __future__ import annotations

from concerto.agents.base import AgentInfo, Unanswered
from concerto.packs.commercial.base import data
from concerto.packs.commercial.base.agent import Answer, CommercialAgent, Work
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.methods import response_curves
from concerto.packs.commercial.resource_optimizer import wording
from concerto.packs.commercial.resource_optimizer.plan import optimise
from concerto.packs.commercial.resource_optimizer.reading import measure_of, read_request
from concerto.packs.commercial.resource_optimizer.wording import for_brand

CURRENT_MONTHS = 12  # the current allocation: mean monthly spend over the latest 12 months
MIN_ROWS = 8


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
            "source": "The table to analyze (default: the built-in commercial data set)",
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
        spend = measure_of(work, "spend", "spend", ("money",))
        outcome = measure_of(work, "outcome", "new_rx", ("measure",), exclude=spend)
        grain = list(dict.fromkeys([*request.by, *(c for c in ("territory", "channel") if c in source.columns)]))
        time = source.semantic_profile.time_column
        time = time if time in source.columns and time not in grain else None
        frame = work.frame([*grain, spend, outcome, *([time] if time else [])])
        if len(frame) < MIN_ROWS:
            raise invalid(
                f"only {len(frame)} rows{for_brand(work)}: too few to fit response curves",
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
        answer = wording.answer(work, request, fitted, optimise(work, request, fitted), (spend, outcome))
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
