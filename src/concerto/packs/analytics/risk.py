"""`risk` (004): at-risk entities and warning signs, before they become losses.

Query types: decline detection (the measure in the latest periods against the periods
before), warning signs (engagement below average while problems such as support tickets
rise), a risk score (the mean of the standardised changes of value, engagement and
problems), churn indicators (entities active before and silent in the latest period) and
the high-value entities that need attention now.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlglot import exp

from concerto.agents.base import AgentFailure, AgentInfo
from concerto.contracts.common import ErrorKind
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Kind, Planned, Work
from concerto.packs.analytics.reading import default_measure

DECLINE = Kind("decline", "entities with declining or dropping numbers, decreasing over recent months")
WARNING = Kind("warning", "warning signs and red flags: below-average engagement, rising problems or complaints")
SCORE = Kind("score", "which entities are at risk, risk scores combining several risk factors")
CHURN = Kind("churn", "churn: entities we might lose or have lost, who stopped buying, went inactive")
ATTENTION = Kind("attention", "high-value accounts needing immediate attention or intervention, what is concerning")
KINDS = [DECLINE, WARNING, SCORE, CHURN, ATTENTION]
ENGAGEMENT = "how engaged the customer is, an engagement score"
PROBLEMS = "problems, complaints or support requests raised by the customer"
RECENT, EARLIER = 3, 6  # the latest three periods against the six before
AT_RISK = 1.0  # risk score (mean standardised change) from which an entity is flagged


class RiskAgent(AnalyticsAgent):
    """Declines, warning signs, risk scores, churn and accounts needing attention."""

    info = AgentInfo(
        name="risk",
        description=(
            "Finds at-risk entities and warning signs in a loaded table: declining activity or value, "
            "rising problems, churn, risk scores and the high-value accounts that need attention."
        ),
        capabilities=[
            "Identify at-risk entities showing decline indicators",
            "Detect warning signs (declining engagement, reduced activity)",
            "Flag entities with concerning patterns",
            "Calculate risk scores based on multiple factors",
            "Identify entities needing immediate attention",
        ],
        inputs={"request": "What risk to look for", "data_source_id": "Source", "previous_results": "Optional"},
        outputs={"results": "Flagged entities with their risk factors", "insights": "Where the risk is"},
        examples=[
            "which customers are at risk?",
            "who might we lose?",
            "show warning signs in customer engagement",
            "which high-value accounts need attention?",
            "which customers are declining?",
            "which ones had the steepest X decline recently?",
            "which ones are at risk of falling X?",
            "which ones are losing X fastest?",
        ],
        default_timeout_ms=20000,
    )

    def plan(self, work: Work) -> list[Planned]:
        source = work.source
        named = work.reading.measure
        money = named if named and source.detected_types[named].role == "money" else None
        value = money or default_measure(source) or self.measure(work)  # the last raises "no measure"
        activity = named if named and named != value else self.concept(work, ENGAGEMENT, exclude=(value,))
        problems = self.concept(work, PROBLEMS, exclude=tuple(filter(None, (value, activity))), floor=0.4)
        factors = Factors(value, activity, problems)
        condition = sql.where(work.reading, source)
        if source.semantic_profile.time_column is None:
            if activity is None:
                raise AgentFailure(
                    f"The source '{source.name}' has no date column to see declines in, and no engagement "
                    "measure to compare; risk needs one of them.",
                    error_type="no_time_column",
                    kind=ErrorKind.VALIDATION,
                )
            return [_warning_levels(work, factors, condition)]
        available = [k for k in KINDS if k is not WARNING or activity]
        builders = {
            DECLINE: _decline,
            WARNING: _warning,
            SCORE: _score,
            CHURN: _churn,
            ATTENTION: _attention,
        }
        chosen = self.choose(work, available)
        if CHURN in chosen and SCORE not in chosen:  # no record of past losses: the risk score is the indicator
            chosen.append(SCORE)
        return [builders[k](work, factors, condition) for k in chosen]

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        entity = work.source.semantic_profile.entity_name
        findings: list[str] = []
        for e in sorted(executed, key=lambda e: not (e.result and e.result.data)):  # what was found first
            if e.result is None:
                continue
            write = {
                DECLINE.name: _decline_findings,
                WARNING.name: _warning_findings,
                SCORE.name: _score_findings,
                CHURN.name: _churn_findings,
                ATTENTION.name: _attention_findings,
            }.get(e.planned.kind)
            if write is None:  # a step of planning (e.g. which category makes peers)
                continue
            findings += write(e.result.data, entity, e.planned)
            findings += _concentration(e.result.data, _category(work), e.planned)
        summary = findings[0] if findings else "No risk indicator could be computed from the data."
        return Insights(
            summary, findings, follow_ups=[f"which of the at-risk {words.plural(entity)} are upsell candidates?"]
        )


class Factors:
    """The measures risk reads: the value, an engagement measure and a problem count (each optional but value)."""

    def __init__(self, value: str, activity: str | None, problems: str | None) -> None:
        self.value, self.activity, self.problems = value, activity, problems

    @property
    def measures(self) -> list[str]:
        return [m for m in (self.value, self.activity, self.problems) if m]

    def describe(self) -> str:
        parts = [f"{words.label(self.value)} change"]
        if self.activity:
            parts.append(f"{words.label(self.activity)} change")
        if self.problems:
            parts.append(f"{words.label(self.problems)} rise")
        return ", ".join(parts)


def _category(work: Work) -> list[str]:
    """The categories flagged entities are described by: the question's, else the source's first three."""
    named = [d for d in work.reading.dimensions if work.source.detected_types[d].role == "category"]
    return named[:1] or work.source.columns_with("category")[:3]


def _changes(work: Work, f: Factors, condition: exp.Expr | None) -> exp.Query:
    """Per entity: relative change of value and activity, absolute change of problems per period,
    each standardised across entities, and their mean as the risk score."""

    def recent(m: str | None) -> exp.Expr:
        return sql.col(f"{m}_recent") if m else exp.Literal.number(0)

    def earlier(m: str | None) -> exp.Expr:
        return sql.col(f"{m}_earlier") if m else exp.Literal.number(0)

    count = 1 + bool(f.activity) + bool(f.problems)
    return sql.template(
        """WITH c AS (SELECT entity, p_vr AS value_recent,
            (p_vr - p_ve) / NULLIF(ABS(p_ve), 0) AS value_change,
            (p_ar - p_ae) / NULLIF(ABS(p_ae), 0) AS activity_change,
            p_pr - p_pe AS problems_change, p_ar AS activity_recent, p_pr AS problems_recent
          FROM p_w WHERE p_ve IS NOT NULL),
        z AS (SELECT *,
            COALESCE((value_change - AVG(value_change) OVER ())
              / NULLIF(STDDEV_SAMP(value_change) OVER (), 0), 0) AS zv,
            COALESCE((activity_change - AVG(activity_change) OVER ())
              / NULLIF(STDDEV_SAMP(activity_change) OVER (), 0), 0) AS za,
            COALESCE((problems_change - AVG(problems_change) OVER ())
              / NULLIF(STDDEV_SAMP(problems_change) OVER (), 0), 0) AS zp,
            AVG(activity_recent) OVER () AS activity_average,
            PERCENT_RANK() OVER (ORDER BY value_recent) AS value_rank, COUNT(*) OVER () AS n FROM c)
        SELECT entity, ROUND(value_recent, 2) AS value_recent, ROUND(100 * value_change, 1) AS value_change_pct,
          ROUND(activity_recent, 1) AS activity_recent, ROUND(100 * activity_change, 1) AS activity_change_pct,
          ROUND(problems_recent, 1) AS problems_recent, ROUND(problems_change, 1) AS problems_change,
          ROUND((zp - zv - za) / p_k, 2) AS risk_score, ROUND(100 * value_rank, 1) AS value_percentile,
          ROUND(activity_average, 1) AS activity_average, n
        FROM z""",
        w=sql.recent_vs_earlier(work.source, f.measures, condition, recent=RECENT, earlier=EARLIER).subquery("w"),
        vr=recent(f.value),
        ve=earlier(f.value),
        ar=recent(f.activity),
        ae=earlier(f.activity),
        pr=recent(f.problems),
        pe=earlier(f.problems),
        k=exp.Literal.number(count),
    )


def _scored(work: Work, f: Factors, condition: exp.Expr | None, where: str, order: str) -> exp.Select:
    """The per-entity changes filtered and ordered (`where` and `order` are this module's own SQL)."""
    query = sql.template(
        f"SELECT * FROM p_changes WHERE {where} ORDER BY {order} LIMIT 200",
        changes=_changes(work, f, condition).subquery("s"),
    )
    assert isinstance(query, exp.Select)
    labelled = sql.labelled(work.source, query, *_category(work))
    column, _, direction = order.partition(" ")
    return labelled.order_by(exp.Ordered(this=exp.column(column), desc=direction.upper() == "DESC"))


def _score(work: Work, f: Factors, condition: exp.Expr | None) -> Planned:
    query = _scored(work, f, condition, f"risk_score >= {AT_RISK}", "risk_score DESC")
    return Planned(
        f"risk score per {work.source.semantic_profile.entity_name} "
        f"({f.describe()}; latest {RECENT} periods against the {EARLIER} before)",
        query,
        "bar",
        "entity",
        ["risk_score"],
        SCORE.name,
    )


def _decline(work: Work, f: Factors, condition: exp.Expr | None) -> Planned:
    column = "activity_change_pct" if f.activity and work.reading.measure == f.activity else "value_change_pct"
    query = _scored(work, f, condition, f"{column} < 0", f"{column} ASC")
    measure = f.activity if column.startswith("activity") else f.value
    return Planned(
        f"{measure} down, steepest first (latest {RECENT} periods against the {EARLIER} before)",
        query,
        "bar",
        "entity",
        [column],
        DECLINE.name,
    )


def _warning(work: Work, f: Factors, condition: exp.Expr | None) -> Planned:
    rising = "problems_change > 0" if f.problems else "activity_change_pct < 0"
    query = _scored(work, f, condition, f"activity_recent < activity_average AND {rising}", "risk_score DESC")
    signs = f"rising {words.label(f.problems)}" if f.problems else "falling engagement"
    return Planned(f"below-average {words.label(str(f.activity))} with {signs}", query, "table", kind=WARNING.name)


def _warning_levels(work: Work, f: Factors, condition: exp.Expr | None) -> Planned:
    """Without dates: entities whose engagement is in the bottom quarter (and problems in the top one)."""
    assert f.activity is not None
    from concerto.packs.analytics.segmentation import entities

    rolled = entities(work, f.value, condition, *_category(work))
    rolled = rolled.select(
        exp.alias_(sql.aggregate(sql.entity_measure(work.source, f.activity), f.activity), "activity")
    )
    query = sql.template(
        """WITH e AS (SELECT * FROM p_entities),
        q AS (SELECT QUANTILE_CONT(activity, 0.25) AS low, COUNT(*) AS n FROM e)
        SELECT e.*, ROUND(q.low, 2) AS activity_p25, q.n FROM e CROSS JOIN q WHERE activity <= low ORDER BY activity""",
        entities=rolled.subquery("entities"),
    )
    assert isinstance(query, exp.Select)
    return Planned(f"{f.activity} in the bottom quarter", sql.labelled(work.source, query), "table", kind=WARNING.name)


def _churn(work: Work, f: Factors, condition: exp.Expr | None) -> Planned:
    query = sql.template(
        """WITH p AS (SELECT * FROM p_panel), last AS (SELECT MAX(period) AS latest FROM p),
        a AS (SELECT entity, MAX(period) AS last_active, SUM(CASE WHEN period = latest THEN p_v ELSE 0 END) AS now,
            AVG(p_v) AS usual, COUNT(*) AS periods FROM p CROSS JOIN last GROUP BY entity)
        SELECT entity, last_active, ROUND(usual, 2) AS usual_per_period, ROUND(now, 2) AS latest_period, periods,
          (SELECT COUNT(DISTINCT entity) FROM p) AS n
        FROM a CROSS JOIN last WHERE last_active < latest OR (now <= 0 AND usual > 0) ORDER BY usual DESC LIMIT 200""",
        panel=sql.panel(work.source, [f.value], condition).subquery("panel"),
        v=sql.col(f.value),
    )
    assert isinstance(query, exp.Select)
    labelled = sql.labelled(work.source, query, *_category(work))
    return Planned(
        f"{words.plural(work.source.semantic_profile.entity_name)} with no {f.value} in the latest period",
        labelled.order_by(exp.Ordered(this=exp.column("usual_per_period"), desc=True)),
        "table",
        kind=CHURN.name,
    )


def _attention(work: Work, f: Factors, condition: exp.Expr | None) -> Planned:
    query = _scored(work, f, condition, f"risk_score >= {AT_RISK / 2} AND value_percentile >= 80", "value_recent DESC")
    return Planned(
        f"high-value {words.plural(work.source.semantic_profile.entity_name)} (top 20% by {f.value}) "
        "with a rising risk score",
        query,
        "table",
        kind=ATTENTION.name,
    )


def _worst_change(row: dict[str, Any]) -> str:
    parts = []
    if row.get("activity_change_pct") is not None and row["activity_change_pct"] < 0:
        parts.append(f"activity {row['activity_change_pct']}%")
    if row.get("value_change_pct") is not None and row["value_change_pct"] < 0:
        parts.append(f"value {row['value_change_pct']}%")
    if row.get("problems_change") and row["problems_change"] > 0:
        parts.append(f"problems +{row['problems_change']} per period")
    return ", ".join(parts) or f"risk score {row.get('risk_score')}"


def _concentration(rows: list[dict[str, Any]], categories: list[str], planned: Planned) -> list[str]:
    """The category value holding the largest share of the flagged entities (computed from the rows)."""
    if len(rows) < 3:
        return []
    best: tuple[float, str, str, int] | None = None
    for column in (c for c in categories if c in rows[0]):
        counts: dict[str, int] = defaultdict(int)
        for r in rows:
            counts[str(r[column])] += 1
        top = max(counts, key=lambda k: counts[k])
        share = counts[top] / len(rows)
        if best is None or share > best[0]:
            best = (share, column, top, counts[top])
    if best is None:
        return []
    share, column, top, count = best
    return [
        f"Risk concentration: {100 * share:.0f}% of the flagged are in the {top} {words.label(column)} "
        f"({count} of {len(rows)})"
    ]


def _score_findings(rows: list[dict[str, Any]], entity: str, planned: Planned) -> list[str]:
    if not rows:
        return [f"No {entity} has a risk score of {AT_RISK} or more."]
    first = rows[0]
    out = [
        f"{len(rows)} {words.plural(entity)} flagged as at-risk (risk score ≥ {AT_RISK}: the mean standardised "
        f"{planned.purpose.split('(')[1].split(';')[0]}, n = {first['n']:,} {words.plural(entity)})",
        f"Highest risk: {words.who(first)} (score {first['risk_score']}: {_worst_change(first)})",
    ]
    return out


def _decline_findings(rows: list[dict[str, Any]], entity: str, planned: Planned) -> list[str]:
    column = planned.y[0]
    if not rows:
        return [f"No {entity} declined ({planned.purpose})."]
    worst = rows[0]
    sharp = sum(1 for r in rows if (r[column] or 0) <= -20)
    return [
        f"{len(rows)} {words.plural(entity)} declining, {sharp} of them by 20% or more: {planned.purpose} "
        f"(n = {worst['n']:,} {words.plural(entity)})",
        f"Steepest decline: {words.who(worst)} ({worst[column]}%)",
    ]


def _warning_findings(rows: list[dict[str, Any]], entity: str, planned: Planned) -> list[str]:
    if not rows:
        return [f"No {entity} shows the warning signs ({planned.purpose})."]
    return [
        f"{len(rows)} {words.plural(entity)} show warning signs: {planned.purpose}",
        "Most concerning: " + words.listing([f"{words.who(r)} ({_worst_change(r)})" for r in rows], 4),
    ]


def _churn_findings(rows: list[dict[str, Any]], entity: str, planned: Planned) -> list[str]:
    if not rows:
        return [f"No {entity} stopped: every {entity} active before is active in the latest period."]
    return [
        f"{len(rows)} {words.plural(entity)} were active before but not in the latest period (of {rows[0]['n']:,})",
        "Largest lost: "
        + words.listing([f"{words.who(r)} (usually {words.number(r['usual_per_period'])})" for r in rows], 4),
    ]


def _attention_findings(rows: list[dict[str, Any]], entity: str, planned: Planned) -> list[str]:
    if not rows:
        return [f"No high-value {entity} shows a rising risk."]
    return [f"High-value account {words.who(r)} shows {_worst_change(r)} - needs attention" for r in rows[:3]] + [
        f"{len(rows)} high-value {words.plural(entity)} (top 20%) have a risk score of {AT_RISK / 2} or more"
    ]
