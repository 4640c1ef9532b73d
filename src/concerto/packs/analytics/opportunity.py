"""`opportunity` (004): high-potential entities and where to grow.

Query types: growth indicators (entities whose measure rose from the earlier periods to
the latest ones), gap analysis (highly engaged entities spending below their peers: upsell
candidates), lookalikes (entities outside the top tier whose profile is closest to the top
tier's), underserved groups (a category's share of entities above its share of the
measure) and a potential score that combines growth, engagement and headroom.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from concerto.agents.base import AgentInfo
from concerto.packs.analytics import sql, words
from concerto.packs.analytics._base import AnalyticsAgent, Executed, Insights, Kind, Planned, Work
from concerto.packs.analytics.segmentation import entities

GROWTH = Kind("growth", "entities with growing or increasing numbers, growth trajectory, momentum")
GAP = Kind("gap", "upsell or cross-sell candidates: highly engaged but low spend, below peers")
LOOKALIKE = Kind("lookalike", "entities similar to the top performers but in a lower tier, lookalikes")
UNDERSERVED = Kind("underserved", "underserved groups or regions with low penetration, expansion targets")
SCORE = Kind("score", "rank opportunities by potential value, who should we focus on, where to invest")
KINDS = [GROWTH, GAP, LOOKALIKE, UNDERSERVED, SCORE]
ENGAGEMENT = "how engaged the customer is, an engagement score"
RECENT = 6  # periods compared: the latest six against the six before


class OpportunityAgent(AnalyticsAgent):
    """Growth, upsell gaps, lookalikes, underserved groups and a potential score."""

    info = AgentInfo(
        name="opportunity",
        description=(
            "Finds growth opportunities in a loaded table: high-potential and growing entities, upsell and "
            "cross-sell candidates, lookalikes of the top performers and underserved groups."
        ),
        capabilities=[
            "Identify high-potential entities showing growth indicators",
            "Find upsell candidates (high engagement, low spend)",
            "Find cross-sell targets among existing accounts",
            "Detect underserved segments with expansion potential",
            "Rank opportunities by potential value",
            "Identify entities similar to top performers",
        ],
        inputs={"request": "What opportunity to find", "data_source_id": "Source", "previous_results": "Optional"},
        outputs={"results": "Candidates with their indicators", "insights": "Where the opportunities are"},
        examples=[
            "which customers are upsell candidates?",
            "where are our growth opportunities?",
            "which region is underserved?",
            "find customers similar to our top performers",
            "who should we focus on to grow revenue?",
            "which ones grew their X the most recently?",
            "which ones have the strongest growth momentum in X?",
            "which ones are gaining momentum in X?",
            "which Y are underserved?",
        ],
        default_timeout_ms=20000,
    )

    async def plan_steps(self, work: Work) -> list[Planned]:
        from concerto.packs.analytics.peers import peer_category

        measure = self.measure(work)
        engagement = self.concept(work, ENGAGEMENT, exclude=(measure,))
        source = work.source
        has_time = source.semantic_profile.time_column is not None
        condition = sql.where(work.reading, source)
        category = next(iter(work.reading.dimensions), None) or next(iter(source.columns_with("category")), None)
        available = [
            k
            for k in KINDS
            if (k is not GROWTH or has_time)
            and (k is not GAP or engagement)
            and (k is not UNDERSERVED or category)
            and (k is not SCORE or has_time)
        ]
        chosen = self.choose(work, available)
        peers = await peer_category(self, work, measure, condition) if GAP in chosen else None
        builders = {
            GROWTH: lambda: _growth(work, measure, condition),
            GAP: lambda: _gap(work, measure, str(engagement), peers, condition),
            LOOKALIKE: lambda: _lookalike(work, measure, condition),
            UNDERSERVED: lambda: _underserved(work, measure, str(category), condition),
            SCORE: lambda: _score(work, measure, engagement, condition),
        }
        return [builders[k]() for k in chosen]

    def insights(self, work: Work, executed: list[Executed]) -> Insights:
        entity = work.source.semantic_profile.entity_name
        measure = words.label(work.reading.measure or self.measure(work))
        findings: list[str] = []
        for e in executed:
            if e.result is None:
                continue
            write = {
                GROWTH.name: _growth_findings,
                GAP.name: _gap_findings,
                LOOKALIKE.name: _lookalike_findings,
                UNDERSERVED.name: _underserved_findings,
                SCORE.name: _score_findings,
            }.get(e.planned.kind)
            if write is None:  # a step of planning (e.g. which category makes peers)
                continue
            findings += write(e.result.data, entity, measure, e.planned)
        summary = findings[0] if findings else "No opportunity could be computed from the data."
        return Insights(summary, findings, follow_ups=[f"which of these {words.plural(entity)} are at risk?"])


def _name(work: Work) -> str:
    return sql.label_column(work.source) or "entity"


def _growth(work: Work, measure: str, condition: exp.Expr | None) -> Planned:
    windows = sql.recent_vs_earlier(work.source, [measure], condition, recent=RECENT, earlier=RECENT)
    query = sql.template(
        """SELECT entity, ROUND(p_recent, 2) AS recent_avg, ROUND(p_earlier, 2) AS earlier_avg,
          ROUND(100.0 * (p_recent - p_earlier) / NULLIF(ABS(p_earlier), 0), 1) AS growth_pct, COUNT(*) OVER () AS n
        FROM p_w WHERE p_earlier > 0 ORDER BY growth_pct DESC LIMIT 20""",
        w=windows.subquery("w"),
        recent=sql.col(f"{measure}_recent"),
        earlier=sql.col(f"{measure}_earlier"),
    )
    assert isinstance(query, exp.Select)
    entity = work.source.semantic_profile.entity_name
    return Planned(
        f"{measure}: latest {RECENT} periods against the {RECENT} before, per {entity}",
        _ordered(sql.labelled(work.source, query), "growth_pct"),
        "bar",
        _name(work),
        ["growth_pct"],
        GROWTH.name,
    )


def _ordered(query: exp.Select, column: str, *, desc: bool = True) -> exp.Select:
    """The labelled query in the order of its inner query (a join does not keep it)."""
    return query.order_by(exp.Ordered(this=exp.column(column), desc=desc))


def _gap(work: Work, measure: str, engagement: str, category: str | None, condition: exp.Expr | None) -> Planned:
    """Engagement in the top quarter, spend below the average of the entity's own category."""
    rolled = entities(work, measure, condition, *([category] if category else []))
    rolled = rolled.select(
        exp.alias_(sql.aggregate(sql.entity_measure(work.source, engagement), engagement), "activity")
    )
    peer = exp.column(category, quoted=True) if category else exp.Literal.string("all")
    query = sql.template(
        """WITH e AS (SELECT *, p_peer AS peer_group FROM p_entities),
        q AS (SELECT QUANTILE_CONT(activity, 0.75) AS activity_p75, COUNT(*) AS n FROM e),
        s AS (SELECT *, AVG(value) OVER (PARTITION BY peer_group) AS peer_average FROM e CROSS JOIN q)
        SELECT entity, peer_group, ROUND(activity, 1) AS activity, ROUND(value, 2) AS value,
          ROUND(peer_average, 2) AS peer_average, ROUND(100.0 * (peer_average - value) / NULLIF(peer_average, 0), 1)
            AS below_peers_pct, ROUND(activity_p75, 1) AS activity_p75, n,
          COUNT(*) OVER () AS candidates
        FROM s WHERE activity >= activity_p75 AND value < peer_average
        ORDER BY activity DESC, below_peers_pct DESC LIMIT 100""",
        entities=rolled.subquery("entities"),
        peer=peer,
    )
    what = (
        f"high {words.label(engagement)} (top quarter), "
        f"{words.label(measure)} below the {category or 'overall'} average"
    )
    assert isinstance(query, exp.Select)
    labelled = _ordered(sql.labelled(work.source, query), "activity")
    return Planned(f"upsell candidates: {what}", labelled, "table", kind=GAP.name)


