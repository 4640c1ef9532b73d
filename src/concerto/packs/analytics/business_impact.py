"""`business_impact` (004): what-if scenarios and projections from the data's own patterns.

Query types: the baseline (the latest twelve periods: total, entities, average), historical
patterns (period-over-period growth and its spread, year-over-year totals), sensitivity
("what if X rises 10 %": the part of the measure affected, and for prices the elasticity
of quantity to price estimated from the data), projection (a least-squares trend over the
periods, extended with a 95 % prediction interval) and scenarios (losing the top N
entities, or a whole group).

The arithmetic of a scenario is done here, from the numbers the queries return, so every
figure in the answer can be traced to a query in `queries_executed`.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

import numpy as np
from sqlglot import exp

from concerto.agents.base import AgentInfo
from concerto.nlp.numbers import number_words_pattern, word_number
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Kind, Planned, Work
from concerto.packs.analytics.reading import MONTHS_PER, Reading, default_grain

BASELINE = Kind("baseline", "the current baseline: where we stand now, current totals")
HISTORY = Kind("history", "historical patterns of growth and how it varied in the past")
SENSITIVITY = Kind(
    "sensitivity", "what if a number or price changes by some percent, impact of an increase or decrease"
)
PROJECTION = Kind("projection", "projection or forecast if current trends continue, next months or next year")
SCENARIO = Kind("scenario", "scenario of losing our top accounts or a whole group, what would happen without them")
KINDS = [BASELINE, HISTORY, SENSITIVITY, PROJECTION, SCENARIO]
BASE_PERIODS = 12
PRICE = "the price of one unit, what a unit costs"
QUANTITY = "the number of units or items bought, a quantity"

_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*(?:%|percent|per cent|pct)")
_DOWN = re.compile(
    r"\b(decrease|decreases|drop|drops|fall|falls|cut|cuts|lower|reduce|reduced|decline|declines|down|lose|loses|less|"
    r"shrink|shrinks)\b"
)
_AHEAD = re.compile(rf"\b(next|coming|following)\s+(\d+|{number_words_pattern()})?\s*(month|quarter|year|period)s?\b")
_TOP = re.compile(rf"\btop\s+(\d+|{number_words_pattern()})\b")


class BusinessImpactAgent(AnalyticsAgent):
    """Baselines, growth history, sensitivity, projections and loss scenarios."""

    info = AgentInfo(
        name="business_impact",
        description=(
            "Models the business impact of changes in a loaded table: what-if scenarios, price and volume "
            "sensitivity, projections if current trends continue, and the cost of losing key accounts."
        ),
        capabilities=[
            "Model impact of changes (price changes, volume changes)",
            "Project outcomes based on historical patterns",
            "Simulate scenarios with different assumptions",
            "Calculate sensitivity to key variables",
            "Estimate revenue/cost impact of decisions",
        ],
        inputs={"request": "The change or scenario", "data_source_id": "Source", "previous_results": "Optional"},
        outputs={"results": "Baseline and scenario figures", "insights": "The estimated impact"},
        examples=[
            "what if prices increase by 10%?",
            "if current trends continue, what will sales be next quarter?",
            "what would happen if we lost our top 5 customers?",
            "what is the revenue impact of a 20% drop in the West?",
            "project sales for the next 6 months",
            "what would happen to revenue if we lost the South region?",
            "forecast X for the next 3 months",
            "what if X rises 5%?",
        ],
        default_timeout_ms=20000,
    )

    def plan(self, work: Work) -> list[Planned]:
        measure = self.measure(work)
        source = work.source
        has_time = source.semantic_profile.time_column is not None
        text = " ".join(work.request.lower().split())
        available = [k for k in KINDS if has_time or k not in (HISTORY, PROJECTION)]
        chosen = self.choose(work, available)
        if _PERCENT.search(text) and SENSITIVITY not in chosen:
            chosen.insert(0, SENSITIVITY)  # a stated change is the question, whatever else it asks
        plans: list[Planned] = []
        for kind in chosen:
            if kind is BASELINE:
                plans.append(_baseline(work, measure))
            elif kind is HISTORY or kind is PROJECTION:
                plans.append(_series(work, measure, kind))
            elif kind is SENSITIVITY:
                plans += self._sensitivity(work, measure)
            else:
                plans.append(_scenario(work, measure, text))
        return plans

    def _sensitivity(self, work: Work, measure: str) -> list[Planned]:
        plans = [_scope(work, measure, SENSITIVITY)]
        price_words = [t for t in work.reading.unknown_terms if self._means_price(t)]
        quantity = self.concept(work, QUANTITY, exclude=(measure,), floor=0.4) if price_words else None
        if quantity and work.source.detected_types[measure].role == "money":
            plans.append(_elasticity(work, measure, quantity))
        return plans

    def _means_price(self, term: str) -> bool:
        vectors = self.resources.embedder.embed([term, PRICE])
        return float(vectors[0] @ vectors[1]) >= 0.5

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        measure = words.label(work.reading.measure or self.measure(work))
        entity = work.source.semantic_profile.entity_name
        text = " ".join(work.request.lower().split())
        results = {e.planned.purpose: e.result.data for e in executed if e.result is not None}
        findings: list[str] = []
        for e in executed:
            if e.result is None:
                continue
            rows = e.result.data
            if e.planned.kind == SENSITIVITY.name and "elasticity" not in e.planned.purpose:
                elasticity = next((r for p, r in results.items() if "elasticity" in p), None)
                findings += _sensitivity_findings(rows, measure, text, elasticity, work.reading)
            elif e.planned.kind == PROJECTION.name:
                grain = work.reading.grain or default_grain(work.source)
                periods = max(1, round(_ahead(text) / MONTHS_PER[grain]))
                findings += _projection_findings(rows, measure, periods, grain)
            elif e.planned.kind == HISTORY.name:
                findings += _history_findings(rows, measure)
            elif e.planned.kind == BASELINE.name:
                findings += _baseline_findings(rows, measure, entity)
            elif e.planned.kind == SCENARIO.name:
                findings += _scenario_findings(rows, measure, entity, e.planned.purpose)
        summary = findings[0] if findings else "No impact could be computed from the data."
        return Insights(summary, findings, follow_ups=[f"which {words.plural(entity)} drive most of the {measure}?"])


def _latest(work: Work) -> exp.Expr | None:
    """The latest BASE_PERIODS months of the data (the baseline a change applies to)."""
    column = work.source.semantic_profile.time_column
    if column is None or work.reading.period is not None:
        return None
    latest = work.source.detected_types[column].max
    if latest is None:
        return None
    from concerto.packs.analytics.reading import add_months, as_date

    end = as_date(latest)
    if end is None:
        return None
    start = add_months(end.replace(day=1), -(BASE_PERIODS - 1))
    return exp.GTE(this=sql.col(column), expression=sql.literal(start))


def _and(*conditions: exp.Expr | None) -> exp.Expr | None:
    found = [c for c in conditions if c is not None]
    if not found:
        return None
    out = found[0]
    for more in found[1:]:
        out = exp.and_(out, more)
    return out


def _baseline(work: Work, measure: str) -> Planned:
    key = work.source.semantic_profile.entity_key
    entities = exp.Count(this=exp.Distinct(expressions=[sql.col(key)])) if key else exp.Count(this=exp.Star())
    query = sql.select_from(
        work.source,
        exp.alias_(sql.rounded(exp.Sum(this=sql.col(measure))), "total"),
        exp.alias_(entities, "entities"),
        exp.alias_(sql.rounded(exp.Avg(this=sql.col(measure))), "average_per_row"),
        exp.alias_(exp.Count(this=exp.Star()), "rows"),
    )
    query = sql.filtered(query, _and(sql.where(work.reading, work.source), _latest(work)))
    return Planned(f"baseline {measure}", query, "table", kind=BASELINE.name)


def _series(work: Work, measure: str, kind: Kind) -> Planned:
    column = work.source.semantic_profile.time_column
    assert column is not None
    grain = work.reading.grain or default_grain(work.source)
    period = sql.bucket(column, grain)
    rollup = exp.Sum(this=sql.col(measure)) if sql.additive(work.source, measure) else exp.Avg(this=sql.col(measure))
    query = sql.select_from(work.source, exp.alias_(period, "period"), exp.alias_(sql.rounded(rollup), "value"))
    query = sql.filtered(query, sql.where(work.reading, work.source)).group_by(period.copy()).order_by(period.copy())
    what = "projection basis" if kind is PROJECTION else "history"
    return Planned(f"{measure} per {grain} ({what})", query, "line", "period", ["value"], kind.name)


def _scope(work: Work, measure: str, kind: Kind) -> Planned:
    """The measure over the baseline, overall and within the question's filters (the part affected)."""
    inside = sql.where(Reading(filters=work.reading.filters), work.source)
    in_scope = (
        exp.Sum(this=exp.Case(ifs=[exp.If(this=inside, true=sql.col(measure))]))
        if inside
        else exp.Sum(this=sql.col(measure))
    )
    query = sql.select_from(
        work.source,
        exp.alias_(sql.rounded(exp.Sum(this=sql.col(measure))), "total"),
        exp.alias_(sql.rounded(in_scope), "affected"),
        exp.alias_(exp.Count(this=exp.Star()), "rows"),
    )
    period = (
        sql.period_condition(str(work.source.semantic_profile.time_column), work.reading.period)
        if work.reading.period and work.source.semantic_profile.time_column
        else None
    )
    query = sql.filtered(query, _and(period, _latest(work)))
    scope = "; ".join(f"{f.column} {words.listing([str(v) for v in f.values])}" for f in work.reading.filters)
    return Planned(f"{measure} affected by the change{f' ({scope})' if scope else ''}", query, "table", kind=kind.name)


