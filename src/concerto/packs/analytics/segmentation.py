"""`segmentation` (004): group entities into value tiers and by their attributes.

Query types: value tiers (top 20 %, middle 60 %, bottom 20 % of a measure per entity, with
each tier's profile), categorical grouping (counts, totals and shares per category), and
both combined (which category holds the high-value entities).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from concerto.agents.base import AgentInfo
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Kind, Planned, Work
from concerto.packs.analytics.reading import default_measure

TIERS = Kind("value_tiers", "segment entities into value tiers high medium low by percentiles of an amount")
CATEGORIES = Kind("categorical", "group entities by a category like region type or industry with counts and totals")
COMBINED = Kind("combined", "combine two attributes such as region and value tier into segments, concentration")
KINDS = [TIERS, CATEGORIES, COMBINED]
HIGH, LOW = 0.8, 0.2  # tier bounds: the top 20 % and the bottom 20 % of entities


class SegmentationAgent(AnalyticsAgent):
    """Value tiers, categorical groups and their combination, with segment profiles."""

    info = AgentInfo(
        name="segmentation",
        remote="actor",  # CPU-heavy: worth a Ray worker (CONCERTO_EXECUTOR=ray)
        description=(
            "Segments entities (customers, products, accounts) into groups: value tiers by percentiles, "
            "groups by category, and combinations, with each segment's size, share and profile."
        ),
        capabilities=[
            "Segment entities by value tiers (high/medium/low based on percentiles)",
            "Group data by categorical attributes (region, type, category)",
            "Identify natural clusters and groupings in the data",
            "Calculate segment sizes, percentages, and distributions",
            "Provide segment profiles with key characteristics (averages, totals)",
        ],
        inputs={"request": "What to segment", "data_source_id": "Source to analyze", "previous_results": "Optional"},
        outputs={"results": "Segments with sizes and profiles", "insights": "What the segments show"},
        examples=[
            "segment our customers by sales tier",
            "group customers into high, medium and low value",
            "where are our high value customers concentrated?",
            "customer segments by industry",
            "segment the Xs by Y",
            "group them into high, medium and low X",
            "which Y has the most high-X items?",
            "group the X by Y",
            "break the X down by Y",
            "put the X into X tiers",
            "segment the X by their Y",
            "which X has the most high value X?",
        ],
        default_timeout_ms=20000,
    )

    def plan(self, work: Work) -> list[Planned]:
        source, r = work.source, work.reading
        measure = self.measure(work)
        dimension = next(iter(r.dimensions), None) or next(iter(source.columns_with("category")), None)
        chosen = self.choose(work, KINDS)
        if dimension is None:
            chosen = [TIERS]
        elif r.dimensions and not r.measures:  # "segment the wines by cultivar": the groups are the answer
            tiered = TIERS in chosen or COMBINED in chosen  # "which region has the most high value ...?"
            chosen = [COMBINED, CATEGORIES] if tiered else [CATEGORIES]
        elif r.dimensions and TIERS in chosen and COMBINED not in chosen:
            chosen.append(COMBINED)  # "tiers ... by region": the two together
        profile = [m for m in source.columns_with("money", "measure") if m != measure][:3]
        condition = sql.where(r, source)
        plans = []
        for kind in chosen:
            if kind is TIERS:
                plans.append(_tiers(work, measure, profile, condition))
            elif kind is CATEGORIES and dimension:
                plans.append(_categories(work, measure, dimension, condition))
            elif kind is COMBINED and dimension:
                plans.append(_combined(work, measure, dimension, condition))
        return plans

    def extra_output(self, work: Work, executed: list[Executed]) -> dict[str, Any]:
        """The tier bounds, so a later task can break its answer down by the same tiers."""
        for e in executed:
            if e.planned.kind in (TIERS.name,) and e.result is not None and e.result.data:
                row = e.result.data[0]
                measure = work.reading.measure or default_measure(work.source)
                return {
                    "segments": {
                        "source": work.source.name,
                        "measure": measure,
                        "high_bound": row["high_bound"],
                        "low_bound": row["low_bound"],
                    }
                }
        return {}

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        entity = work.source.semantic_profile.entity_name
        measure = work.reading.measure or default_measure(work.source) or "value"
        findings: list[str] = []
        if work.reading.dimensions:  # "which region ...": the grouped answer first
            executed = sorted(executed, key=lambda e: e.planned.kind == TIERS.name)
        for e in executed:
            if e.result is None or not e.result.data:
                continue
            rows = e.result.data
            if e.planned.kind == TIERS.name:
                findings += _tier_findings(rows, entity, measure)
            elif e.planned.kind == CATEGORIES.name:
                findings += _category_findings(rows, entity, measure, e.planned.x or "")
            else:
                findings += _combined_findings(rows, entity, e.planned.purpose.rsplit(" by ", 1)[-1])
        summary = findings[0] if findings else "No segments could be formed from the data."
        return Insights(summary, findings, follow_ups=[f"which {words.plural(entity)} in the High tier are at risk?"])


def entities(work: Work, measure: str, condition: exp.Expr | None, *extra: str) -> exp.Select:
    """One row per entity: `entity`, `value` (the measure rolled up) and `extra` columns."""
    source = work.source
    key = source.semantic_profile.entity_key
    rollup = sql.aggregate(sql.entity_measure(source, measure), measure) if key else sql.col(measure)
    projections: list[exp.Expr] = [exp.alias_(sql.col(key) if key else exp.Literal.number(1), "entity")]
    projections.append(exp.alias_(rollup, "value"))
    for column in extra:
        projections.append(exp.alias_(exp.AnyValue(this=sql.col(column)) if key else sql.col(column), column))
    known = exp.Not(this=exp.Is(this=sql.col(measure), expression=exp.Null()))  # a missing value is no tier
    both = exp.and_(condition, known) if condition is not None else known
    query = sql.select_from(source, *projections).where(both)
    return query.group_by(sql.col(key)) if key else query


def tier_of_entity(work: Work) -> exp.Select:
    """entity → tier ('High', 'Medium', 'Low') by the bounds an earlier segmentation reported."""
    segments = work.segments
    assert segments is not None
    return sql.template(
        """SELECT entity, CASE WHEN value >= p_high THEN 'High' WHEN value >= p_low THEN 'Medium' ELSE 'Low' END AS tier
        FROM p_entities""",
        entities=entities(work, segments.measure, None).subquery("entities"),
        high=exp.Literal.number(segments.high_bound),
        low=exp.Literal.number(segments.low_bound),
    )  # type: ignore[return-value]


def _tiers(work: Work, measure: str, profile: list[str], condition: exp.Expr | None) -> Planned:
    query = sql.template(
        """WITH e AS (SELECT * FROM p_entities),
        b AS (SELECT QUANTILE_CONT(value, p_high) AS high_bound, QUANTILE_CONT(value, p_low) AS low_bound FROM e)
        SELECT CASE WHEN value >= high_bound THEN 'High' WHEN value >= low_bound THEN 'Medium' ELSE 'Low' END AS tier,
          COUNT(*) AS entities, ROUND(100.0 * COUNT(*) / SUM(COUNT(*)) OVER (), 1) AS pct_entities,
          ROUND(AVG(value), 2) AS average, ROUND(SUM(value), 2) AS total,
          ROUND(100.0 * SUM(value) / SUM(SUM(value)) OVER (), 1) AS pct_total,
          MIN(high_bound) AS high_bound, MIN(low_bound) AS low_bound
        FROM e CROSS JOIN b GROUP BY 1 ORDER BY average DESC""",
        entities=_with_profile(work, measure, profile, condition).subquery("entities"),
        high=exp.Literal.number(HIGH),
        low=exp.Literal.number(LOW),
    )
    assert isinstance(query, exp.Select)
    for i, column in enumerate(profile):  # each tier's profile: the other measures' averages
        query = query.select(
            exp.alias_(sql.rounded(exp.Avg(this=exp.column(f"profile_{i}"))), sql.alias(f"avg_{column}"))
        )
    entity = work.source.semantic_profile.entity_name
    return Planned(f"value tiers of {measure} per {entity}", query, "bar", "tier", ["entities"], TIERS.name)


def _with_profile(work: Work, measure: str, profile: list[str], condition: exp.Expr | None) -> exp.Select:
    query = entities(work, measure, condition)
    key = work.source.semantic_profile.entity_key
    for i, column in enumerate(profile):
        rolled = sql.aggregate(sql.entity_measure(work.source, column), column) if key else sql.col(column)
        query = query.select(exp.alias_(rolled, f"profile_{i}"))
    return query


def _categories(work: Work, measure: str, dimension: str, condition: exp.Expr | None) -> Planned:
    query = sql.template(
        """SELECT p_dim, COUNT(*) AS entities, ROUND(SUM(value), 2) AS total, ROUND(AVG(value), 2) AS average,
          ROUND(100.0 * COUNT(*) / SUM(COUNT(*)) OVER (), 1) AS pct_entities,
          ROUND(100.0 * SUM(value) / SUM(SUM(value)) OVER (), 1) AS pct_total
        FROM p_entities GROUP BY p_dim ORDER BY total DESC""",
        dim=exp.column(dimension, quoted=True),
        entities=entities(work, measure, condition, dimension).subquery("e"),
    )
    return Planned(f"groups by {dimension}", query, "bar", dimension, ["total"], CATEGORIES.name)


def _combined(work: Work, measure: str, dimension: str, condition: exp.Expr | None) -> Planned:
    query = sql.template(
        """WITH e AS (SELECT * FROM p_entities),
        b AS (SELECT QUANTILE_CONT(value, p_high) AS high_bound, QUANTILE_CONT(value, p_low) AS low_bound FROM e),
        s AS (SELECT p_dim AS grp,
          CASE WHEN value >= high_bound THEN 'High' WHEN value >= low_bound THEN 'Medium' ELSE 'Low' END AS tier
          FROM e CROSS JOIN b)
        SELECT tier, grp, COUNT(*) AS entities,
          ROUND(100.0 * COUNT(*) / SUM(COUNT(*)) OVER (PARTITION BY tier), 1) AS pct_of_tier
        FROM s GROUP BY tier, grp ORDER BY tier, entities DESC""",
        entities=entities(work, measure, condition, dimension).subquery("entities"),
        dim=exp.column(dimension, quoted=True),
        high=exp.Literal.number(HIGH),
        low=exp.Literal.number(LOW),
    )
    return Planned(f"value tiers by {dimension}", query, "bar", "grp", ["entities"], COMBINED.name)


def _tier_findings(rows: list[dict[str, Any]], entity: str, measure: str) -> list[str]:
    out = []
    for row in rows:
        out.append(
            f"{row['tier']} Value segment contains {row['entities']:,} {words.plural(entity)} "
            f"({row['pct_entities']}%) with average "
            f"{words.label(measure)} of {words.number(row['average'])} and {row['pct_total']}% of the total"
        )
    high = next((r for r in rows if r["tier"] == "High"), None)
    if high:
        out.append(
            f"Tier bounds: High from {words.number(high['high_bound'])}, Low below "
            f"{words.number(high['low_bound'])} (the 80th and 20th percentiles of {words.label(measure)} per {entity})"
        )
    return out


def _category_findings(rows: list[dict[str, Any]], entity: str, measure: str, dimension: str) -> list[str]:
    top = rows[0]
    out = [
        f"{top[dimension]} leads {words.label(dimension)}: {top['entities']:,} {words.plural(entity)} "
        f"({top['pct_entities']}%) "
        f"with {top['pct_total']}% of {words.label(measure)}"
    ]
    gaps = [r for r in rows if float(r["pct_entities"]) - float(r["pct_total"]) >= 5]
    for r in gaps[:2]:
        out.append(
            f"{r[dimension]} has {r['pct_entities']}% of the {words.plural(entity)} but only {r['pct_total']}% of "
            f"{words.label(measure)}"
        )
    out.append(f"{len(rows)} groups: " + ", ".join(f"{r[dimension]} ({r['pct_entities']}%)" for r in rows[:6]))
    return out


def _combined_findings(rows: list[dict[str, Any]], entity: str, dimension: str) -> list[str]:
    high = [r for r in rows if r["tier"] == "High"]
    if not high:
        return []
    top = max(high, key=lambda r: float(r["pct_of_tier"]))
    return [
        f"The {top['grp']} {words.label(dimension)} has the highest concentration of High Value {words.plural(entity)} "
        f"({top['pct_of_tier']}%, {top['entities']} of them)"
    ]