def _lookalike(work: Work, measure: str, condition: exp.Expr | None) -> Planned:
    """Entities outside the top 20 % nearest (in standard deviations) to the top tier's profile."""
    others = [m for m in work.source.columns_with("money", "measure") if m != measure][:3]
    if not others:
        others = [measure]
    rolled = entities(work, measure, condition)
    for i, m in enumerate(others):
        rolled = rolled.select(exp.alias_(sql.aggregate(sql.entity_measure(work.source, m), m), f"f{i}"))
    z = [f"(f{i} - AVG(f{i}) OVER ()) / NULLIF(STDDEV_SAMP(f{i}) OVER (), 0)" for i in range(len(others))]
    zs = ", ".join(f"{expr} AS z{i}" for i, expr in enumerate(z))
    top_means = ", ".join(f"AVG(z{i}) AS t{i}" for i in range(len(others)))
    distance = " + ".join(f"POW(z{i} - t{i}, 2)" for i in range(len(others)))
    query = sql.template(
        f"""WITH e AS (SELECT *, {zs}, PERCENT_RANK() OVER (ORDER BY value) AS value_rank FROM p_entities),
        t AS (SELECT {top_means} FROM e WHERE value_rank >= 0.8)
        SELECT entity, ROUND(value, 2) AS value, ROUND(100 * value_rank, 1) AS value_percentile,
          ROUND(SQRT({distance}), 3) AS distance_to_top
        FROM e CROSS JOIN t WHERE value_rank < 0.8 ORDER BY distance_to_top LIMIT 12""",
        entities=rolled.subquery("entities"),
    )
    compared = ", ".join(words.label(m) for m in others)
    assert isinstance(query, exp.Select)
    return Planned(
        f"lookalikes of the top 20% by {measure} (profile: {compared})",
        _ordered(sql.labelled(work.source, query), "distance_to_top", desc=False),
        "table",
        kind=LOOKALIKE.name,
    )