def _elasticity(work: Work, money: str, quantity: str) -> Planned:
    """Log-log slope of quantity on unit price (money / quantity) over entity-periods: the price elasticity."""
    query = sql.template(
        """SELECT REGR_SLOPE(LN(p_q), LN(p_m / p_q)) AS elasticity, REGR_R2(LN(p_q), LN(p_m / p_q)) AS r2,
          COUNT(*) AS n FROM p_t WHERE p_q > 0 AND p_m > 0""",
        q=sql.col(quantity),
        m=sql.col(money),
        t=sql.table(work.source),
    )
    return Planned(
        f"price elasticity of {quantity} (price = {money} / {quantity})", query, "table", kind=SENSITIVITY.name
    )


def _scenario(work: Work, measure: str, text: str) -> Planned:
    """The share of the measure held by the top N entities (or by the question's group)."""
    from concerto.packs.analytics.segmentation import entities

    if work.reading.filters:
        planned = _scope(work, measure, SCENARIO)
        planned.purpose = "losing " + planned.purpose.split("(", 1)[-1].rstrip(")")
        return planned
    n = _top(text)
    query = sql.template(
        """WITH e AS (SELECT *, ROW_NUMBER() OVER (ORDER BY value DESC) AS place FROM p_entities)
        SELECT ROUND(SUM(CASE WHEN place <= p_n THEN value ELSE 0 END), 2) AS affected, ROUND(SUM(value), 2) AS total,
          COUNT(*) AS entities FROM e""",
        entities=entities(work, measure, _and(sql.where(work.reading, work.source), _latest(work))).subquery("e"),
        n=exp.Literal.number(n),
    )
    return Planned(
        f"losing the top {n} {words.plural(work.source.semantic_profile.entity_name)}",
        query,
        "table",
        kind=SCENARIO.name,
    )