def _underserved(work: Work, measure: str, category: str, condition: exp.Expr | None) -> Planned:
    query = sql.template(
        """SELECT * FROM (SELECT p_dim AS grp, COUNT(*) AS entities, ROUND(SUM(value), 2) AS total,
          ROUND(100.0 * COUNT(*) / SUM(COUNT(*)) OVER (), 1) AS pct_entities,
          ROUND(100.0 * SUM(value) / SUM(SUM(value)) OVER (), 1) AS pct_total,
          ROUND(AVG(value), 2) AS average
        FROM p_entities GROUP BY p_dim) AS g ORDER BY pct_total - pct_entities""",
        dim=exp.column(category, quoted=True),
        entities=entities(work, measure, condition, category).subquery("e"),
    )
    return Planned(
        f"share of {words.plural(work.source.semantic_profile.entity_name)} and of {measure} by {category}",
        query,
        "bar",
        "grp",
        ["pct_entities", "pct_total"],
        UNDERSERVED.name,
    )


def _score(work: Work, measure: str, engagement: str | None, condition: exp.Expr | None) -> Planned:
    """Potential: the mean of three percentile ranks — growth, engagement, and headroom (low spend)."""
    measures = [measure] + ([engagement] if engagement else [])
    windows = sql.recent_vs_earlier(work.source, measures, condition, recent=RECENT, earlier=RECENT)
    query = sql.template(
        """WITH g AS (SELECT entity, (p_mr - p_me) / NULLIF(ABS(p_me), 0) AS growth, p_activity AS activity,
            p_mr AS value FROM p_w),
        r AS (SELECT *, PERCENT_RANK() OVER (ORDER BY growth) AS growth_rank,
                PERCENT_RANK() OVER (ORDER BY activity) AS activity_rank,
                1 - PERCENT_RANK() OVER (ORDER BY value) AS headroom_rank FROM g WHERE growth IS NOT NULL)
        SELECT entity, ROUND(100 * growth, 1) AS growth_pct, ROUND(activity, 1) AS activity, ROUND(value, 2) AS value,
          ROUND(100 * (growth_rank + activity_rank + headroom_rank) / 3, 1) AS potential_score
        FROM r ORDER BY potential_score DESC LIMIT 20""",
        w=windows.subquery("w"),
        mr=sql.col(f"{measure}_recent"),
        me=sql.col(f"{measure}_earlier"),
        activity=sql.col(f"{engagement}_recent") if engagement else exp.Literal.number(0),
    )
    assert isinstance(query, exp.Select)
    return Planned(
        "potential score (growth, engagement and headroom percentiles)",
        _ordered(sql.labelled(work.source, query), "potential_score"),
        "bar",
        _name(work),
        ["potential_score"],
        SCORE.name,
    )