def _top(text: str) -> int:
    m = _TOP.search(text)
    if not m:
        return 5
    token = m.group(1)
    return int(token) if token.isdigit() else word_number(token) or 5


def _ahead(text: str) -> int:
    """How many months ahead the question looks ("next quarter" = 3); three by default."""
    m = _AHEAD.search(text)
    if not m:
        return 3
    count = int(m.group(2)) if m.group(2) and m.group(2).isdigit() else (word_number(m.group(2)) if m.group(2) else 1)
    return (count or 1) * {"month": 1, "period": 1, "quarter": 3, "year": 12}[m.group(3)]


def _change(text: str) -> float | None:
    m = _PERCENT.search(text)
    if not m:
        return None
    size = float(m.group(1)) / 100
    return -size if _DOWN.search(text) else size


def _sensitivity_findings(
    rows: list[dict[str, Any]], measure: str, text: str, elasticity: list[dict[str, Any]] | None, reading: Reading
) -> list[str]:
    change = _change(text)
    if not rows or change is None:
        return ["Say by how much it changes (e.g. 'what if sales in the West drop 20%?') to model the impact."]
    total, affected = float(rows[0]["total"] or 0), float(rows[0]["affected"] or 0)
    base = f"the latest {BASE_PERIODS} periods" if reading.period is None else reading.period.text
    if elasticity and elasticity[0].get("elasticity") is not None:
        e = float(elasticity[0]["elasticity"])
        revenue = (1 + change) ** (1 + e) - 1
        impact = affected * revenue
        return [
            f"A {change:+.0%} price change could change {measure} by {words.number(impact)} ({revenue:+.1%}) based on "
            f"historical elasticity {e:.2f} (log-log slope of quantity on price, "
            f"R² {float(elasticity[0]['r2'] or 0):.2f}, "
            f"n = {elasticity[0]['n']:,}; baseline {words.number(affected)} over {base})",
            "Elasticity below -1 means revenue falls when prices rise; above -1, it rises.",
        ]
    impact = affected * change
    return [
        f"A {change:+.0%} change would move {measure} by {words.number(impact)}: "
        f"{words.percent(abs(impact), total)} of "
        f"the total {words.number(total)} over {base} (the part affected: {words.number(affected)})"
    ]