def _growth_findings(rows: list[dict[str, Any]], entity: str, measure: str, planned: Planned) -> list[str]:
    growing = [r for r in rows if (r["growth_pct"] or 0) > 0]
    if not growing:
        return [f"No {entity} grew its {measure} over the latest {RECENT} periods."]
    top = growing[0]
    return [
        f"{len(growing)} {words.plural(entity)} show the strongest growth in {measure}: {words.who(top)} leads with "
        f"{top['growth_pct']:+}% (average {words.number(top['recent_avg'])} per period in the latest {RECENT} "
        f"against {words.number(top['earlier_avg'])} before; n = {top['n']:,} {words.plural(entity)} compared)",
        "Fastest growing: " + words.listing([f"{words.who(r)} {r['growth_pct']:+}%" for r in growing], 5),
    ]


def _gap_findings(rows: list[dict[str, Any]], entity: str, measure: str, planned: Planned) -> list[str]:
    if not rows:
        return [f"No {entity} combines top-quarter engagement with below-average {measure}."]
    first = rows[0]
    return [
        f"{first['candidates']} {words.plural(entity)} identified as upsell candidates: high engagement (at least "
        f"{words.number(first['activity_p75'])}, the top quarter), below-average {measure} for their group "
        f"(n = {first['n']:,} {words.plural(entity)})",
        "Most engaged candidates: "
        + words.listing(
            [f"{words.who(r)} ({words.number(r['activity'])}, {r['below_peers_pct']}% below peers)" for r in rows], 5
        ),
    ]


def _lookalike_findings(rows: list[dict[str, Any]], entity: str, measure: str, planned: Planned) -> list[str]:
    if not rows:
        return []
    return [
        f"{len(rows)} {words.plural(entity)} outside the top 20% look most like the top performers "
        f"({planned.purpose.split('(')[-1].rstrip(')')}): "
        + words.listing(
            [f"{words.who(r)} (percentile {r['value_percentile']}, distance {r['distance_to_top']})" for r in rows], 4
        )
    ]


def _underserved_findings(rows: list[dict[str, Any]], entity: str, measure: str, planned: Planned) -> list[str]:
    gaps = [r for r in rows if float(r["pct_entities"]) - float(r["pct_total"]) >= 3]
    out = [
        f"{r['grp']} is underserved: {r['pct_entities']}% of {words.plural(entity)}, "
        f"only {r['pct_total']}% of {measure}"
        for r in gaps[:2]
    ]
    if not out:
        out.append(f"No group's share of {measure} trails its share of {words.plural(entity)} by 3 points or more.")
    out.append(f"{len(rows)} groups compared (share of {words.plural(entity)} against share of {measure}).")
    return out


def _score_findings(rows: list[dict[str, Any]], entity: str, measure: str, planned: Planned) -> list[str]:
    if not rows:
        return []
    top = rows[0]
    return [
        f"Highest potential: {words.who(top)} (score {top['potential_score']} of 100: growth "
        f"{top['growth_pct']:+}%, engagement {words.number(top['activity'])}, {measure} {words.number(top['value'])} "
        "per period)",
        "Next: " + words.listing([f"{words.who(r)} ({r['potential_score']})" for r in rows[1:]], 5),
    ]