def _projection_findings(rows: list[dict[str, Any]], measure: str, ahead: int, grain: str) -> list[str]:
    values = np.array([float(r["value"] or 0) for r in rows])
    n = len(values)
    if n < 4:
        return [f"Only {n} periods of {measure}: too few to project."]
    steps = np.arange(n, dtype=float)
    slope, intercept = np.polyfit(steps, values, 1)
    residual = values - (slope * steps + intercept)
    se = math.sqrt(float(residual @ residual) / (n - 2))
    from scipy import stats

    t = float(stats.t.ppf(0.975, n - 2))
    future = np.arange(n, n + ahead, dtype=float)
    centre = slope * future + intercept
    spread = t * se * np.sqrt(1 + 1 / n + (future - steps.mean()) ** 2 / float(((steps - steps.mean()) ** 2).sum()))
    projected = float(centre.sum())
    half = float(math.sqrt(float((spread**2).sum())))
    recent = float(values[-ahead:].sum())
    return [
        f"If current trends continue, {measure} over the next {ahead} {grain}{'s' if ahead > 1 else ''} is "
        f"projected at {words.number(projected)} "
        f"({words.change(recent, projected)} against the latest {ahead}; 95% interval ±{words.number(half)}; "
        f"least-squares trend {words.number(slope)} per period over n = {n} periods)",
        f"Next period: {words.number(float(centre[0]))} (±{words.number(float(spread[0]))})",
    ]


def _history_findings(rows: list[dict[str, Any]], measure: str) -> list[str]:
    values = [float(r["value"] or 0) for r in rows]
    changes = [(b - a) / abs(a) for a, b in itertools.pairwise(values) if a]
    if not changes:
        return []
    mean, sd = float(np.mean(changes)), float(np.std(changes, ddof=1)) if len(changes) > 1 else 0.0
    worst = min(range(len(changes)), key=changes.__getitem__)
    return [
        f"{measure.capitalize()} changed {mean:+.1%} per period on average (standard deviation {sd:.1%}, "
        f"n = {len(changes)} changes); the largest drop was {changes[worst]:+.1%} in {rows[worst + 1]['period']}"
    ]


def _baseline_findings(rows: list[dict[str, Any]], measure: str, entity: str) -> list[str]:
    if not rows:
        return []
    r = rows[0]
    return [
        f"Baseline: {measure} {words.number(r['total'])} over the latest {BASE_PERIODS} periods from "
        f"{r['entities']:,} {words.plural(entity)} ({r['rows']:,} rows)"
    ]


def _scenario_findings(rows: list[dict[str, Any]], measure: str, entity: str, purpose: str) -> list[str]:
    if not rows:
        return []
    total, affected = float(rows[0]["total"] or 0), float(rows[0]["affected"] or 0)
    return [
        f"{purpose[0].upper() + purpose[1:]} would reduce {measure} by {words.percent(affected, total)} "
        f"({words.number(affected)} of {words.number(total)} over the latest {BASE_PERIODS} periods)"
    ]
